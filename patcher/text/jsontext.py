"""Format-preserving JSON editing: an edit changes only the bytes of the member it touches.

The file's bytes are never re-serialised nor decoded whole. A JSON pointer is followed through
the bytes themselves; every value that is not on the path is validated and skipped by regular
expressions that run in C and build no Python objects (one match skips a whole vocab or merges
list), so locating ``/model/byte_fallback`` in a 15 MB ``tokenizer.json`` costs one pass over
the bytes and no parse. A small ASCII file (a ``config.json``) is skipped through by Python's
own scanner instead, which costs less than compiling those patterns. An edit splices prefix +
new value + suffix, and the scan is kept across edits (its offsets are shifted), so a k-op
transform costs one scan. Indentation, key order, escapes, number spellings and the final
newline of everything else stay as they were. A new member copies the separator, indentation
and ``": "`` style of its siblings.

Where the optional C extension ``patcher.text._scan`` was built (see ``setup.py``), skipping a value
and checking UTF-8 run there instead, about ten times faster and without compiling a pattern;
it only says "valid, ends here" or "not this", and on "not this" the pure-Python path decides
and names the problem, so both give the same answers. ``PATCHER_PURE_PYTHON=1`` turns it off.
"""

from __future__ import annotations

import codecs
import functools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from patcher.errors import InputFileError
from patcher.text.document import BOM, MISSING

try:
    from patcher.text import _scan as _native
except ImportError:  # built without a C compiler: the pure-Python scanner does it all
    _native = None  # type: ignore[assignment]
if os.environ.get("PATCHER_PURE_PYTHON"):
    _native = None  # type: ignore[assignment]

_DECODER = json.JSONDecoder()
_INDEX = re.compile(r"0|[1-9][0-9]*")
_OPEN = (0x7B, 0x5B)  # '{' and '['

# Strict JSON (RFC 8259) as byte patterns, possessive so that a failed match never backtracks.
_S = rb"[ \t\n\r]*+"
_STR = rb'"[^"\\\x00-\x1f]*+(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*+)*+"'
_NUM = rb"-?+(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?+(?:[eE][-+]?+[0-9]++)?+"
_WS = re.compile(_S)
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


_KEY = re.compile(_STR)
_CLOSER = {0x7B: 0x7D, 0x5B: 0x5D}


@functools.cache
def _run(opener: int) -> re.Pattern[bytes]:
    """For a long deeper container: a pattern that runs over its members holding scalars or
    containers of scalars, each followed by a comma, in C. It holds one copy of a member (the
    member after the run, the last one or a deeper one, is taken on its own), as compiling it
    is part of a command's start; and only a container longer than ``_RUN_AFTER`` needs it."""
    head = _STR + _S + rb":" + _S if opener == 0x7B else b""
    return re.compile(_S + rb"(?:" + head + _FLAT + _S + rb"," + _S + rb")*+")


_RUN_AFTER = 1024  # members taken one at a time (a few µs each) before the run is compiled


_CHUNK = 1 << 18
# Up to this size an ASCII document's values are skipped by Python's own scanner: parsing a
# config.json costs far less than compiling the byte patterns above (about 8 ms a process).
_SMALL = 1 << 18


class PointerError(Exception):
    """A pointer does not lead to a value in the text (message is the pointer)."""


class DuplicateKeyError(Exception):
    """An object on the edited path holds the same key twice."""

    def __init__(self, pointer: str, key: str) -> None:
        super().__init__(pointer, key)
        self.pointer = pointer
        self.key = key

    def refusal(self, file: str | Path) -> InputFileError:
        """The one-line refusal of an edit through ``file``'s duplicate key."""
        return InputFileError(
            f"duplicate key {self.key!r} in this object; the edit would be ambiguous",
            file=file,
            pointer=self.pointer,
            hint="remove the duplicate by hand, then run the command again",
        )


@dataclass(frozen=True, slots=True)
class Slot:
    """One object member or array element, located by byte offsets."""

    key: str | None
    start: int
    key_end: int
    value_start: int
    value_end: int


@dataclass(frozen=True, slots=True)
class Container:
    """An object or array: its brackets and its slots, in text order."""

    kind: Literal["object", "array"]
    open: int
    close: int
    slots: tuple[Slot, ...]


