"""The op kinds registry: every kind a transform may name resolves, through one signature,
to the plain RFC 6902 ops the journal records (or to none when there is nothing to do)."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from patcher.errors import DoesNotApplyError
from patcher.text.jsontext import JsonText
from patcher.transforms import definition
from patcher.transforms.op_kinds import OP_KINDS, OpKind, Resolving

DOC = b'{"a": 1, "list": [1, 2, 1], "obj": {"x": 1}}'


def _resolve(op: dict[str, Any]) -> list[dict[str, Any]]:
    doc = JsonText(DOC)

    def fail(pointer: str, problem: str) -> DoesNotApplyError:
        return DoesNotApplyError(problem, file="config.json", pointer=pointer)

    def resolve(other: dict[str, Any]) -> list[dict[str, Any]]:
        return OP_KINDS[other["op"]](ctx, other)

    ctx = Resolving(doc, fail, resolve)
    return resolve(op)


def test_the_registry_is_the_closed_set_transforms_may_name() -> None:
    assert set(OP_KINDS) == set(get_args(OpKind))
    assert set(definition.ALL_OPS) == set(OP_KINDS) | set(definition.TEXT_OPS)


@pytest.mark.parametrize(
    ("op", "resolved"),
    [
        ({"op": "set", "path": "/a", "value": 2}, [{"op": "replace", "path": "/a", "value": 2}]),
        ({"op": "set", "path": "/a", "value": 1}, []),  # already so
        ({"op": "set", "path": "/b", "value": 2}, [{"op": "add", "path": "/b", "value": 2}]),
        ({"op": "add", "path": "/a", "value": 5, "if_absent": True}, []),
        ({"op": "remove", "path": "/b", "if_present": True}, []),
        (
            {"op": "replace", "path": "/a", "value": 3},
            [{"op": "replace", "path": "/a", "value": 3}],
        ),
        (
            {"op": "merge", "path": "/obj", "value": {"x": 1, "y": 2}},
            [{"op": "add", "path": "/obj/y", "value": 2}],
        ),
        ({"op": "append", "path": "/list", "value": 2}, []),
        (
            {"op": "append", "path": "/list", "value": 3},
            [{"op": "add", "path": "/list/-", "value": 3}],
        ),
        (
            {"op": "discard", "path": "/list", "value": 1},
            [{"op": "remove", "path": "/list/2"}, {"op": "remove", "path": "/list/0"}],
        ),
        (
            {"op": "move", "path": "/b", "from": "/a"},
            [{"op": "remove", "path": "/a"}, {"op": "add", "path": "/b", "value": 1}],
        ),
        ({"op": "copy", "path": "/b", "from": "/a"}, [{"op": "add", "path": "/b", "value": 1}]),
        ({"op": "test", "path": "/a", "value": 1}, [{"op": "test", "path": "/a", "value": 1}]),
    ],
)
def test_each_kind_resolves_to_plain_rfc_6902(
    op: dict[str, Any], resolved: list[dict[str, Any]]
) -> None:
    assert _resolve(op) == resolved


@pytest.mark.parametrize(
    ("op", "problem"),
    [
        ({"op": "remove", "path": "/b"}, "nothing to remove here"),
        ({"op": "append", "path": "/a", "value": 1}, "expected an array, found 1"),
        ({"op": "move", "path": "/obj/x/y", "from": "/obj"}, "cannot move /obj into itself"),
        ({"op": "merge", "path": "/obj", "value": 3}, "'merge' needs an object"),
    ],
)
def test_a_kind_that_cannot_apply_refuses_naming_the_pointer(
    op: dict[str, Any], problem: str
) -> None:
    with pytest.raises(DoesNotApplyError, match=problem):
        _resolve(op)
