"""Validating and skipping JSON values in bytes, without building objects.

A value off an edited path is validated and skipped by regular expressions that run in C and
build no Python objects (one match skips a whole vocab or merges list); a small ASCII file (a
``config.json``) is skipped by Python's own scanner instead, which costs less than compiling
those patterns. Where the optional C extension ``patcher.text._scan`` was built (see
``setup.py``), skipping a value and checking UTF-8 run there instead, about ten times faster
and without compiling a pattern; it only says "valid, ends here" or "not this", and on "not
this" the pure-Python path decides and names the problem, so both give the same answers.
``PATCHER_PURE_PYTHON=1`` turns it off.
"""

from __future__ import annotations

import codecs
import functools
import json
import os
import re

from patcher.text.document import BOM

try:
    from patcher.text import _scan as native
except ImportError:  # built without a C compiler: the pure-Python scanner does it all
    native = None  # type: ignore[assignment]
if os.environ.get("PATCHER_PURE_PYTHON"):
    native = None  # type: ignore[assignment]
__all__ = [  # native included: jsontext asks whether it was built
    "DECODER",
    "INDEX",
    "KEY",
    "OPENERS",
    "RUN_AFTER",
    "SMALL",
    "WS",
    "JsonSyntaxError",
    "check_utf8",
    "expect_char",
    "native",
    "root_start",
    "skip_ws",
    "slow_value_end",
    "value_end",
]

DECODER = json.JSONDecoder()
INDEX = re.compile(r"0|[1-9][0-9]*")
OPENERS = (0x7B, 0x5B)  # '{' and '['

# Strict JSON (RFC 8259) as byte patterns, possessive so that a failed match never backtracks.
_S = rb"[ \t\n\r]*+"
_STR = rb'"[^"\\\x00-\x1f]*+(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*+)*+"'
_NUM = rb"-?+(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?+(?:[eE][-+]?+[0-9]++)?+"
WS = re.compile(_S)
_SCALAR = rb"(?:" + _STR + rb"|" + _NUM + rb"|true|false|null)"


def _array_of(item: bytes) -> bytes:
    return rb"\[" + _S + rb"(?:" + item + _S + rb"(?:," + _S + item + _S + rb")*+)?+\]"


def _object_of(item: bytes) -> bytes:
    member = _STR + _S + rb":" + _S + item + _S
    return rb"\{" + _S + rb"(?:" + member + rb"(?:," + _S + member + rb")*+)?+\}"


_FLAT = rb"(?:" + _SCALAR + rb"|" + _array_of(_SCALAR) + rb"|" + _object_of(_SCALAR) + rb")"


@functools.cache
def _flat_value() -> re.Pattern[bytes]:
    """A scalar, or a container holding only scalars (a vocab, a merges list): one C match.
    Compiled on first use, off the start-up of commands that never scan."""
    return re.compile(_FLAT)


KEY = re.compile(_STR)
_CLOSER = {0x7B: 0x7D, 0x5B: 0x5D}


@functools.cache
def _run(opener: int) -> re.Pattern[bytes]:
    """For a long deeper container: a pattern that runs over its members holding scalars or
    containers of scalars, each followed by a comma, in C. It holds one copy of a member (the
    member after the run, the last one or a deeper one, is taken on its own), as compiling it
    is part of a command's start; and only a container longer than ``RUN_AFTER`` needs it."""
    head = _STR + _S + rb":" + _S if opener == 0x7B else b""
    return re.compile(_S + rb"(?:" + head + _FLAT + _S + rb"," + _S + rb")*+")


RUN_AFTER = 1024  # members taken one at a time (a few µs each) before the run is compiled


_CHUNK = 1 << 18
# Up to this size an ASCII document's values are skipped by Python's own scanner: parsing a
# config.json costs far less than compiling the byte patterns above (about 8 ms a process).
SMALL = 1 << 18


class JsonSyntaxError(Exception):
    """The text is not valid JSON; ``line`` and ``column`` (in characters) are 1-based."""

    def __init__(self, data: bytes, position: int, problem: str) -> None:
        line_start = data.rfind(b"\n", 0, position) + 1
        self.line = data.count(b"\n", 0, position) + 1
        self.column = len(data[line_start:position].decode("utf-8", "replace")) + 1
        self.problem = problem
        super().__init__(f"line {self.line} column {self.column}: {problem}")


