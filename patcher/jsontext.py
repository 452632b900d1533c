"""Format-preserving JSON editing: an edit changes only the bytes of the member it touches.

The text is never re-serialised. A JSON pointer is followed through the text itself, with the
standard library's C scanner skipping the values that are not on the path, so an edit of a
15 MB ``tokenizer.json`` costs about one parse. Indentation, key order, escapes, number
spellings and the final newline of everything else stay as they were. A new member copies the
separator, indentation and ``": "`` style of its siblings.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any, Literal

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_INDEX = re.compile(r"0|[1-9][0-9]*")


class PointerError(Exception):
    """A pointer does not lead to a value in the text (message is the pointer)."""


class DuplicateKeyError(Exception):
    """An object on the edited path holds the same key twice."""

    def __init__(self, pointer: str, key: str) -> None:
        super().__init__(pointer, key)
        self.pointer = pointer
        self.key = key


@dataclass(frozen=True, slots=True)
class Slot:
    """One object member or array element, located by offsets into the text."""

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
    """The text is not valid JSON; ``line`` and ``column`` are 1-based."""

    def __init__(self, text: str, position: int, problem: str) -> None:
        self.line = text.count("\n", 0, position) + 1
        self.column = position - text.rfind("\n", 0, position)
        self.problem = problem
        super().__init__(f"line {self.line} column {self.column}: {problem}")


Trie = dict[str, "Trie"]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # what ``get`` returns where a pointer leads nowhere


def _trie(pointers: list[str]) -> Trie:
    root: Trie = {}
    for pointer in pointers:
        node = root
        for token in split_pointer(pointer):
            node = node.setdefault(token, {})
    return root


def _skip(text: str, i: int) -> int:
    match = _WS.match(text, i)
    assert match is not None
    return match.end()


def _root(text: str) -> int:
    return _skip(text, 1 if text.startswith("\ufeff") else 0)


def _value_end(text: str, start: int) -> int:
    try:
        _, end = _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise JsonSyntaxError(text, exc.pos, exc.msg) from None
    return int(end)


def _expect(text: str, at: int, chars: str, what: str) -> None:
    if at >= len(text) or text[at] not in chars:
        raise JsonSyntaxError(text, at, f"Expecting {what}")


class JsonText:
    """A JSON document's text with the containers on the edited paths located in it.

    Locating a path scans each container on it once; every other value is skipped by the C
    scanner, and the scan of the root also validates the whole document. Scans are cached
    until the text is edited.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self._cache: dict[int, Container] = {}

    def prepare(self, pointers: list[str]) -> None:
        """Validate the whole document, scanning the containers on ``pointers`` on the way."""
        start = _root(self.text)
        if start < len(self.text) and self.text[start] in "{[":
            self._scan(start, "", _trie(pointers))
            end = self._cache[start].close + 1
        else:
            end = _value_end(self.text, start)
        if _skip(self.text, end) != len(self.text):
            raise JsonSyntaxError(self.text, _skip(self.text, end), "Extra data")

    def _scan(self, at: int, pointer: str, want: Trie) -> Container:
        cached = self._cache.get(at)
        if cached is not None:
            return cached
        text = self.text
        if at >= len(text) or text[at] not in "{[":
            raise PointerError(pointer)
        kind: Literal["object", "array"] = "object" if text[at] == "{" else "array"
        closer = "}" if kind == "object" else "]"
        slots: list[Slot] = []
        seen: set[str] = set()
        j = _skip(text, at + 1)
        if j < len(text) and text[j] == closer:
            container = Container(kind, at, j, ())
            self._cache[at] = container
            return container
        while True:
            start = j
            key: str | None = None
            if kind == "object":
                _expect(text, j, '"', "property name enclosed in double quotes")
                try:
                    key, key_end = scanstring(text, j + 1)
                except json.JSONDecodeError as exc:
                    raise JsonSyntaxError(text, exc.pos, exc.msg) from None
                assert key is not None
                if key in seen:
                    raise DuplicateKeyError(pointer, key)
                seen.add(key)
                colon = _skip(text, key_end)
                _expect(text, colon, ":", "':' delimiter")
                value_start = _skip(text, colon + 1)
                token = key
            else:
                key_end = value_start = j
                token = str(len(slots))
            child = want.get(token)
            if child is not None and value_start < len(text) and text[value_start] in "{[":
                sub = self._scan(value_start, pointer + join_pointer([token]), child)
                value_end = sub.close + 1
            else:
                value_end = _value_end(text, value_start)
            slots.append(Slot(key, start, key_end, value_start, value_end))
            j = _skip(text, value_end)
            _expect(text, j, "," + closer, f"',' delimiter or '{closer}'")
            if text[j] == ",":
                j = _skip(text, j + 1)
                continue
            container = Container(kind, at, j, tuple(slots))
            self._cache[at] = container
            return container

    def container(self, tokens: list[str]) -> Container:
        """The object or array at ``tokens``."""
        want = _trie([join_pointer(tokens)])
        container = self._scan(_root(self.text), "", want)
        for depth, token in enumerate(tokens):
            want = want[token]
            slot = container.slots[_find(container, token, join_pointer(tokens[: depth + 1]))]
            container = self._scan(slot.value_start, join_pointer(tokens[: depth + 1]), want)
        return container

    def span(self, pointer: str) -> tuple[int, int]:
        """The (start, end) offsets of the value at ``pointer``."""
        tokens = split_pointer(pointer)
        if not tokens:
            start = _root(self.text)
            if start < len(self.text) and self.text[start] in "{[":
                return start, self.container([]).close + 1
            return start, _value_end(self.text, start)
        parent = self.container(tokens[:-1])
        slot = parent.slots[_find(parent, tokens[-1], pointer)]
        return slot.value_start, slot.value_end

    def raw(self, pointer: str) -> str:
        """The exact source text of the value at ``pointer``."""
        start, end = self.span(pointer)
        return self.text[start:end]

    def get(self, pointer: str) -> Any:
        """The value at ``pointer`` (parsed from its text only), or ``MISSING``."""
        try:
            raw = self.raw(pointer)
        except PointerError:
            return MISSING
        return json.loads(raw)

    def kind(self, pointer: str) -> str | None:
        """'object', 'array' or 'value' for what is at ``pointer``; None when nothing is."""
        try:
            start, _ = self.span(pointer)
        except PointerError:
            return None
        return {"{": "object", "[": "array"}.get(self.text[start], "value")

    def _set_text(self, text: str) -> None:
        self.text = text
        self._cache.clear()

    def replace(self, pointer: str, value: Any, raw: str | None = None) -> str:
        """Replace the value at ``pointer`` in place; return the old value's source text."""
        start, end = self.span(pointer)
        old = self.text[start:end]
        style = _style_at(self.text, start)
        new = raw if raw is not None else _render(value, style, self.text)
        self._set_text(self.text[:start] + new + self.text[end:])
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
        old = self.text[slots[index].value_start : slots[index].value_end]
        if len(slots) == 1:
            cut_start, cut_end = parent.open + 1, parent.close
        elif index > 0:
            cut_start, cut_end = slots[index - 1].value_end, slots[index].value_end
        else:
            cut_start, cut_end = slots[0].start, slots[1].start
        self._set_text(self.text[:cut_start] + self.text[cut_end:])
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
        self._set_text(_insert(self.text, parent, position, token, value, raw))


