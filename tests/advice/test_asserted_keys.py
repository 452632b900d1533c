"""doctor on a failed ``assert "key" in name`` of an engine's start-up code
(tools/read_asserted_keys.py's reading, patcher/advice/asserted_keys.py)."""

from __future__ import annotations

import json
import zipfile
from importlib import resources
from pathlib import Path

import pytest

from patcher.advice.catalogue import version_key
from patcher.advice.doctor import diagnose_text
from tools import read_asserted_keys

SITE = "/home/u/anaconda3/envs/vl/lib/python3.10/site-packages"


def _reading() -> dict[str, dict[str, object]]:
    text = resources.files("patcher.advice").joinpath("asserted-keys-vllm.json").read_text()
    data: dict[str, dict[str, object]] = json.loads(text)
    return data


def _traceback(path: str, code: str, prefix: str = "") -> str:
    lines = [
        "Traceback (most recent call last):",
        f'  File "{SITE}/vllm/entrypoints/openai/api_server.py", line 73, in model_is_embedding',
        "    return ModelConfig(model=model_name,",
        f'  File "{SITE}/{path}", line 1740, in _get_and_verify_max_len',
        f"    {code}",
        "AssertionError",
    ]
    return "".join(f"{prefix}{line}\n" for line in lines)


@pytest.mark.parametrize("prefix", ["", "[rank0]: "])
def test_a_key_later_releases_read_with_a_default_names_the_first_of_them(prefix: str) -> None:
    reading = _reading()
    asserting = reading["asserted"]["vllm/config.py"]["rope_scaling['factor']"]  # type: ignore[index]
    defaulting = reading["defaulted"]["rope_scaling['factor']"]  # type: ignore[index]
    first = min(
        (r for r in defaulting if version_key(r) > version_key(max(asserting, key=version_key))),
        key=version_key,
    )
    found = diagnose_text(_traceback("vllm/config.py", 'assert "factor" in rope_scaling', prefix))
    assert found.code == "dependency"
    assert "'factor' in rope_scaling" in found.cause
    assert found.fixes[0].text == f"pip install 'vllm>={first}'"


def test_an_assert_the_reading_does_not_record_keeps_the_generic_answer() -> None:
    found = diagnose_text(_traceback("vllm/config.py", 'assert "nonesuch" in rope_scaling'))
    assert found.code != "dependency"
    # nor the recorded assert, in a file that does not make it
    other = _traceback("vllm/engine/arg_utils.py", 'assert "factor" in rope_scaling')
    assert diagnose_text(other).code != "dependency"


def test_the_reader_pairs_an_assert_with_a_later_release_s_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = 'def f(rope_scaling):\n    assert "factor" in rope_scaling\n    x = {}.get("a", 1)\n'
    new = 'def f(rope_scaling):\n    return rope_scaling.get("factor", 1.0)\n'
    wheels = []
    for version, source in (("9.0.0", old), ("9.1.0", new)):
        wheel = tmp_path / f"vllm-{version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr("vllm/config.py", source)
        wheels.append(wheel)
    monkeypatch.setattr(read_asserted_keys, "TARGET", tmp_path)  # written beside the wheels
    target = read_asserted_keys.record("vllm", wheels)
    data = json.loads(target.read_text())
    assert data["asserted"] == {"vllm/config.py": {"rope_scaling['factor']": ["9.0.0"]}}
    assert data["defaulted"] == {"rope_scaling['factor']": ["9.1.0"]}  # {}.get("a") unasserted


@pytest.mark.parametrize(
    "tail",
    [
        "",  # pasted up to the assert line
        "           ^^^^^^^^^^^^^^^^^^^^^^^^\n",  # Python 3.11's carets under it
        "\n\n",  # and the blank lines a report ends on
    ],
)
def test_a_traceback_cut_at_its_assert_is_read_as_that_assertion(tail: str) -> None:
    # a report quoting a traceback up to its last frame, AssertionError left off
    lines = _traceback("vllm/config.py", 'assert "factor" in rope_scaling').splitlines(True)
    cut = "".join(lines[:-1])
    found = diagnose_text(cut + tail)
    assert found.code == "dependency"
    assert found.fixes[0].text.startswith("pip install 'vllm>=")


def test_a_cut_traceback_is_not_an_assertion_where_its_last_line_is_not_the_assert() -> None:
    lines = _traceback("vllm/config.py", 'assert "factor" in rope_scaling').splitlines(True)
    # the log goes on past the frame without the exception: some other failure followed
    assert diagnose_text("".join(lines[:-1]) + "INFO shutting down\n").code != "dependency"
    # nor an assert no reading records
    other = _traceback("vllm/config.py", 'assert "nonesuch" in rope_scaling').splitlines(True)
    assert diagnose_text("".join(other[:-1])).code is None


def test_a_traceback_copied_from_buildkite_s_web_view_reads_the_frame_s_assert() -> None:
    # the view puts "Actions for L<n>" and the number before each line it copies
    lines = _traceback("vllm/config.py", 'assert "factor" in rope_scaling').splitlines()
    copied = "".join(f"Actions for L{n}\n{n}\n{line}\n" for n, line in enumerate(lines, 1))
    found = diagnose_text(copied)
    assert found.code == "dependency"
    assert found.fixes[0].text.startswith("pip install 'vllm>=")