def split_pointer(pointer: str) -> list[str]:
    """Split an RFC 6901 pointer into unescaped tokens ('' is the whole document)."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PointerError(pointer)
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def related(a: str, b: str) -> bool:
    """Whether one pointer is the other or leads inside it."""
    ta, tb = split_pointer(a), split_pointer(b)
    n = min(len(ta), len(tb))
    return ta[:n] == tb[:n]


def join_pointer(tokens: list[str]) -> str:
    """Join tokens into an RFC 6901 pointer, escaping '~' and '/'."""
    return "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens)


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
    if data.isascii() or (_native is not None and _native.utf8_valid(data)):
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


Trie = dict[str, "Trie"]


def _trie(pointers: list[str]) -> Trie:
    root: Trie = {}
    for pointer in pointers:
        node = root
        for token in split_pointer(pointer):
            node = node.setdefault(token, {})
    return root


def _skip(data: bytes, i: int) -> int:
    match = _WS.match(data, i)
    assert match is not None
    return match.end()


def _root(data: bytes) -> int:
    return _skip(data, len(BOM) if data.startswith(BOM) else 0)


def _slow_value_end(data: bytes, start: int) -> int:
    """Where the value at ``start`` ends, by Python's own JSON scanner: it names the problem of
    an invalid value exactly, and it accepts what Python's json does beyond strict JSON (NaN)."""
    text = data.decode("utf-8", "surrogateescape")
    at = len(data[:start].decode("utf-8", "surrogateescape"))
    try:
        _, end = _DECODER.raw_decode(text, at)
    except json.JSONDecodeError as exc:
        where = len(text[: exc.pos].encode("utf-8", "surrogateescape"))
        raise JsonSyntaxError(data, where, exc.msg) from None
    return len(text[:end].encode("utf-8", "surrogateescape"))


def _skip_container(data: bytes, start: int) -> int | None:
    opener = data[start]
    closer = _CLOSER[opener]
    j = _skip(data, start + 1)
    if j < len(data) and data[j] == closer:
        return j + 1
    taken = 0
    while True:
        taken += 1
        if taken >= _RUN_AFTER:
            matched = _run(opener).match(data, j)
            assert matched is not None
            j = matched.end()
        if opener == 0x7B:
            key = _KEY.match(data, j)
            colon = _skip(data, key.end()) if key is not None else len(data)
            if colon >= len(data) or data[colon] != 0x3A:  # ':'
                return None
            j = _skip(data, colon + 1)
        if j >= len(data):
            return None
        if data[j] in _OPEN:
            end = value_end(data, j)
        else:  # a scalar; anything else is named by Python's scanner
            flat = _flat_value().match(data, j)
            if flat is None:
                return None
            end = flat.end()
        k = _skip(data, end)
        if k < len(data) and data[k] == 0x2C:  # ','
            j = _skip(data, k + 1)
            continue
        return k + 1 if k < len(data) and data[k] == closer else None


def value_end(data: bytes, start: int) -> int:
    """Where the JSON value at ``start`` ends; the value is validated on the way."""
    if _native is not None:
        native_end = _native.value_end(data, start)
        if native_end >= 0:
            return native_end
    match = _flat_value().match(data, start)
    if match is not None:
        return match.end()
    if start < len(data) and data[start] in _OPEN:
        end = _skip_container(data, start)
        if end is not None:
            return end
    return _slow_value_end(data, start)


def _expect(data: bytes, at: int, chars: bytes, what: str) -> None:
    if at >= len(data) or data[at] not in chars:
        raise JsonSyntaxError(data, at, f"Expecting {what}")


class Raw:
    """A value off the edited path, compared by its exact bytes (used to verify an edit)."""

    __slots__ = ("data", "start", "end")

    def __init__(self, data: bytes, start: int, end: int) -> None:
        self.data, self.start, self.end = data, start, end

    def __deepcopy__(self, memo: dict[int, Any]) -> Raw:
        return self

    def parsed(self) -> Any:
        return json.loads(self.data[self.start : self.end])

    def same(self, other: Raw) -> bool:
        if self.end - self.start != other.end - other.start:
            return False
        # ``startswith`` compares in place with memcmp: no copy, no hash.
        with memoryview(other.data) as view:
            return self.data.startswith(view[other.start : other.end], self.start)


def same_sparse(a: Any, b: Any) -> bool:
    """Whether two sparse documents (``JsonText.sparse``) hold the same JSON."""
    if isinstance(a, Raw) and isinstance(b, Raw):
        return a.same(b)
    a = a.parsed() if isinstance(a, Raw) else a
    b = b.parsed() if isinstance(b, Raw) else b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_sparse(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_sparse(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict | list) or isinstance(b, dict | list):
        return False
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) and type(a) is type(b)


