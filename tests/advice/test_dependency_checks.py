"""doctor on a library refusing, as it is imported, the release of another beside it
(patcher/advice/dependency_checks.py), held to the libraries' own wheels
(snapshots/engines/dependency-checks.txt)."""

from __future__ import annotations

from pathlib import Path

from patcher.advice import dependency_checks as checks
from patcher.advice.doctor import diagnose_text
from tests.conftest import SNAPSHOTS, snapshot_section, wheel_of

READING = (SNAPSHOTS / "engines" / "dependency-checks.txt").read_text()
_CUBIN = (
    "RuntimeError: flashinfer-cubin version ({0}) does not match flashinfer version ({1}). "
    "Please install the same version of both packages. Set FLASHINFER_DISABLE_VERSION_CHECK=1 "
    "to bypass this check."
)
_KERNELS = "ValueError: Either a revision or a version must be specified."
_REQUIRED = (
    "ImportError: tokenizers>=0.21,<0.22 is required for a normal functioning of this module, "
    "but found tokenizers==0.22.1."
)
_ABSENT = (
    "importlib.metadata.PackageNotFoundError: No package metadata was found for The "
    "'huggingface-hub>=0.34.0,<1.0' distribution was not found and is required by this "
    "application. "
)
# One line per rule (test_doctor's marker test takes them with its own cases).
DEPENDENCY_LINES = [_CUBIN.format("0.6.13", "0.6.14"), _KERNELS, _REQUIRED, _ABSENT]


def _section(title: str) -> list[list[str]]:
    return snapshot_section(READING, title)


def _checked(column: int) -> tuple[str, str]:
    fatal = [row[0] for row in _section("flashinfer-python") if row[column] == "fatal"]
    return fatal[0], fatal[-1]


def test_the_releases_named_are_the_ones_whose_wheels_raise_at_import() -> None:
    assert _checked(1) == checks.CUBIN_CHECKED
    assert _checked(2) == checks.JIT_CACHE_CHECKED
    assert {row[3] for row in _section("flashinfer-python")} == {checks.BYPASS}
    assert all(row[5] == "yes" for row in _section("flashinfer-python"))  # downloads cubins
    on_pypi = _section("flashinfer-cubin on PyPI")[0]
    assert tuple(on_pypi) == checks.CUBIN_ON_PYPI
    refusing = [row[0] for row in _section("kernels") if row[1] == "yes"]
    accepting = [row[0] for row in _section("kernels") if row[1] == "no"]
    assert refusing[0] == checks.KERNELS_REFUSES_FROM
    assert accepting[-1] == checks.KERNELS_LAST_ACCEPTING
    # every release read before the first that names a version builds unversioned ones
    counts = [(row[0], row[1]) for row in _section("transformers")]
    first = next(i for i, (_v, bare) in enumerate(counts) if bare == "0")
    assert counts[first][0] == checks.TRANSFORMERS_VERSIONED_FROM
    assert all(bare != "0" for _v, bare in counts[:first])
    assert all(bare == "0" for _v, bare in counts[first:])


def test_a_cubin_package_of_another_release_is_answered_with_the_flashinfer_one() -> None:
    log = (
        "INFO 01-10 18:02:11 [api_server.py:1351] vLLM API server version 0.13.0\n"
        '  File "/usr/local/lib/python3.12/site-packages/vllm/v1/attention/backends/'
        'flashinfer.py", line 10, in <module>\n' + _CUBIN.format("0.6.0", "0.5.3") + "\n"
    )
    found = diagnose_text(log)
    assert found.code == "library-release"  # not the attention backend its frame is in
    assert [(f.kind, f.text) for f in found.fixes] == [
        ("dependency", "pip install 'flashinfer-cubin==0.5.3'"),
        ("env", "FLASHINFER_DISABLE_VERSION_CHECK=1"),
    ]
    assert "No config edit helps" in found.cause


def test_a_flashinfer_release_whose_cubins_pypi_lacks_is_answered_without_them() -> None:
    found = diagnose_text("(EngineCore pid=7) " + _CUBIN.format("0.6.13", "0.6.14") + "\n")
    assert found.fixes[0].text == "pip uninstall -y flashinfer-cubin"
    assert "0.6.14 is not on PyPI" in (found.fixes[0].note or "")
    assert found.fixes[1].text == "FLASHINFER_DISABLE_VERSION_CHECK=1"


def test_a_jit_cache_of_another_release_is_uninstalled_not_pinned() -> None:
    cubin = _CUBIN.format("0.6.8+cu129", "0.6.14")
    line = cubin.replace("flashinfer-cubin", "flashinfer-jit-cache")
    found = diagnose_text(line + "\n")
    assert found.code == "library-release"
    assert found.fixes[0].text == "pip uninstall -y flashinfer-jit-cache"


