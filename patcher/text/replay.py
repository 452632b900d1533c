"""Replaying recorded RFC 6902 patches on file text, with their guards.

Used to revert under later transforms, to force a revert past hand edits, and to show what a
file should look like. Each non-``test`` op is guarded by the ``test`` ops before it, and an
``add`` of an object member additionally requires the member to be absent (JSON Patch has no
"test absent").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from patcher.errors import ConflictError, InputFileError
from patcher.text import jsontext, pointers, scanner
from patcher.text.document import MISSING, Op, canonical, json_problem, not_utf8


@dataclass(frozen=True, slots=True)
class Replayed:
    """The new bytes, and the steps whose guards no longer held (skipped)."""

    data: bytes
    skipped: tuple[Op, ...]


def _groups(ops: Sequence[Op]) -> list[list[Op]]:
    groups: list[list[Op]] = []
    pending: list[Op] = []
    for op in ops:
        pending.append(op)
        if op["op"] != "test":
            groups.append(pending)
            pending = []
    if pending:
        groups.append(pending)
    return groups


def _problem(doc: jsontext.JsonText, group: list[Op]) -> str | None:
    """Why ``group`` cannot run on ``doc`` (its guards, read from the bytes at their paths
    only), or None."""
    for op in group:
        path = op["path"]
        if op["op"] == "test":
            value = doc.get(path)
            if value is MISSING or canonical(value) != canonical(op["value"]):
                return f"expected {json.dumps(op['value'])[:60]} at {path or '/'}"
        elif op["op"] in ("remove", "replace") and doc.kind(path) is None:
            return f"nothing at {path}"
        elif op["op"] == "add":
            tokens = pointers.split_pointer(path)
            parent = doc.kind(pointers.join_pointer(tokens[:-1]))
            guarded = any(t["op"] == "test" and t["path"] == path for t in group[:-1])
            if parent == "object" and doc.kind(path) is not None and not guarded:
                return f"{path} is already present"
            if parent not in ("object", "array"):
                return f"no object at {pointers.join_pointer(tokens[:-1]) or '/'}"
    return None


_FIX = "fix the file by hand, then run the command again"


def replay(
    data: bytes | jsontext.JsonText,
    ops: Sequence[Op],
    *,
    file: str,
    strict: bool,
    hint: str,
) -> Replayed:
    """Apply ``ops`` to the JSON ``data`` with minimal edits, on its bytes: nothing but the
    values at the ops' paths is parsed. Strict: a failed guard raises a ConflictError;
    otherwise that step is skipped and reported. A file that is not JSON (or holds a key twice
    on a path) is refused."""
    # One scan, kept across the ops (a JsonText given is forked, and keeps its scan too).
    edited = data.fork() if isinstance(data, jsontext.JsonText) else jsontext.JsonText(data)
    skipped: list[Op] = []
    bad = scanner.check_utf8(edited.data)
    if bad is not None:
        raise not_utf8(edited.data, bad, file, _FIX)
    try:
        # The whole file is validated once, scanning the containers on the ops' paths.
        edited.prepare([op[key] for op in ops for key in ("path", "from") if key in op])
        for group in _groups(ops):
            problem = _problem(edited, group)
            if problem is not None:
                if strict:
                    raise ConflictError(
                        f"cannot undo safely: {problem}",
                        file=file,
                        pointer=group[-1]["path"],
                        hint=hint,
                    )
                skipped.extend(op for op in group if op["op"] != "test")
                continue
            if group[-1]["op"] != "test":
                edited.apply_op(group[-1])
    except scanner.JsonSyntaxError as exc:
        raise InputFileError(f"invalid JSON at {exc}", file=file, hint=_FIX) from None
    except jsontext.DuplicateKeyError as exc:
        raise exc.refusal(file) from None
    except (RecursionError, ValueError) as exc:
        raise InputFileError(json_problem(exc), file=file, hint=_FIX) from None
    return Replayed(edited.data, tuple(skipped))
