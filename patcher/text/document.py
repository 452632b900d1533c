"""Config file text: strict UTF-8 decoding, and a type-exact canonical form of JSON values."""

from __future__ import annotations

import json
import math
from typing import Any

from patcher.errors import InputFileError

Op = dict[str, Any]  # one RFC 6902 operation


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # what ``get`` returns where a pointer leads nowhere
BOM = b"\xef\xbb\xbf"  # UTF-8 byte-order mark: json.loads takes bytes with it, engines' text not


def get(doc: Any, pointer: str) -> Any:
    """The value at ``pointer`` of a parsed document, or ``MISSING``."""
    import jsonpointer

    try:
        return jsonpointer.resolve_pointer(doc, pointer, MISSING)
    except jsonpointer.JsonPointerException:
        return MISSING


def exists(doc: Any, pointer: str) -> bool:
    """Whether ``pointer`` leads to a value in ``doc``."""
    return get(doc, pointer) is not MISSING


def decode_text(data: bytes, file: str, hint: str) -> str:
    """Decode ``data`` as strict UTF-8, refusing anything else with the byte offset."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise not_utf8(data, exc.start, file, hint) from None


def not_utf8(data: bytes, offset: int, file: str, hint: str) -> InputFileError:
    """The refusal of a file that is not UTF-8, naming the first bad byte."""
    return InputFileError(
        f"not UTF-8 (byte {offset}: {data[offset : offset + 1]!r})", file=file, hint=hint
    )


def json_problem(exc: BaseException) -> str:
    """What a JSON (or TOML) parse failure means, for a one-line message."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to parse (past Python's recursion limit)"
    text = str(exc)
    if "integer string conversion" in text:
        return "an integer with more than 4,300 digits (Python's limit; patcher's CLI lifts it)"
    return text.splitlines()[0] if text else type(exc).__name__


def shown(value: Any, limit: int = 40) -> str:
    """A JSON value as a one-line message shows it: its JSON text, cut to ``limit``
    characters; an integer past 64 bits by its number of digits."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        try:
            return f"an integer of {len(str(abs(value)))} digits"
        except ValueError:  # past Python's digit limit, which only the CLI lifts
            return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def canonical(value: Any) -> str:
    """A type-exact canonical form (``true`` differs from ``1``; key order is ignored)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=True, allow_nan=True)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is past a float's range (it would be written as Infinity)")
    return value


def strict_loads(text: str) -> Any:
    """JSON text as a value to write: NaN, Infinity and numbers past a float's range are
    refused (ValueError), as a file holding them would not be JSON."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
