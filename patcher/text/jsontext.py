"""Format-preserving JSON editing: an edit changes only the bytes of the member it touches.

The file's bytes are never re-serialised nor decoded whole. A JSON pointer is followed through
the bytes themselves; every value that is not on the path is validated and skipped without
being parsed (``patcher.text.scanner``), so locating ``/model/byte_fallback`` in a 15 MB
``tokenizer.json`` costs one pass over the bytes and no parse. An edit splices prefix +
new value + suffix, and the scan is kept across edits (its offsets are shifted), so a k-op
transform costs one scan. Indentation, key order, escapes, number spellings and the final
newline of everything else stay as they were. A new member copies the separator, indentation
and ``": "`` style of its siblings.

"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from patcher.errors import InputFileError
from patcher.text import scanner
from patcher.text.document import MISSING
from patcher.text.pointers import PointerError, join_pointer, split_pointer
from patcher.text.scanner import JsonSyntaxError, value_end


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


Trie = dict[str, "Trie"]


def _trie(pointers: list[str]) -> Trie:
    root: Trie = {}
    for pointer in pointers:
        node = root
        for token in split_pointer(pointer):
            node = node.setdefault(token, {})
    return root


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
        self._small: str | None = None  # a small ASCII document's text (see scanner.SMALL)

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
        start = scanner.root_start(data)
        if start < len(data) and data[start] in scanner.OPENERS:
            end = self._scan(start, "", _trie(pointers)).close + 1
        else:
            end = value_end(data, start)
        if scanner.skip_ws(data, end) != len(data):
            raise JsonSyntaxError(data, scanner.skip_ws(data, end), "Extra data")

    def _scan(self, at: int, pointer: str, want: Trie) -> Container:
        cached = self._containers.get(at)
        if cached is not None:
            return cached
        data = self.data
        if at >= len(data) or data[at] not in scanner.OPENERS:
            raise PointerError(pointer)
        kind: Literal["object", "array"] = "object" if data[at] == 0x7B else "array"
        closer = b"}" if kind == "object" else b"]"
        slots: list[Slot] = []
        seen: set[str] = set()
        ends = self._ends
        j = scanner.skip_ws(data, at + 1)
        if j < len(data) and data[j] == closer[0]:
            container = Container(kind, at, j, ())
            self._containers[at] = container
            ends[at] = j + 1
            return container
        while True:
            start = j
            key: str | None = None
            if kind == "object":
                scanner.expect_char(data, j, b'"', "property name enclosed in double quotes")
                match = scanner.KEY.match(data, j)
                if match is None:
                    scanner.slow_value_end(data, j)
                    raise JsonSyntaxError(data, j, "Invalid string")  # pragma: no cover
                key_end = match.end()
                raw_key = data[j + 1 : key_end - 1]
                key = raw_key.decode("utf-8") if b"\\" not in raw_key else json.loads(match[0])
                assert key is not None
                if key in seen:
                    raise DuplicateKeyError(pointer, key)
                seen.add(key)
                colon = scanner.skip_ws(data, key_end)
                scanner.expect_char(data, colon, b":", "':' delimiter")
                value_start = scanner.skip_ws(data, colon + 1)
                token = key
            else:
                key_end = value_start = j
                token = str(len(slots))
            child = want.get(token)
            if (
                child is not None
                and value_start < len(data)
                and data[value_start] in scanner.OPENERS
            ):
                value_end_at = self._scan(value_start, pointer + join_pointer([token]), child)
                end = value_end_at.close + 1
            else:
                known = ends.get(value_start)
                end = self._value_end(value_start) if known is None else known
                ends[value_start] = end
            slots.append(Slot(key, start, key_end, value_start, end))
            j = scanner.skip_ws(data, end)
            scanner.expect_char(data, j, b"," + closer, f"',' delimiter or '{closer.decode()}'")
            if data[j] == 0x2C:
                j = scanner.skip_ws(data, j + 1)
                continue
            container = Container(kind, at, j, tuple(slots))
            self._containers[at] = container
            ends[at] = j + 1
            return container

    def _value_end(self, start: int) -> int:
        """Where the value at ``start`` ends, validated: by the C extension where it is built;
        without it, by Python's scanner in a small ASCII document (where character and byte
        offsets agree), else by the byte patterns."""
        if scanner.native is not None:
            return value_end(self.data, start)
        if self._small is None and len(self.data) <= scanner.SMALL and self.is_ascii():
            self._small = self.data.decode("ascii")
        if self._small is not None:
            try:
                return int(scanner.DECODER.raw_decode(self._small, start)[1])
            except json.JSONDecodeError as exc:
                raise JsonSyntaxError(self.data, exc.pos, exc.msg) from None
            except (ValueError, RecursionError):
                pass  # a huge integer, or nesting past Python's limit: the byte patterns decide
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
        container = self._scan(scanner.root_start(self.data), "", want)
        for depth, token in enumerate(tokens):
            want = want[token]
            slot = container.slots[_find(container, token, join_pointer(tokens[: depth + 1]))]
            container = self._scan(slot.value_start, join_pointer(tokens[: depth + 1]), want)
        return container

    def span(self, pointer: str) -> tuple[int, int]:
        """The (start, end) byte offsets of the value at ``pointer``."""
        tokens = split_pointer(pointer)
        if not tokens:
            start = scanner.root_start(self.data)
            if start < len(self.data) and self.data[start] in scanner.OPENERS:
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
            if not want or data[start] not in scanner.OPENERS:
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
        elif scanner.INDEX.fullmatch(token) and int(token) <= len(parent.slots):
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
    if scanner.INDEX.fullmatch(token) and int(token) < len(container.slots):
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
    match = scanner.WS.match(data, line_start)
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
            comma = scanner.skip_ws(data, slots[-2].value_end)
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
        multiline = data.find(b"\n", scanner.root_start(data), content_end) != -1
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