def test_flashinfer_s_own_warning_that_it_ignores_the_package_is_not_this_failure() -> None:
    warned = (
        "WARNING 09-01 10:00:00 Ignoring incompatible flashinfer-cubin package (cubins will be "
        "downloaded on demand to /root/.cache/flashinfer/cubins): flashinfer-cubin version "
        "(0.7.1) does not match flashinfer version (0.7.4). Run `flashinfer download-kernels` "
        "to install matching kernel wheels, or set FLASHINFER_DISABLE_VERSION_CHECK=1 to use "
        "the installed version anyway.\n"
    )
    assert diagnose_text(warned).code != "library-release"


def test_kernels_refusing_transformers_unversioned_repositories_is_pinned_below() -> None:
    log = (
        '  File "/venv/lib/python3.12/site-packages/transformers/integrations/hub_kernels.py", '
        'line 89, in <module>\n    "cuda": LayerRepository(\n'
        '  File "/venv/lib/python3.12/site-packages/kernels/layer/layer.py", line 76, in '
        '__init__\n    raise ValueError("Either a revision or a version must be specified.")\n'
        + _KERNELS
        + "\n"
    )
    found = diagnose_text(log)
    assert found.code == "library-release"
    assert found.error == _KERNELS  # the message, not the raise echoed above it
    assert [f.text for f in found.fixes] == ["pip install 'kernels<0.15.1'"]


def test_kernels_other_refusal_a_caller_naming_both_is_not_this_one() -> None:
    both = "ValueError: Either a revision or a version must be specified, not both.\n"
    assert diagnose_text(both).code != "library-release"


def test_the_reader_tells_a_fatal_check_from_a_caught_one(tmp_path: Path) -> None:
    from tools.read_dependency_checks import flashinfer, kernels, transformers

    check = (
        "import os\n"
        "def _check(v):\n"
        "    if v != '1':\n"
        "        raise RuntimeError(f'flashinfer-cubin version ({v}) does not match '\n"
        "            f'flashinfer version (1). Set FLASHINFER_DISABLE_VERSION_CHECK=1 to bypass')\n"
    )
    fatal = wheel_of(tmp_path / "a.whl", {"flashinfer/jit/env.py": check + "_check('0')\n"})
    caught = wheel_of(
        tmp_path / "b.whl",
        {
            "flashinfer/jit/env.py": check
            + "try:\n    _check('0')\nexcept RuntimeError:\n    pass\n"
        },
    )
    assert flashinfer(fatal).split("\t")[:3] == ["fatal", "no", "FLASHINFER_DISABLE_VERSION_CHECK"]
    assert flashinfer(caught).split("\t")[0] == "caught"
    refusing = wheel_of(
        tmp_path / "k.whl",
        {
            "kernels/layer/layer.py": 'raise ValueError("Either a revision or a version must be '
            'specified.")\n'
        },
    )
    assert kernels(refusing) == "yes"
    hub = (
        "MAPPING = {'a': LayerRepository(repo_id='x'), 'b': LayerRepository(repo_id='y', "
        "version=1)}\ndef later():\n    return LayerRepository(repo_id='z')\n"
    )
    bounds = 'KERNELS_MIN_VERSION = "0.15.2"\nKERNELS_MAX_VERSION = "0.16.0"\n'
    read = wheel_of(
        tmp_path / "t.whl",
        {
            "transformers/integrations/hub_kernels.py": hub,
            "transformers/utils/import_utils.py": bounds,
        },
    )
    assert transformers(read) == "1\t>=0.15.2,<0.16.0\t-"  # only the one built at import


def test_transformers_checks_at_import_the_requirements_the_answer_installs() -> None:
    rows = _section("transformers")
    assert all(row[3] != "-" for row in rows)  # every release read raises the message
    # what the answer installs is the requirement transformers' own table holds
    old = next(row for row in rows if row[0] == "4.55.4")
    assert "tokenizers>=0.21,<0.22" in old[3].split()
    found = diagnose_text(
        '  File "/usr/lib/python3.12/site-packages/transformers/utils/versions.py", line 44, in '
        "_compare_versions\n"
        '    f"{requirement} is required for a normal functioning of this module, but found '
        '{pkg}=={got_ver}.{hint}"\n' + _REQUIRED + "\n"
    )
    assert found.code == "library-release"
    assert found.error == _REQUIRED  # the message, not the f-string echoed above it
    assert [f.text for f in found.fixes] == ["pip install 'tokenizers>=0.21,<0.22'"]


def test_a_requirement_not_installed_is_installed_and_python_itself_is_not_pip_s() -> None:
    missing = diagnose_text(_ABSENT + "\n")
    assert [f.text for f in missing.fixes] == ["pip install 'huggingface-hub>=0.34.0,<1.0'"]
    python = diagnose_text(
        "ImportError: python>=3.10.0 is required for a normal functioning of this module, but "
        "found python==3.9.18.\n"
    )
    assert [(f.kind, f.text) for f in python.fixes] == [
        ("advice", "a Python >=3.10.0 (the venv or image's own interpreter)")
    ]
