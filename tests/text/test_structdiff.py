"""Structural differences: the changes reported turn the old document into the new one, with
1, 1.0 and true kept apart in objects and lists alike."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patcher.text import pointers
from patcher.text.structdiff import Change, compare, compare_json, same
from tests.strategies import documents, plain, render, trees
from tests.text.test_jsontext import skipper  # noqa: F401 (a fixture)


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
    return rebuild(old, [(pointers.split_pointer(c.pointer), c) for c in changes])


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


def _spelled(data: st.DataObject, value: Any, like: tuple[int | None, bool] | None) -> bytes:
    """``value`` as JSON text: in one ``json.dumps`` style when ``like`` says which (so equal
    parts of two documents are spelled alike), else in a drawn layout per container."""
    if like is None:
        return render(data, value).encode("utf-8")
    indent, ascii_only = like
    return json.dumps(value, indent=indent, ensure_ascii=ascii_only).encode("utf-8")


@pytest.mark.usefixtures("skipper")
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(document_pairs(), st.data())
def test_comparing_the_texts_finds_what_comparing_the_parsed_documents_does(
    pair: tuple[Any, Any], data: st.DataObject
) -> None:
    """With the values off the path skipped each way (the C scanner, or without it)."""
    old, new = pair
    like = data.draw(st.one_of(st.none(), st.tuples(st.sampled_from([None, 0, 2]), st.booleans())))
    old_text, new_text = _spelled(data, old, like), _spelled(data, new, like)
    expected = compare(json.loads(old_text), json.loads(new_text))
    assert compare_json(old_text, new_text) == expected


def test_only_the_values_that_differ_are_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    vocab = {f"token{i}": i for i in range(50_000)}
    old = json.dumps({"model": {"byte_fallback": False, "vocab": vocab}}, indent=2).encode()
    new = old.replace(b'"byte_fallback": false', b'"byte_fallback": true')
    parsed: list[int] = []
    loads = json.loads

    def counting(text: str | bytes, **kwargs: Any) -> Any:
        parsed.append(len(text))
        return loads(text, **kwargs)

    monkeypatch.setattr(json, "loads", counting)
    assert compare_json(old, new) == (Change("/model/byte_fallback", "changed", False, True),)
    assert sum(parsed) < 20, parsed  # "false" and "true", not the 1 MB vocab


def test_an_edit_inside_a_long_list_of_a_text_is_found_at_its_index() -> None:
    merges = [f"a{i} b{i}" for i in range(20_000)]
    edited = [*merges[:7], "x y", *merges[7:100], *merges[101:]]
    old, new = (json.dumps({"merges": m}, indent=2).encode() for m in (merges, edited))
    assert compare_json(old, new) == (
        Change("/merges/100", "removed", "a100 b100", None),
        Change("/merges/7", "added", None, "x y"),
    )


def test_values_spelled_otherwise_are_the_same_values() -> None:
    old = b'{"a": 1.0, "b": {"x": [1, 2], "y": "\\u00e9"}, "c": 1e2}'
    new = b'{"c":100.0,"b":{"y":"\xc3\xa9","x":[1,2]},"a":1.00}'
    assert compare_json(old, new) == ()
    assert compare_json(b'{"a": 1}', b'{"a": 1.0}') == (Change("/a", "changed", 1, 1.0),)


def test_texts_the_bytes_cannot_settle_are_parsed_whole() -> None:
    bom = b"\xef\xbb\xbf"
    # A byte-order mark: json.loads of bytes skips it, so the values compare as usual.
    assert compare_json(bom + b'{"a": 1}', b'{"a": 2}') == (Change("/a", "changed", 1, 2),)
    # A duplicate key: the last one counts, as json.loads has it.
    assert compare_json(b'{"a": 1, "a": 3}', b'{"a": 2}') == (Change("/a", "changed", 3, 2),)
    # Not UTF-8: the caller's loads decides (diff reads the bad byte as U+FFFD).
    lenient = compare_json(
        b'{"a": "\xff", "b": 1}',
        b'{"a": "\xff", "b": 2}',
        loads=lambda data: json.loads(data.decode("utf-8", "replace")),
    )
    assert lenient == (Change("/b", "changed", 1, 2),)
    # Not JSON: raises as json.loads does.
    with pytest.raises(ValueError):
        compare_json(b'{"a": 1,}', b'{"a": 2}')
