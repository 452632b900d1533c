"""Structural differences: the changes reported turn the old document into the new one, with
1, 1.0 and true kept apart in objects and lists alike."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from patcher import jsontext
from patcher.structdiff import Change, compare, same
from tests.strategies import documents, plain, trees


def rebuild(old: Any, changes: list[tuple[list[str], Change]]) -> Any:
    """``old`` with ``changes`` made, each read as its pointer says: an old index, except for an
    added list item (its new index)."""
    if not changes:
        return old
    if any(not parts for parts, _ in changes):
        (change,) = [c for parts, c in changes if not parts]
        return change.new
    under: dict[str, list[tuple[list[str], Change]]] = {}
    for parts, change in changes:
        under.setdefault(parts[0], []).append((parts[1:], change))
    if isinstance(old, dict):
        result = {}
        for key, value in old.items():
            here = under.get(key, [])
            if not any(not rest and c.kind == "removed" for rest, c in here):
                result[key] = rebuild(value, here)
        for key, here in under.items():
            for rest, c in here:
                if not rest and c.kind == "added":
                    result[key] = c.new
        return result
    assert isinstance(old, list), (old, changes)
    items = []
    for index, value in enumerate(old):
        here = [(rest, c) for rest, c in under.get(str(index), []) if rest or c.kind != "added"]
        if not any(not rest and c.kind == "removed" for rest, c in here):
            items.append(rebuild(value, here))
    added = sorted(
        (int(key), c.new)
        for key, here in under.items()
        for rest, c in here
        if not rest and c.kind == "added"
    )
    for index, value in added:
        items.insert(index, value)
    return items


def made(old: Any, changes: tuple[Change, ...]) -> Any:
    return rebuild(old, [(jsontext.split_pointer(c.pointer), c) for c in changes])


NUMBERS = (1, True, 1.0, 0, False, 0.0, -0.0)


def retyped(value: Any) -> list[Any]:
    """The values Python's ``==`` calls equal to ``value`` but of another type."""
    return [n for n in NUMBERS if type(n) is not type(value) and n == value]


@st.composite
def document_pairs(draw: Any) -> tuple[Any, Any]:
    """A document and a copy with members and items added, removed, replaced or given another
    type at any depth (``1`` to ``true`` or ``1.0``)."""
    old = plain(draw(documents))
    new = json.loads(json.dumps(old))
    for _ in range(draw(st.integers(0, 4))):
        node = new
        while isinstance(node, (dict, list)) and node and draw(st.booleans()):
            keys = sorted(node) if isinstance(node, dict) else range(len(node))
            child = node[draw(st.sampled_from(keys))]
            if not isinstance(child, (dict, list)):
                break
            node = child
        action = draw(st.sampled_from(["add", "remove", "replace", "retype"]))
        if isinstance(node, list):
            at = draw(st.integers(0, len(node)))
            if action == "add" or not node:
                node.insert(at, plain(draw(trees)))
                continue
            at = min(at, len(node) - 1)
        elif isinstance(node, dict):
            if action == "add" or not node:
                node[draw(st.text(max_size=3))] = plain(draw(trees))
                continue
            at = draw(st.sampled_from(sorted(node)))
        else:
            continue
        if action == "remove":
            del node[at]
        elif action == "replace":
            node[at] = plain(draw(trees))
        elif retyped(node[at]):
            node[at] = draw(st.sampled_from(retyped(node[at])))
        else:
            node[at] = draw(st.sampled_from(NUMBERS))
    return old, new


@settings(max_examples=400, deadline=None)
@given(document_pairs())
def test_the_changes_turn_the_old_document_into_the_new_one(pair: tuple[Any, Any]) -> None:
    old, new = pair
    changes = compare(old, new)
    assert same(made(old, changes), new)
    assert (changes == ()) == same(old, new)
    assert all(c.kind != "changed" or not same(c.old, c.new) for c in changes)


def test_equal_values_of_other_types_are_changes() -> None:
    old = {"a": {"n": 1, "keep": list(range(1000))}, "c": True, "d": {"x": 0}}
    new = {"a": {"n": 1.0, "keep": list(range(1000))}, "c": 1, "d": {"x": False}}
    assert old == new and not same(old, new)  # Python's == alone would call them equal
    assert not same([1, 1], [1, True]) and same([1, {"a": None}], [1, {"a": None}])
    assert [(c.pointer, c.kind, c.old, c.new) for c in compare(old, new)] == [
        ("/a/n", "changed", 1, 1.0),
        ("/c", "changed", True, 1),
        ("/d/x", "changed", 0, False),
    ]


def test_a_changed_member_beside_a_large_equal_one_is_found_without_diffing_it() -> None:
    vocab = {f"token{i}": i for i in range(300_000)}
    old = {"model": {"byte_fallback": False, "vocab": vocab}}
    new = {"model": {"byte_fallback": True, "vocab": dict(vocab)}}
    assert compare(old, new) == (Change("/model/byte_fallback", "changed", False, True),)


def test_a_list_item_given_another_type_is_a_change() -> None:
    # deepdiff alone aligns list items with ``==``: each of these was "no difference".
    assert compare({"eos_token_id": [1, 2]}, {"eos_token_id": [True, 2]}) == (
        Change("/eos_token_id/0", "changed", 1, True),
    )
    assert compare({"a": [[1.0]]}, {"a": [[1]]}) == (Change("/a/0/0", "changed", 1.0, 1),)
    # ... and this one was "added /0: 0".
    assert compare({"a": [0, 1, 2]}, {"a": [0, False, 1, 2]}) == (
        Change("/a/1", "added", None, False),
    )


def test_an_edit_inside_a_long_list_is_found_at_its_index() -> None:
    merges = [f"a{i} b{i}" for i in range(200_000)]
    edited = [*merges[:7], "x y", *merges[7:100], *merges[101:]]
    assert compare({"merges": merges}, {"merges": edited}) == (
        Change("/merges/100", "removed", "a100 b100", None),
        Change("/merges/7", "added", None, "x y"),
    )