def _find(container: Container, token: str, pointer: str) -> int:
    if container.kind == "object":
        for index, slot in enumerate(container.slots):
            if slot.key == token:
                return index
        raise PointerError(pointer)
    if _INDEX.fullmatch(token) and int(token) < len(container.slots):
        return int(token)
    raise PointerError(pointer)


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


def _indent_unit(text: str) -> str:
    match = re.search(r"\n([ \t]+)\S", text)
    return match.group(1) if match else "  "


def _line_indent(text: str, at: int) -> str:
    line_start = text.rfind("\n", 0, at) + 1
    match = _WS.match(text, line_start)
    assert match is not None
    return match.group(0).replace("\n", "").replace("\r", "")


def _style_at(text: str, at: int) -> _Style:
    multiline = text.find("\n", at) != -1
    return _Style(
        indent=_indent_unit(text) if multiline else None,
        base=_line_indent(text, at),
        key_sep=": ",
        item_sep=", ",
    )


def _render(value: Any, style: _Style, text: str) -> str:
    ascii_only = text.isascii()
    if style.indent is None or not isinstance(value, dict | list) or not value:
        return json.dumps(
            value, ensure_ascii=ascii_only, separators=(style.item_sep, style.key_sep)
        )
    rendered = json.dumps(
        value, ensure_ascii=ascii_only, indent=style.indent, separators=(",", style.key_sep)
    )
    return rendered.replace("\n", _newline(text) + style.base)


def _newline(text: str) -> str:
    """The file's line ending: a CRLF file gets CRLF in what patcher inserts."""
    return "\r\n" if "\r\n" in text else "\n"


def _insert(
    text: str, parent: Container, position: int, token: str, value: Any, raw: str | None
) -> str:
    slots = parent.slots
    is_object = parent.kind == "object"
    if slots:
        last = slots[-1]
        key_sep = text[last.key_end : last.value_start] if is_object else ": "
        if len(slots) >= 2:
            comma = _skip(text, slots[-2].value_end)
            sep = text[comma + 1 : last.start]
        else:
            sep = text[parent.open + 1 : slots[0].start]
            if "\n" not in sep and sep == "":
                sep = " " if key_sep.endswith(" ") or not is_object else ""
        multiline = "\n" in sep
        member_indent = sep[sep.rfind("\n") + 1 :] if multiline else ""
    else:
        key_sep = ": "
        multiline = "\n" in text[_root(text) :].rstrip()
        outer = _line_indent(text, parent.open)
        member_indent = outer + _indent_unit(text)
        sep = _newline(text) + member_indent
    parent_indent = _line_indent(text, parent.open)
    unit = member_indent[len(parent_indent) :] if member_indent.startswith(parent_indent) else ""
    style = _Style(
        indent=(unit or _indent_unit(text)) if multiline else None,
        base=member_indent,
        key_sep=key_sep if key_sep in (":", ": ") else ": ",
        item_sep="," if multiline else "," + sep,
    )
    if is_object:
        member = json.dumps(token, ensure_ascii=text.isascii()) + key_sep
    else:
        member = ""
    member += raw if raw is not None else _render(value, style, text)
    if not slots:
        if multiline:
            nl = _newline(text)
            inner = nl + member_indent + member + nl + parent_indent
        else:
            inner = member
        return text[: parent.open + 1] + inner + text[parent.close :]
    if position == len(slots):
        at = slots[-1].value_end
        return text[:at] + "," + sep + member + text[at:]
    at = slots[position].start
    return text[:at] + member + "," + sep + text[at:]
