"""The optional C extension ``patcher.text._scan`` against Python's JSON scanner and UTF-8 decoder.

It must accept exactly the strict JSON that Python's ``json`` accepts (with NaN and Infinity
refused, which the pure-Python path then accepts as Python does) and end each value at the same
byte, and call exactly the bytes valid UTF-8 that Python's strict decoder does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from typing import NoReturn

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from patcher.text import scanner
from tests.strategies import document_texts

scan = scanner.native  # None where it is not built, or PATCHER_PURE_PYTHON is set

SETTINGS = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
JUNK = ["", ",", "]", "}", "\x01", "\x1f", "\x7f", "NaN", "Infinity", '"', "\\", "\\u12", "\\x"]
JUNK += ["1.", "-", "01", "1e", "1e+", ".5", "tru", "nul", "[", "{", ":", " ", "\t", "é", "\\ud800"]


def _no_constants(name: str) -> NoReturn:
    raise ValueError(name)


STRICT = json.JSONDecoder(parse_constant=_no_constants)


def strict_end(raw: bytes, start: int) -> int:
    """Where Python's scanner ends the strict JSON value at byte ``start``, or -1."""
    text = raw.decode("utf-8", "surrogatepass")
    at = len(raw[:start].decode("utf-8", "surrogatepass"))
    try:
        _, end = STRICT.raw_decode(text, at)
    except ValueError:
        return -1
    return len(text[:end].encode("utf-8", "surrogatepass"))


def test_the_extension_is_built_where_a_compiler_is() -> None:
    """CI has a C compiler, so CI must run (and measure) the C path; ``setup.py`` marks the
    extension optional only for installs that have none."""
    if os.environ.get("PATCHER_PURE_PYTHON"):
        pytest.skip("PATCHER_PURE_PYTHON is set: the pure-Python path is under test")
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler here: the install fell back to the pure-Python scanner")
    assert scanner.native is not None, "patcher.text._scan was not built; see setup.py"


def test_the_pure_python_switch_turns_it_off() -> None:
    """``PATCHER_PURE_PYTHON=1`` makes a process use the pure-Python scanner (for a bug report
    or a benchmark of both)."""
    probe = "from patcher.text import scanner; print(scanner.native is None)"
    env = {**os.environ, "PATCHER_PURE_PYTHON": "1"}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert done.stdout.strip() == "True", done.stderr


needs_scan = pytest.mark.skipif(scan is None, reason="the C extension is not built here")


@needs_scan
@SETTINGS
@given(st.data())
def test_value_end_agrees_with_pythons_strict_json(data: st.DataObject) -> None:
    text = document_texts(data)
    for _ in range(data.draw(st.integers(0, 3))):
        at = data.draw(st.integers(0, len(text)))
        cut = data.draw(st.integers(0, 3))
        text = text[:at] + data.draw(st.sampled_from(JUNK)) + text[at + cut :]
    raw = text.encode("utf-8", "surrogatepass")
    start = data.draw(st.sampled_from([0, data.draw(st.integers(0, len(raw)))]))
    try:
        raw[:start].decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        assume(False)  # a start inside a character: no caller does that
    assert scan.value_end(raw, start) == strict_end(raw, start)


@needs_scan
@pytest.mark.parametrize(
    ("text", "end"),
    [
        ('"a\\u00E9\\/"x', 11),
        ("-0.5e+10,", 8),
        ("1.", 1),
        ("1e", 1),
        ("-", -1),
        ("01", 1),
        ("[1,]", -1),
        ('{"a" : [ ] , "b":{}}', 20),
        ('{"a" 1}', -1),
        ("[NaN]", -1),
        ('"\t"', -1),
        ('"\x7f"', 3),
        ("truex", 4),
        ("", -1),
        (" 1", -1),
    ],
)
def test_value_end_on_the_edges(text: str, end: int) -> None:
    raw = text.encode()
    assert scan.value_end(raw, 0) == end == strict_end(raw, 0)


@needs_scan
def test_deep_nesting_is_left_to_the_python_path() -> None:
    """Past 512 levels the extension answers "not this" and the pure-Python path decides."""
    shallow, deep = "[" * 512 + "]" * 512, "[" * 513 + "]" * 513
    assert scan.value_end(shallow.encode(), 0) == len(shallow)
    assert scan.value_end(deep.encode(), 0) == -1
    assert scanner.value_end(deep.encode(), 0) == len(deep)
    assert scan.value_end(b"[1]", 4) == -1 and scan.value_end(b"[1]", -1) == -1


def _utf8_ok(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


EDGES = [b"\xc2\x80", b"\xc1\xbf", b"\xe0\x9f\xbf", b"\xe0\xa0\x80", b"\xed\x9f\xbf"]
EDGES += [b"\xed\xa0\x80", b"\xef\xbf\xbf", b"\xf0\x8f\xbf\xbf", b"\xf0\x90\x80\x80"]
EDGES += [b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\x80", b"\xff"]


@needs_scan
@SETTINGS
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=12),
            st.text(max_size=12).map(lambda t: t.encode("utf-8", "surrogatepass")),
            st.sampled_from(EDGES),
            st.sampled_from(EDGES).map(lambda e: e[:-1]),
            st.just(b"abcdefghijklmnop"),
        ),
        max_size=12,
    )
)
def test_utf8_valid_agrees_with_pythons_decoder(pieces: list[bytes]) -> None:
    raw = b"".join(pieces)
    assert scan.utf8_valid(raw) == _utf8_ok(raw)


@needs_scan
@pytest.mark.parametrize("edge", EDGES)
def test_utf8_edges(edge: bytes) -> None:
    for raw in (edge, b"x" * 9 + edge, edge + b"y" * 9, edge[:-1]):
        assert scan.utf8_valid(raw) == _utf8_ok(raw), raw
