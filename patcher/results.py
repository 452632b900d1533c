"""What every library result shares: a short ``repr`` (sizes, not bytes) and ``to_json()``,
which gives the same JSON as the CLI's ``--json``. A leaf: results own their JSON, and the
CLI only turns them into text."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any


def _short(value: Any) -> str:
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, Path):
        return repr(str(value))
    if type(value).__name__ == "Transform":
        return f"<transform {value.name}>"
    if isinstance(value, tuple | list) and len(value) > 3:
        return f"<{len(value)} items>"
    if isinstance(value, tuple | list):
        inner = ", ".join(_short(v) for v in value)
        return f"({inner},)" if isinstance(value, tuple) and len(value) == 1 else f"({inner})"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class ShortRepr:
    """A ``repr`` that names each field and shows bytes as their size."""

    __slots__ = ()

    def __repr__(self) -> str:
        assert dataclasses.is_dataclass(self)
        fields = ", ".join(
            f"{f.name}={_short(getattr(self, f.name))}" for f in dataclasses.fields(self) if f.repr
        )
        return f"{type(self).__name__}({fields})"


class JsonResult(ShortRepr):
    """A result with ``to_json()``: the CLI's ``--json`` document for it, as a dict."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        """The same JSON as the CLI's ``--json`` for this result (each result defines it)."""
        raise NotImplementedError(type(self).__name__)
