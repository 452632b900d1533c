"""doctor on FlashAttention called with a keyword its installed release lacks
(patcher/advice/flash_attn_keywords.py), held to the distributions' own tags and vLLM's wheels
(snapshots/engines/flash-attn-keywords.txt)."""

from __future__ import annotations

from pathlib import Path

import pytest

from patcher.advice import flash_attn_keywords as keywords
from patcher.advice.doctor import diagnose_text
from tests.conftest import SNAPSHOTS, snapshot_section, wheel_of
from tools.read_flash_attn_keywords import imported_from, signatures

READING = (SNAPSHOTS / "engines" / "flash-attn-keywords.txt").read_text()
_ERROR = "TypeError: {0}() got an unexpected keyword argument '{1}'"
# One line per rule (test_doctor's marker test takes them with its own cases).
FLASH_ATTN_LINES = [_ERROR.format("flash_attn_varlen_func", "softcap")]


def _section(title: str) -> list[list[str]]:
    return snapshot_section(READING, title + "\t")


def _taking(distribution: str, function: str, keyword: str) -> list[str]:
    """The releases the snapshot shows ``function`` of ``distribution`` taking ``keyword``."""
    return [
        release
        for release, name, params in _section(distribution)
        if name == function and keyword in params.split()
    ]


def _log(version: str | None, error: str, prefix: str = "[rank0]: ") -> str:
    head = (
        f"INFO 07-16 16:19:50 llm_engine.py:174] Initializing an LLM engine (v{version}) with "
        "config: model='google/gemma-2-9b-it'\n"
        if version
        else ""
    )
    return head + prefix + error + "\n"


@pytest.mark.parametrize("distribution", ["flash-attn", "vllm-flash-attn"])
def test_the_packaged_reading_is_the_snapshots(distribution: str) -> None:
    read = keywords.distributions()[distribution]
    rows = _section(distribution)
    assert read.releases == tuple(dict.fromkeys(release for release, _, _ in rows))
    for release, function, params in rows:
        for param in params.split():
            assert release in read.taking(function, param), (release, function, param)
    for function, held in read.functions.items():
        # every entry point the rule must know by its name alone
        assert not function.startswith("flash_attn") or keywords.UNEXPECTED.search(
            _ERROR.format(function, "x")
        )
        for param in held:
            assert set(read.taking(function, param)) == set(_taking(distribution, function, param))


def test_each_vllm_release_read_calls_the_flash_attention_its_wheel_imports() -> None:
    imported = {release: module for release, _, module in _section("vllm")}
    assert imported  # the snapshot has the wheels' lines
    era = {"flash_attn": "flash-attn", "vllm_flash_attn": "vllm-flash-attn"}
    for release, module in imported.items():
        source = keywords._source(keywords.version_key(release))
        assert source is not None and source[0] == release
        expected = "own build" if module == "vllm.vllm_flash_attn" else era[module]
        assert source[1].partition("==")[0] == expected, release


def test_a_vllm_that_pins_the_fork_gets_the_pinned_release() -> None:
    taking = _taking("vllm-flash-attn", "flash_attn_varlen_func", "softcap")
    assert taking and "2.5.9.post1" not in taking  # vLLM 0.5.3's pin lacks it
    found = diagnose_text(_log("0.5.4", FLASH_ATTN_LINES[0]))
    assert found.code == "library-release"
    assert [f.text for f in found.fixes] == ["pip install vllm-flash-attn==2.6.1"]
    assert "2.6.1" in taking


def test_a_vllm_that_imports_flash_attn_gets_the_first_release_taking_the_keyword() -> None:
    first = _taking("flash-attn", "flash_attn_varlen_func", "alibi_slopes")[0]
    error = _ERROR.format("flash_attn_varlen_func", "alibi_slopes")
    found = diagnose_text(_log("0.4.0.post1", error))
    texts = [f.text for f in found.fixes]
    assert texts[0] == f"pip install -U 'flash-attn>={first}'"
    assert "pip uninstall flash-attn" in texts[1]  # the selector falls back to xFormers
    assert "flash-attn package" in found.cause


def test_a_vllm_with_its_own_build_is_told_to_reinstall_not_to_add_a_package() -> None:
    found = diagnose_text(
        _log("0.9.2", _ERROR.format("flash_attn_varlen_func", "num_splits"), "ERROR [core.py] ")
    )
    assert found.code == "library-release"
    assert "its own FlashAttention build" in found.cause
    assert all("flash-attn" not in f.text.split("vllm")[0] for f in found.fixes)
    assert "--force-reinstall vllm==" in found.fixes[0].text


def test_without_a_release_each_distribution_is_named_with_the_releases_it_serves() -> None:
    found = diagnose_text(_ERROR.format("flash_attn_varlen_func", "alibi_slopes") + "\n")
    texts = [f.text for f in found.fixes]
    first = _taking("flash-attn", "flash_attn_varlen_func", "alibi_slopes")[0]
    assert texts[0] == f"pip install -U 'flash-attn>={first}'"
    assert "vLLM 0.4.3 to 0.6.1.post2" in texts[1]
    assert texts[2].startswith("from vLLM 0.6.2 on")


def test_a_keyword_no_release_read_takes_offers_no_package() -> None:
    found = diagnose_text(_ERROR.format("flash_attn_varlen_func", "no_such_keyword") + "\n")
    assert found.code == "library-release"
    assert not any(f.kind == "dependency" for f in found.fixes)


def test_sglang_is_not_told_vllms_packages() -> None:
    log = (
        "[2025-07-01 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)\n"
        "sglang version 0.4.9\n" + _ERROR.format("flash_attn_with_kvcache", "sinks") + "\n"
    )
    found = diagnose_text(log)
    assert found.code == "library-release"
    assert not any("vllm" in f.text for f in found.fixes)


def test_another_functions_keyword_is_not_this_rule() -> None:
    found = diagnose_text(_ERROR.format("generate", "softcap") + "\n")
    assert found.code != "library-release"


def test_the_reader_takes_public_functions_and_the_wheels_import(tmp_path: Path) -> None:
    source = "def f(a, b=1, *, c=None):\n    pass\ndef _g(x):\n    pass\n"
    assert signatures(source) == {"f": ["a", "b", "c"]}
    wheel = wheel_of(
        tmp_path / "vllm-0.4.3-cp311-cp311-manylinux1_x86_64.whl",
        {
            "vllm/attention/backends/flash_attn.py": (
                "from vllm_flash_attn import (\n    flash_attn_varlen_func,\n)\n"
            )
        },
    )
    assert imported_from(Path(wheel.filename or "")) == ("0.4.3", ["vllm_flash_attn"])