class JsonText:
    """A JSON document's bytes with the containers on the edited paths located in them.

    Locating a path scans each container on it once; every other value is skipped in C, and
    the scan of the root also validates the whole document. The scan is kept across edits:
    each splice shifts the offsets after it and drops only what it invalidated.
    """

    def __init__(self, data: bytes | str) -> None:
        self.data = data.encode("utf-8") if isinstance(data, str) else data
        self._containers: dict[int, Container] = {}
        self._ends: dict[int, int] = {}
        self._ascii: bool | None = None
        self._newline: bytes | None = None
        self._indent: str | None = None
        self._small: str | None = None  # a small ASCII document's text (see _SMALL)

    @property
    def text(self) -> str:
        """The document as text."""
        return self.data.decode("utf-8")

    def fork(self) -> JsonText:
        """A copy that shares the bytes and the scan, so that edits to one leave the other."""
        other = JsonText(self.data)
        other._containers = dict(self._containers)
        other._ends = dict(self._ends)
        other._ascii, other._newline, other._indent = self._ascii, self._newline, self._indent
        other._small = self._small
        return other

    def rescanned(self) -> JsonText:
        """The same bytes with every container to be scanned afresh; the values skipped so far
        keep their known ends (so a check built on this compares their bytes instead)."""
        other = JsonText(self.data)
        other._ends = {s: e for s, e in self._ends.items() if s not in self._containers}
        other._small = self._small
        return other

    def prepare(self, pointers: list[str]) -> None:
        """Validate the whole document, scanning the containers on ``pointers`` on the way."""
        data = self.data
        start = _root(data)
        if start < len(data) and data[start] in _OPEN:
            end = self._scan(start, "", _trie(pointers)).close + 1
        else:
            end = value_end(data, start)
        if _skip(data, end) != len(data):
            raise JsonSyntaxError(data, _skip(data, end), "Extra data")

    def _scan(self, at: int, pointer: str, want: Trie) -> Container:
        cached = self._containers.get(at)
        if cached is not None:
            return cached
        data = self.data
        if at >= len(data) or data[at] not in _OPEN:
            raise PointerError(pointer)
        kind: Literal["object", "array"] = "object" if data[at] == 0x7B else "array"
        closer = b"}" if kind == "object" else b"]"
        slots: list[Slot] = []
        seen: set[str] = set()
        ends = self._ends
        j = _skip(data, at + 1)
        if j < len(data) and data[j] == closer[0]:
            container = Container(kind, at, j, ())
            self._containers[at] = container
            ends[at] = j + 1
            return container
        while True:
            start = j
            key: str | None = None
            if kind == "object":
                _expect(data, j, b'"', "property name enclosed in double quotes")
                match = _KEY.match(data, j)
                if match is None:
                    _slow_value_end(data, j)
                    raise JsonSyntaxError(data, j, "Invalid string")  # pragma: no cover
                key_end = match.end()
                raw_key = data[j + 1 : key_end - 1]
                key = raw_key.decode("utf-8") if b"\\" not in raw_key else json.loads(match[0])
                assert key is not None
                if key in seen:
                    raise DuplicateKeyError(pointer, key)
                seen.add(key)
                colon = _skip(data, key_end)
                _expect(data, colon, b":", "':' delimiter")
                value_start = _skip(data, colon + 1)
                token = key
            else:
                key_end = value_start = j
                token = str(len(slots))
            child = want.get(token)
            if child is not None and value_start < len(data) and data[value_start] in _OPEN:
                value_end_at = self._scan(value_start, pointer + join_pointer([token]), child)
                end = value_end_at.close + 1
            else:
                known = ends.get(value_start)
                end = self._value_end(value_start) if known is None else known
                ends[value_start] = end
            slots.append(Slot(key, start, key_end, value_start, end))
            j = _skip(data, end)
            _expect(data, j, b"," + closer, f"',' delimiter or '{closer.decode()}'")
            if data[j] == 0x2C:
                j = _skip(data, j + 1)
                continue
            container = Container(kind, at, j, tuple(slots))
            self._containers[at] = container
            ends[at] = j + 1
            return container

    def _value_end(self, start: int) -> int:
        """Where the value at ``start`` ends, validated: by the C extension where it is built;
        without it, by Python's scanner in a small ASCII document (where character and byte
        offsets agree), else by the byte patterns."""
        if _native is not None:
            return value_end(self.data, start)
        if self._small is None and len(self.data) <= _SMALL and self.is_ascii():
            self._small = self.data.decode("ascii")
        if self._small is not None:
            try:
                return int(_DECODER.raw_decode(self._small, start)[1])
            except json.JSONDecodeError as exc:
                raise JsonSyntaxError(self.data, exc.pos, exc.msg) from None
            except ValueError:  # an integer past Python's digit limit is still valid JSON
                pass
        return value_end(self.data, start)

    def _splice(self, start: int, end: int, new: bytes, parent: int | None = None) -> None:
        """Replace bytes [start, end) with ``new``; shift the scan, dropping what it cut (and
        ``parent``, whose members changed)."""
        with memoryview(self.data) as view:
            cut = view[start:end].tobytes()
            if not (new.isascii() and cut.isascii()):
                self._ascii = None
            if b"\r" in new or b"\r" in cut:
                self._newline = None
            if b"\n" in new or b"\n" in cut:
                self._indent = None
            self.data = b"".join((view[:start], new, view[end:]))
        self._small = None
        delta = len(new) - (end - start)

        def at(p: int) -> int:  # where something that starts at p is now (-1: cut)
            return p if p < start else p + delta if p >= end else -1

        def upto(p: int) -> int:  # where something that ends at p now ends
            return p if p <= start else p + delta if p >= end else -1

        ends: dict[int, int] = {}
        for s, e in self._ends.items():
            a, b = at(s), upto(e)
            if a >= 0 and b >= 0:
                ends[a] = b
        containers: dict[int, Container] = {}
        for c in self._containers.values():
            opened, closed = at(c.open), at(c.close)
            if opened < 0 or closed < 0 or c.open == parent:
                continue
            slots: list[Slot] = []
            for slot in c.slots:
                moved = (at(slot.start), upto(slot.key_end), at(slot.value_start))
                finish = upto(slot.value_end)
                if min(*moved, finish) < 0:
                    break
                slots.append(Slot(slot.key, *moved, finish))
            else:
                containers[opened] = Container(c.kind, opened, closed, tuple(slots))
        self._ends, self._containers = ends, containers

    def container_at(self, start: int, pointer: str) -> Container:
        """The object or array whose opening bracket is at byte ``start`` (``pointer`` names it
        in errors), its members located; their values are skipped, not parsed."""
        return self._scan(start, pointer, {})

    def container(self, tokens: list[str]) -> Container:
        """The object or array at ``tokens``."""
        want = _trie([join_pointer(tokens)])
        container = self._scan(_root(self.data), "", want)
        for depth, token in enumerate(tokens):
            want = want[token]
            slot = container.slots[_find(container, token, join_pointer(tokens[: depth + 1]))]
            container = self._scan(slot.value_start, join_pointer(tokens[: depth + 1]), want)
        return container

    def span(self, pointer: str) -> tuple[int, int]:
        """The (start, end) byte offsets of the value at ``pointer``."""
        tokens = split_pointer(pointer)
        if not tokens:
            start = _root(self.data)
            if start < len(self.data) and self.data[start] in _OPEN:
                return start, self.container([]).close + 1
            return start, value_end(self.data, start)
        parent = self.container(tokens[:-1])
        slot = parent.slots[_find(parent, tokens[-1], pointer)]
        return slot.value_start, slot.value_end

    def raw(self, pointer: str) -> str:
        """The exact source text of the value at ``pointer``."""
        start, end = self.span(pointer)
        return self.data[start:end].decode("utf-8")

    def get(self, pointer: str) -> Any:
        """The value at ``pointer`` (parsed from its bytes only), or ``MISSING``."""
        try:
            start, end = self.span(pointer)
        except PointerError:
            return MISSING
        return json.loads(self.data[start:end])

    def kind(self, pointer: str) -> str | None:
        """'object', 'array' or 'value' for what is at ``pointer``; None when nothing is."""
        try:
            start, _ = self.span(pointer)
        except PointerError:
            return None
        return {0x7B: "object", 0x5B: "array"}.get(self.data[start], "value")

    def sparse(self, pointers: list[str]) -> Any:
        """The document as far as ``pointers`` reach: containers on the way hold their other
        members as ``Raw`` bytes, and the values at the pointers are parsed."""
        targets = set(pointers)
        data = self.data
        start, end = self.span("")

        def node(start: int, end: int, pointer: str, want: Trie) -> Any:
            if pointer in targets:
                return json.loads(data[start:end])
            if not want or data[start] not in _OPEN:
                return Raw(data, start, end)
            container = self._scan(start, pointer, want)
            if container.kind == "array":
                return [
                    node(s.value_start, s.value_end, f"{pointer}/{i}", want.get(str(i), {}))
                    for i, s in enumerate(container.slots)
                ]
            members: dict[str, Any] = {}
            for s in container.slots:
                assert s.key is not None
                here = pointer + join_pointer([s.key])
                members[s.key] = node(s.value_start, s.value_end, here, want.get(s.key, {}))
            return members

        return node(start, end, "", _trie(pointers))

    def is_ascii(self) -> bool:
        if self._ascii is None:
            self._ascii = self.data.isascii()
        return self._ascii

    def newline(self) -> bytes:
        """The file's line ending, as its first line ends: a CRLF file gets CRLF in what
        patcher inserts."""
        if self._newline is None:
            first = self.data.find(b"\n")
            self._newline = b"\r\n" if first > 0 and self.data[first - 1] == 0x0D else b"\n"
        return self._newline

    def indent_unit(self) -> str:
        if self._indent is None:
            match = re.search(rb"\n([ \t]+)\S", self.data)
            self._indent = match.group(1).decode() if match else "  "
        return self._indent

    def encode(self, value: Any, style: _Style) -> bytes:
        """``value`` rendered in ``style``: ASCII escapes in an ASCII file."""
        return _render(value, style, self.is_ascii(), self.newline()).encode("utf-8")

    def replace(self, pointer: str, value: Any, raw: str | None = None) -> str:
        """Replace the value at ``pointer`` in place; return the old value's source text."""
        start, end = self.span(pointer)
        old = self.data[start:end].decode("utf-8")
        new = raw.encode("utf-8") if raw is not None else self.encode(value, self._style(start))
        self._splice(start, end, new)
        return old

    def remove(self, pointer: str) -> str:
        """Remove the member or element at ``pointer`` with one separating comma; return the
        removed value's source text."""
        tokens = split_pointer(pointer)
        if not tokens:
            raise PointerError(pointer)
        parent = self.container(tokens[:-1])
        index = _find(parent, tokens[-1], pointer)
        slots = parent.slots
        old = self.data[slots[index].value_start : slots[index].value_end].decode("utf-8")
        if len(slots) == 1:
            cut_start, cut_end = parent.open + 1, parent.close
        elif index > 0:
            cut_start, cut_end = slots[index - 1].value_end, slots[index].value_end
        else:
            cut_start, cut_end = slots[0].start, slots[1].start
        self._splice(cut_start, cut_end, b"", parent=parent.open)
        return old

    def add(self, pointer: str, value: Any, raw: str | None = None) -> None:
        """RFC 6902 ``add``: set an object member (appended if new) or insert an array element.

        The new member copies the separator, indentation and key/value spacing of its siblings.
        """
        tokens = split_pointer(pointer)
        if not tokens:
            self.replace(pointer, value, raw)
            return
        parent = self.container(tokens[:-1])
        token = tokens[-1]
        if parent.kind == "object":
            if any(slot.key == token for slot in parent.slots):
                self.replace(pointer, value, raw)
                return
            position = len(parent.slots)
        elif token == "-":
            position = len(parent.slots)
        elif _INDEX.fullmatch(token) and int(token) <= len(parent.slots):
            position = int(token)
        else:
            raise PointerError(pointer)
        start, end, new = _insert(self, parent, position, token, value, raw)
        self._splice(start, end, new, parent=parent.open)

    def apply_op(self, op: dict[str, Any]) -> None:
        """One recorded RFC 6902 op, as the compiler made it (``x-raw`` puts back a value's
        source text); a ``test`` is the caller's to check."""
        kind, pointer, raw = op["op"], op["path"], op.get("x-raw")
        if kind == "remove":
            self.remove(pointer)
        elif kind == "replace":
            self.replace(pointer, op["value"], raw)
        elif kind == "add":
            self.add(pointer, op["value"], raw)

    def _style(self, at: int) -> _Style:
        multiline = self.data.find(b"\n", at) != -1
        return _Style(
            indent=self.indent_unit() if multiline else None,
            base=_line_indent(self.data, at),
            key_sep=": ",
            item_sep=", ",
        )


