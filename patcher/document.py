"""Reading a config file: strict UTF-8, JSON with line and column in every error."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from patcher.errors import InputFileError


@dataclass(frozen=True, slots=True)
class JsonDocument:
    """A JSON file's text (exactly its bytes, decoded) and its parsed value."""

    text: str
    value: Any


def decode_text(data: bytes, file: str, hint: str) -> str:
    """Decode ``data`` as strict UTF-8, refusing anything else with the byte offset."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputFileError(
            f"not UTF-8 (byte {exc.start}: {data[exc.start : exc.start + 1]!r})",
            file=file,
            hint=hint,
        ) from None


def parse_json(data: bytes, file: str, hint: str) -> JsonDocument:
    """Parse ``data`` as a JSON document, with line and column on failure."""
    text = decode_text(data, file, hint)
    try:
        value = json.loads(text[1:] if text.startswith("\ufeff") else text)
    except json.JSONDecodeError as exc:
        raise InputFileError(
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
            file=file,
            hint=hint,
        ) from None
    return JsonDocument(text, value)


def canonical(value: Any) -> str:
    """A type-exact canonical form (``true`` differs from ``1``; key order is ignored)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=True, allow_nan=True)
