"""``patcher set`` and ``patcher unset``: a one-off edit of one JSON member, journalled.

Anything the catalog does not cover is one command away, as with jq, and stays revertible:
the edit becomes a transform of its own (one ``set`` or ``remove`` op, written out as a
transform file and kept in the journal like any other), named after the file and the pointer,
so ``patcher revert CKPT set-config-json-max-position-embeddings`` (or its entry number) undoes
it byte for byte, and setting the same member again replaces that entry.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, NoReturn

from patcher.errors import TransformError
from patcher.ops.adding import ApplyResult
from patcher.ops.apply import apply
from patcher.text.document import strict_loads
from patcher.text.pointers import PointerError, split_pointer
from patcher.transforms.definition import Transform, parse_transform

_SLUG = re.compile(r"[^a-z0-9]+")
MAX_NAME = 80
MAX_DEPTH = 100  # a config value nests a few levels; the file's editor recurses per level


def one_off_name(verb: str, file: str, pointer: str) -> str:
    """``set-config-json-max-position-embeddings``: the transform name of a one-off edit."""
    slug = _SLUG.sub("-", f"{file} {pointer}".lower()).strip("-")
    return f"{verb}-{slug}"[:MAX_NAME].rstrip("-")


def _value(text: str) -> Any:
    """A JSON value as typed (``65536``, ``true``, ``[1, 2]``, ``"x"``, ``null``); anything
    that is not JSON is the string itself, as a shell user means ``llama``."""
    try:
        json.loads(text)
    except ValueError:
        return text
    except RecursionError:
        return _refuse_depth()
    try:
        value = strict_loads(text)
    except ValueError as exc:  # NaN, Infinity, 1e999: JSON to Python, not in a JSON file
        raise TransformError(
            f"{text!r} cannot be written as JSON ({exc})",
            hint=f"give a finite number, or '\"{text}\"' for the string",
        ) from None
    except RecursionError:
        return _refuse_depth()
    return value


def _check_value(value: Any) -> None:
    """Refuse a value no JSON file should get: nested past ``MAX_DEPTH``, or holding a lone
    surrogate (not Unicode; it cannot be written as UTF-8)."""
    if _depth(value) > MAX_DEPTH:
        _refuse_depth()
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise TransformError(
            "the value holds a lone surrogate (such as \\ud800), which is not Unicode",
            hint="give the character itself, or a surrogate pair (\\ud83d\\ude00)",
        ) from None


def _refuse_depth() -> NoReturn:
    raise TransformError(
        f"the value is nested more than {MAX_DEPTH} deep; patcher sets values up to that",
        hint="give a flatter value",
    )


def _depth(value: Any) -> int:
    """How deep ``value`` nests (1 for a scalar), counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level > MAX_DEPTH:
            break
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        )
        stack += [(child, level + 1) for child in children]
    return deepest


def one_off_transform(verb: str, file: str, pointer: str, value: Any = None) -> Transform:
    """The transform that sets (``verb`` "set") or removes ("unset") ``pointer`` in ``file``."""
    if "/" in file or file in ("", ".", "..") or not file.isprintable() or file != file.strip():
        raise TransformError(
            f"{file!r} is not a file name of the checkpoint",
            hint="name a config file such as config.json (no folders, spaces or control "
            "characters around it)",
        )
    try:
        parts = split_pointer(pointer)
    except PointerError as exc:
        raise TransformError(
            f"{pointer!r} is not a JSON pointer ({exc})", hint="e.g. /max_position_embeddings"
        ) from None
    if not parts:
        raise TransformError(
            "the pointer names the whole document", hint="name a member, e.g. /eos_token_id"
        )
    if verb == "set":
        _check_value(value)
    name = one_off_name(verb, file, pointer)
    op: dict[str, Any]
    if verb == "set":
        op = {"op": "set", "path": pointer, "value_json": json.dumps(value)}
        summary = f"Set {pointer} in {file} to {json.dumps(value)[:200]} (patcher set)."
    else:
        op = {"op": "remove", "path": pointer, "if_present": True}
        summary = f"Remove {pointer} from {file} (patcher unset)."
    text = "\n".join(
        [
            f"name = {json.dumps(name)}",
            f"summary = {json.dumps(summary)}",
            'why = "A one-off edit made with patcher set or unset."',
            'undo_when = "When the edit is no longer wanted: patcher revert CKPT NAME."',
            "",
            "[[edits]]",
            f"file = {json.dumps(file)}",
            "ops = [{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in op.items()) + " }]",
            "",
        ]
    )
    return parse_transform(text, f"patcher {verb}")


def set_member(
    checkpoint: Path | str,
    file: str,
    pointer: str,
    value: str | Any,
    *,
    dry_run: bool = False,
    parse: bool = True,
) -> ApplyResult:
    """Set ``pointer`` in ``file`` to ``value`` as a journalled entry of its own (``parse``:
    ``value`` is text, read as JSON where it is JSON, else a string)."""
    chosen = _value(value) if parse and isinstance(value, str) else value
    return apply(checkpoint, one_off_transform("set", file, pointer, chosen), dry_run=dry_run)


def unset_member(
    checkpoint: Path | str, file: str, pointer: str, *, dry_run: bool = False
) -> ApplyResult:
    """Remove ``pointer`` from ``file`` as a journalled entry of its own."""
    return apply(checkpoint, one_off_transform("unset", file, pointer), dry_run=dry_run)