def _find(container: Container, token: str, pointer: str) -> int:
    if container.kind == "object":
        for index, slot in enumerate(container.slots):
            if slot.key == token:
                return index
        raise PointerError(pointer)
    if _INDEX.fullmatch(token) and int(token) < len(container.slots):
        return int(token)
    raise PointerError(pointer)


def apply_ops(data: bytes, ops: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> bytes:
    """Replay recorded RFC 6902 ops on ``data`` exactly as the compiler made them (``x-raw``
    puts back a value's source text). No guards: callers check the result against its hash."""
    doc = JsonText(data)
    doc.prepare([op["path"] for op in ops])
    for op in ops:
        doc.apply_op(op)
    return doc.data


def raw_value(text: str, pointer: str) -> str:
    """Return the exact source text of the value at ``pointer``."""
    return JsonText(text).raw(pointer)


def replace(text: str, pointer: str, value: Any, raw: str | None = None) -> str:
    """Replace the value at ``pointer`` in place, leaving its key and neighbours untouched."""
    doc = JsonText(text)
    doc.replace(pointer, value, raw)
    return doc.text


def remove(text: str, pointer: str) -> str:
    """Remove the member or element at ``pointer`` together with one separating comma."""
    doc = JsonText(text)
    doc.remove(pointer)
    return doc.text


def add(text: str, pointer: str, value: Any, raw: str | None = None) -> str:
    """RFC 6902 ``add`` on ``text`` with minimal edits (see ``JsonText.add``)."""
    doc = JsonText(text)
    doc.add(pointer, value, raw)
    return doc.text


@dataclass(frozen=True, slots=True)
class _Style:
    indent: str | None  # one level of indentation, or None for single-line layout
    base: str  # indentation of the line the value starts on
    key_sep: str
    item_sep: str


def _line_indent(data: bytes, at: int) -> str:
    line_start = data.rfind(b"\n", 0, at) + 1
    match = _WS.match(data, line_start)
    assert match is not None
    return match.group(0).replace(b"\n", b"").replace(b"\r", b"").decode()


def _render(value: Any, style: _Style, ascii_only: bool, newline: bytes) -> str:
    if style.indent is None or not isinstance(value, dict | list) or not value:
        return json.dumps(
            value, ensure_ascii=ascii_only, separators=(style.item_sep, style.key_sep)
        )
    rendered = json.dumps(
        value, ensure_ascii=ascii_only, indent=style.indent, separators=(",", style.key_sep)
    )
    return rendered.replace("\n", newline.decode() + style.base)


def _insert(
    doc: JsonText, parent: Container, position: int, token: str, value: Any, raw: str | None
) -> tuple[int, int, bytes]:
    """Where and what to splice to insert a member at ``position`` of ``parent``."""
    data = doc.data
    slots = parent.slots
    is_object = parent.kind == "object"
    newline = doc.newline().decode()
    if slots:
        last = slots[-1]
        key_sep = data[last.key_end : last.value_start].decode() if is_object else ": "
        if len(slots) >= 2:
            comma = _skip(data, slots[-2].value_end)
            sep = data[comma + 1 : last.start].decode()
        else:
            sep = data[parent.open + 1 : slots[0].start].decode()
            if "\n" not in sep and sep == "":
                sep = " " if key_sep.endswith(" ") or not is_object else ""
        multiline = "\n" in sep
        member_indent = sep[sep.rfind("\n") + 1 :] if multiline else ""
    else:
        key_sep = ": "
        content_end = len(data)
        while content_end > 0 and data[content_end - 1] in b" \t\n\r":
            content_end -= 1
        multiline = data.find(b"\n", _root(data), content_end) != -1
        outer = _line_indent(data, parent.open)
        member_indent = outer + doc.indent_unit()
        sep = newline + member_indent
    parent_indent = _line_indent(data, parent.open)
    unit = member_indent[len(parent_indent) :] if member_indent.startswith(parent_indent) else ""
    style = _Style(
        indent=(unit or doc.indent_unit()) if multiline else None,
        base=member_indent,
        key_sep=key_sep if key_sep in (":", ": ") else ": ",
        item_sep="," if multiline else "," + sep,
    )
    member = json.dumps(token, ensure_ascii=doc.is_ascii()) + key_sep if is_object else ""
    member += raw if raw is not None else _render(value, style, doc.is_ascii(), doc.newline())
    if not slots:
        inner = newline + member_indent + member + newline + parent_indent if multiline else member
        return parent.open + 1, parent.close, inner.encode("utf-8")
    if position == len(slots):
        return slots[-1].value_end, slots[-1].value_end, ("," + sep + member).encode("utf-8")
    at = slots[position].start
    return at, at, (member + "," + sep).encode("utf-8")
