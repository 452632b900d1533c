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
from typing import Any

from patcher import jsontext
from patcher.document import Op, canonical, exists, get
from patcher.errors import ConflictError


@dataclass(frozen=True, slots=True)
class Replayed:
    """The new text, and the steps whose guards no longer held (skipped)."""

    text: str
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


def _problem(doc: Any, group: list[Op]) -> str | None:
    for op in group:
        path = op["path"]
        value = get(doc, path)
        if op["op"] == "test":
            if not exists(doc, path) or canonical(value) != canonical(op["value"]):
                return f"expected {json.dumps(op['value'])[:60]} at {path or '/'}"
        elif op["op"] in ("remove", "replace") and not exists(doc, path):
            return f"nothing at {path}"
        elif op["op"] == "add":
            tokens = jsontext.split_pointer(path)
            parent = get(doc, jsontext.join_pointer(tokens[:-1]))
            guarded = any(t["op"] == "test" and t["path"] == path for t in group[:-1])
            if isinstance(parent, dict) and tokens[-1] in parent and not guarded:
                return f"{path} is already present"
            if not isinstance(parent, dict | list):
                return f"no object at {jsontext.join_pointer(tokens[:-1]) or '/'}"
    return None


def replay(text: str, ops: Sequence[Op], *, file: str, strict: bool, hint: str) -> Replayed:
    """Apply ``ops`` to the JSON ``text`` with minimal edits. Strict: a failed guard raises a
    ConflictError; otherwise that step is skipped and reported."""
    import jsonpatch  # off the start-up of a revert that puts back the original bytes

    doc = json.loads(text[1:] if text.startswith("\ufeff") else text)
    edited = jsontext.JsonText(text)  # one scan, kept across the ops
    skipped: list[Op] = []
    for group in _groups(ops):
        problem = _problem(doc, group)
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
        op = group[-1]
        if op["op"] == "test":
            continue
        clean = {k: v for k, v in op.items() if not k.startswith("x-")}
        edited.apply_op(op)
        doc = jsonpatch.JsonPatch([clean]).apply(doc, in_place=True)
    return Replayed(edited.text, tuple(skipped))


def first_difference(expected: Any, actual: Any, pointer: str = "") -> str | None:
    """The JSON pointer of the first place two documents differ, or None when equal."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in [*expected, *(k for k in actual if k not in expected)]:
            sub = pointer + jsontext.join_pointer([key])
            if key not in expected or key not in actual:
                return sub
            found = first_difference(expected[key], actual[key], sub)
            if found is not None:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        for index, (a, b) in enumerate(zip(expected, actual, strict=True)):
            found = first_difference(a, b, f"{pointer}/{index}")
            if found is not None:
                return found
        return None
    return None if canonical(expected) == canonical(actual) else pointer
