"""RFC 6901 JSON pointers: split, join, and whether two are related."""

from __future__ import annotations

import re

_BAD_ESCAPE = re.compile(r"~(?![01])")


class PointerError(Exception):
    """A pointer does not lead to a value in the text (message is the pointer)."""


def split_pointer(pointer: str) -> list[str]:
    """Split an RFC 6901 pointer into unescaped tokens ('' is the whole document)."""
    if pointer == "":
        return []
    if not pointer.startswith("/") or _BAD_ESCAPE.search(pointer):
        raise PointerError(pointer)  # RFC 6901: '~' only as '~0' or '~1'
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def related(a: str, b: str) -> bool:
    """Whether one pointer is the other or leads inside it."""
    ta, tb = split_pointer(a), split_pointer(b)
    n = min(len(ta), len(tb))
    return ta[:n] == tb[:n]


def join_pointer(tokens: list[str]) -> str:
    """Join tokens into an RFC 6901 pointer, escaping '~' and '/'."""
    return "".join("/" + t.replace("~", "~0").replace("/", "~1") for t in tokens)
