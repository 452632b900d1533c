"""Structural differences: the walk that skips equal members reports what deepdiff reports on
the whole documents, and keeps 1, 1.0 and true apart."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from patcher import jsontext, structdiff
from patcher.structdiff import Change, compare, same
from tests.strategies import documents, plain, trees


def whole_deepdiff(old: Any, new: Any) -> tuple[Change, ...]:
    """What ``compare`` returned before the walk: one deepdiff of the whole documents."""
    from deepdiff import DeepDiff

    kinds = structdiff._KINDS
    tree = DeepDiff(old, new, threshold_to_diff_deeper=0, view="tree", verbose_level=2)
    found = [
        Change(
            jsontext.join_pointer([str(t) for t in level.path(output_format="list")]),
            kinds[report],
            None if kinds[report] == "added" else level.t1,
            None if kinds[report] == "removed" else level.t2,
        )
        for report, levels in tree.items()
        if report in kinds
        for level in levels
    ]
    return tuple(sorted(found, key=lambda c: c.pointer))


@st.composite
def document_pairs(draw: Any) -> tuple[Any, Any]:
    """A document and a copy with members added, removed or replaced at any depth."""
    old = plain(draw(documents))
    new = json.loads(json.dumps(old))
    for _ in range(draw(st.integers(0, 4))):
        node = new
        while isinstance(node, dict) and node and draw(st.booleans()):
            child = node[draw(st.sampled_from(sorted(node)))]
            if not isinstance(child, dict):
                break
            node = child
        if not isinstance(node, dict):
            continue
        action = draw(st.sampled_from(["add", "remove", "replace"]))
        if action == "add" or not node:
            node[draw(st.text(max_size=3))] = plain(draw(trees))
        elif action == "remove":
            del node[draw(st.sampled_from(sorted(node)))]
        else:
            node[draw(st.sampled_from(sorted(node)))] = plain(draw(trees))
    return old, new


@settings(max_examples=300, deadline=None)
@given(document_pairs())
def test_the_walk_reports_what_deepdiff_reports_on_the_whole(pair: tuple[Any, Any]) -> None:
    old, new = pair
    assert compare(old, new) == whole_deepdiff(old, new)


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
