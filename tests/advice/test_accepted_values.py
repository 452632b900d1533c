"""A refusal that lists what its release accepts, answered with the first release whose source
accepts the refused value (patcher/advice/accepted_values.py, read by tools/read_accepts.py)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from patcher.advice.doctor import diagnose_text

MINICPMV = (
    "(Worker_TP0 pid=2) ERROR 08-29 13:40:25 [multiproc_executor.py:559] ValueError: Currently, "
    "MiniCPMV only supports versions 2.0, 2.5, 2.6, 4.0. Got version: (4, 5)\n"
)


def _banner(version: str) -> str:
    return f"INFO 08-29 13:40:00 [api_server.py:1] vLLM API server version {version}\n"


def test_a_version_a_later_release_lists_is_that_release() -> None:
    # minicpmv.py's _SUPPORT_VERSION gains (4, 5) in 0.11.0 (read from the wheels)
    for log in (MINICPMV, _banner("0.10.1") + MINICPMV):
        found = diagnose_text(log)
        assert found.fixes[0].text == "pip install 'vllm>=0.11.0'"
        assert "does not accept (4, 5)" in found.cause
    # not "change the setting the message names": the message names none
    assert not any("setting" in f.text for f in diagnose_text(MINICPMV).fixes)


def test_a_release_that_lists_the_value_already_is_not_told_to_upgrade() -> None:
    found = diagnose_text(_banner("0.16.0") + MINICPMV)
    assert not any(f.text.startswith("pip install 'vllm>=") for f in found.fixes)


_WRITTEN_OUT = "ValueError: Currently, MiniCPMV only supports versions 2.0, 2.5, and 2.6\n"


def test_a_list_written_into_the_words_is_answered_with_the_release_that_takes_more() -> None:
    # to 0.10.0 the refusal writes its versions out and names no value; from 0.10.1 the same
    # file reads a collection of them, which holds these three and more (4.0; 4.5 from 0.11.0)
    for log in (_WRITTEN_OUT, _banner("0.10.0") + _WRITTEN_OUT):
        found = diagnose_text(log)
        assert [f.text for f in found.fixes] == ["pip install 'vllm>=0.10.1'"]
        assert "4.0 from 0.10.1, 4.5 from 0.11.0" in found.cause


def test_what_each_later_release_adds_is_named_in_release_order() -> None:
    # SGLang's minicpmv.py: 4.5 from 0.5.9, 4.6 from 0.5.12 (0.5.12 after 0.5.9, not before)
    found = diagnose_text(
        "[2026-12-04 10:00:00 TP0] ValueError: Currently, MiniCPMV only supports versions 2.6 "
        "and 4.0\n"
    )
    assert [f.text for f in found.fixes] == ["pip install 'sglang>=0.5.9'"]
    assert "4.5 from 0.5.9, 4.6 from 0.5.12" in found.cause


def test_a_written_out_list_under_a_release_that_takes_more_is_not_told_to_upgrade() -> None:
    # a build that says 0.11.0 yet raises 0.10.0's words (a patched tree): upgrading is not it
    found = diagnose_text(_banner("0.11.0") + _WRITTEN_OUT)
    assert not any(f.text.startswith("pip install") for f in found.fixes)


def test_the_reader_follows_a_hole_to_the_module_collection_it_lists(tmp_path: Path) -> None:
    from tools.read_accepts import accepts

    source = (
        "_SUPPORT_VERSION = {(2, 6): A, (4, 0): B}\n"
        "OTHER = ['x']\n"
        "def pick(version):\n"
        "    if version not in _SUPPORT_VERSION:\n"
        "        supported = ', '.join(f'{v[0]}.{v[1]}' for v in _SUPPORT_VERSION)\n"
        "        raise ValueError(f'only supports versions {supported}. Got version: {version}')\n"
        "def both(x):\n"
        "    raise ValueError(f'{x} not in {OTHER + list(_SUPPORT_VERSION)}')\n"
    )
    wheel = tmp_path / "vllm-9.9.9-cp38-abi3-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("vllm/model_executor/models/m.py", source)
    with zipfile.ZipFile(wheel) as archive:
        read = accepts(archive, ["vllm/model_executor/models/*.py"])
    # the joined hole lists one collection; the hole built from two is left out
    assert read == {
        "accepts": [
            "vllm/model_executor/models/m.py::supported::(2, 6)",
            "vllm/model_executor/models/m.py::supported::(4, 0)",
        ]
    }
