"""The JSON op kinds a transform's edit may use, each resolved against the document's current
values into plain RFC 6902 ops: a registry, one signature.

The RFC 6902 kinds (``add``, ``remove``, ``replace``, ``move``, ``copy``, ``test``) and the
lenient ones (``set``, ``merge``, ``append``, ``discard``) all resolve here; an op that has
nothing to do (a value already there, ``if_present`` on an absent member) resolves to none.
The recorded patch is plain RFC 6902 (the compiler adds each ``test`` guard and the inverse).

How to add an op kind: write ``_resolve_x(ctx, op) -> list[Op]`` (``ctx.doc`` is the document,
``ctx.fail(pointer, problem)`` the refusal, ``ctx.resolve(op)`` another op resolved, for a kind
built of others), add it to ``OP_KINDS`` and its name to ``OpKind``, describe it in
docs/transform-format.md, and test it in tests/transforms/test_op_kinds.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

from patcher.errors import DoesNotApplyError
from patcher.text import pointers
from patcher.text.document import MISSING, Op, canonical

OpKind = Literal[
    "add", "remove", "replace", "move", "copy", "test", "set", "merge", "append", "discard"
]


@dataclass(frozen=True, slots=True)
class Resolving:
    """What an op kind resolves against: the document and how to refuse (and, for a kind
    built of others, how to resolve another op)."""

    doc: Any  # the file's JsonText
    fail: Callable[[str, str], DoesNotApplyError]  # (pointer, problem)
    resolve: Callable[[Op], list[Op]]


def described(value: Any) -> str:
    """A value as messages show it: its JSON, cut at 60 characters, or "nothing"."""
    if value is MISSING:
        return "nothing"
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _present(ctx: Resolving, op: Op) -> tuple[Any, bool, bool]:
    """The current value, whether it is there (``ignore_null``: a null is not), and whether
    it already equals the op's value."""
    current = ctx.doc.get(op["path"])
    present = current is not MISSING and not (op.get("ignore_null") and current is None)
    same = "value" in op and present and canonical(current) == canonical(op["value"])
    return current, present, same


def _remove(ctx: Resolving, op: Op) -> list[Op]:
    if not _present(ctx, op)[1]:
        if op.get("if_present"):
            return []
        raise ctx.fail(op["path"], "nothing to remove here")
    return [{"op": "remove", "path": op["path"]}]


def _replace(ctx: Resolving, op: Op) -> list[Op]:
    _, present, same = _present(ctx, op)
    if not present:
        if op.get("if_present"):
            return []
        raise ctx.fail(op["path"], "nothing to replace here")
    return [] if same else [{"op": "replace", "path": op["path"], "value": op["value"]}]


def _add(ctx: Resolving, op: Op) -> list[Op]:
    _, present, same = _present(ctx, op)
    if present and (same or op.get("if_absent")):
        return []
    if op["op"] == "set" and present:
        return [{"op": "replace", "path": op["path"], "value": op["value"]}]
    return [{"op": "add", "path": op["path"], "value": op["value"]}]


def _merge(ctx: Resolving, op: Op) -> list[Op]:
    if not isinstance(op["value"], dict):
        raise ctx.fail(op["path"], "'merge' needs an object of members to set")
    merged: list[Op] = []
    for key, value in op["value"].items():
        member = op["path"] + pointers.join_pointer([key])
        merged += ctx.resolve({"op": "set", "path": member, "value": value})
    return merged


def _array(ctx: Resolving, op: Op) -> list[Any]:
    current = ctx.doc.get(op["path"])
    if not isinstance(current, list):
        raise ctx.fail(op["path"], f"expected an array, found {described(current)}")
    return current


def _append(ctx: Resolving, op: Op) -> list[Op]:
    if canonical(op["value"]) in {canonical(v) for v in _array(ctx, op)}:
        return []
    return [{"op": "add", "path": op["path"] + "/-", "value": op["value"]}]


def _discard(ctx: Resolving, op: Op) -> list[Op]:
    """append's inverse: every element equal to the value goes."""
    wanted = canonical(op["value"])
    found = [i for i, v in enumerate(_array(ctx, op)) if canonical(v) == wanted]
    return [{"op": "remove", "path": f"{op['path']}/{i}"} for i in reversed(found)]


def _test(_ctx: Resolving, op: Op) -> list[Op]:
    return [{"op": "test", "path": op["path"], "value": op["value"]}]


def _move_or_copy(ctx: Resolving, op: Op) -> list[Op]:
    kind, path = op["op"], op["path"]
    if kind == "move" and path.startswith(op["from"] + "/"):
        # RFC 6902 4.4: a value cannot be moved into one of its own children.
        raise ctx.fail(path, f"cannot move {op['from']} into itself")
    source = ctx.doc.get(op["from"])
    if source is MISSING:
        raise ctx.fail(op["from"], f"nothing to {kind} here")
    ops: list[Op] = [{"op": "remove", "path": op["from"]}] if kind == "move" else []
    return [*ops, {"op": "add", "path": path, "value": source}]


Resolve = Callable[[Resolving, Op], list[Op]]
OP_KINDS: dict[str, Resolve] = {
    "add": _add,
    "remove": _remove,
    "replace": _replace,
    "move": _move_or_copy,
    "copy": _move_or_copy,
    "test": _test,
    "set": _add,
    "merge": _merge,
    "append": _append,
    "discard": _discard,
}
assert set(OP_KINDS) == set(get_args(OpKind))
