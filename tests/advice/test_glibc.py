"""doctor on a compiled extension needing a newer glibc than the system's (patcher/advice/
glibc.py), against the glibc each vLLM release's extensions need (the catalogue's ``glibc``,
read from every .so of each wheel by tools/read_model_classes.py)."""

from __future__ import annotations

from patcher.advice.catalogue import feature_releases, features_of, version_key
from patcher.advice.doctor import diagnose_text

# One line per rule (test_doctor's marker test takes them with its own cases).
GLIBC_LINES = [
    "ImportError: /lib64/libc.so.6: version `GLIBC_2.32' not found (required by "
    "/venv/lib/python3.11/site-packages/vllm/_C.abi3.so)"
]


def _needs(release: str) -> tuple[int, ...]:
    (newest,) = [
        g for g in features_of("vllm", "glibc") if release in feature_releases("vllm", "glibc", g)
    ]
    return version_key(newest)


def test_the_release_named_needs_an_older_glibc_than_the_one_missing() -> None:
    log = (
        "INFO 07-19 14:45:50 api_server.py:212] vLLM API server version 0.5.2\n"
        "WARNING 07-19 14:45:53 _custom_ops.py:14] Failed to import from vllm._C with "
        f"{GLIBC_LINES[0]}\n"
    )
    found = diagnose_text(log)
    assert found.code == "glibc-too-old"
    assert "glibc is 2.32 or newer" in found.fixes[0].text  # the system first
    named = found.fixes[1].text.removeprefix("pip install 'vllm==").rstrip("'")
    assert version_key(named) > (0, 5, 2)  # a later release than the log's, not a downgrade
    assert _needs(named) < (2, 32)


def test_without_the_release_every_run_of_releases_needing_less_is_listed() -> None:
    found = diagnose_text(GLIBC_LINES[0] + "\n")
    assert found.code == "glibc-too-old"
    listed = found.fixes[1].text
    for release in ("0.4.3", "0.21.0"):
        assert release in listed and _needs(release) < (2, 32)
    assert "0.20.0" not in listed  # it needs 2.34, read from its wheel


def test_another_package_s_extension_gets_the_system_only() -> None:
    found = diagnose_text(
        "ImportError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.32' not found "
        "(required by /venv/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310.so)\n"
    )
    assert found.code == "glibc-too-old"
    assert [f.kind for f in found.fixes] == ["advice"]