def check_utf8(data: bytes) -> int | None:
    """The offset of the first byte that is not UTF-8, or None. Decoded in small pieces, so
    no text copy of a large file is ever held."""
    if data.isascii() or (native is not None and native.utf8_valid(data)):
        return None
    decoder = codecs.getincrementaldecoder("utf-8")()
    with memoryview(data) as view:
        try:
            for at in range(0, len(data), _CHUNK):
                decoder.decode(view[at : at + _CHUNK])
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as exc:
                return int(exc.start)
    return None


def skip_ws(data: bytes, i: int) -> int:
    match = WS.match(data, i)
    assert match is not None
    return match.end()


def root_start(data: bytes) -> int:
    return skip_ws(data, len(BOM) if data.startswith(BOM) else 0)


def slow_value_end(data: bytes, start: int) -> int:
    """Where the value at ``start`` ends, by Python's own JSON scanner: it names the problem of
    an invalid value exactly, and it accepts what Python's json does beyond strict JSON (NaN)."""
    text = data.decode("utf-8", "surrogateescape")
    at = len(data[:start].decode("utf-8", "surrogateescape"))
    try:
        _, end = DECODER.raw_decode(text, at)
    except json.JSONDecodeError as exc:
        where = len(text[: exc.pos].encode("utf-8", "surrogateescape"))
        raise JsonSyntaxError(data, where, exc.msg) from None
    return len(text[:end].encode("utf-8", "surrogateescape"))


def _skip_container(data: bytes, start: int) -> int | None:
    """Where the container at ``start`` ends, or None where the byte patterns cannot tell
    (Python's scanner then names the problem). Nested containers are kept on a stack of their
    own, not in Python's recursion, so any depth is skipped, as the C half does."""
    n = len(data)
    stack = [data[start]]  # the open containers, innermost last
    taken = [0]  # members skipped so far in each
    j = skip_ws(data, start + 1)
    if j < n and data[j] == _CLOSER[stack[-1]]:
        return j + 1
    while True:
        # j: the start of a member of the innermost container
        opener = stack[-1]
        taken[-1] += 1
        if taken[-1] >= RUN_AFTER:
            matched = _run(opener).match(data, j)
            assert matched is not None
            j = matched.end()
        if opener == 0x7B:
            key = KEY.match(data, j)
            colon = skip_ws(data, key.end()) if key is not None else n
            if colon >= n or data[colon] != 0x3A:  # ':'
                return None
            j = skip_ws(data, colon + 1)
        if j >= n:
            return None
        end = _flat_end(data, j)
        if end is None and data[j] in OPENERS:
            inner = skip_ws(data, j + 1)
            if inner < n and data[inner] == _CLOSER[data[j]]:
                end = inner + 1  # an empty container
            else:
                stack.append(data[j])
                taken.append(0)
                j = inner
                continue
        if end is None:
            return None
        while True:  # after a value: the next member, or close containers
            k = skip_ws(data, end)
            if k < n and data[k] == 0x2C:  # ','
                j = skip_ws(data, k + 1)
                break
            if k >= n or data[k] != _CLOSER[stack[-1]]:
                return None
            stack.pop()
            taken.pop()
            end = k + 1
            if not stack:
                return end


def _flat_end(data: bytes, at: int) -> int | None:
    """Where the value at ``at`` ends when one step can tell: the C half, or the pattern for a
    scalar or a container of scalars; None for a deeper container (or an invalid value)."""
    if native is not None and data[at] in OPENERS:
        native_end = native.value_end(data, at)
        if native_end >= 0:
            return int(native_end)
    flat = _flat_value().match(data, at)
    return None if flat is None else flat.end()


def value_end(data: bytes, start: int) -> int:
    """Where the JSON value at ``start`` ends; the value is validated on the way."""
    if native is not None:
        native_end = native.value_end(data, start)
        if native_end >= 0:
            return native_end
    match = _flat_value().match(data, start)
    if match is not None:
        return match.end()
    if start < len(data) and data[start] in OPENERS:
        end = _skip_container(data, start)
        if end is not None:
            return end
    return slow_value_end(data, start)


def expect_char(data: bytes, at: int, chars: bytes, what: str) -> None:
    if at >= len(data) or data[at] not in chars:
        raise JsonSyntaxError(data, at, f"Expecting {what}")
