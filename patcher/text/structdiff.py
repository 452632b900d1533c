"""Structural differences between two JSON documents, as JSON pointers (via deepdiff)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from patcher.text import jsontext, pointers, scanner
from patcher.text.document import BOM

ChangeKind = Literal["added", "removed", "changed"]
# What deepdiff reports about two lists of item spellings (see ``_align``).
_KINDS: dict[str, ChangeKind] = {
    "iterable_item_added": "added",
    "iterable_item_removed": "removed",
    "values_changed": "changed",
}
_ABSENT = None


@dataclass(frozen=True, slots=True)
class Change:
    """One difference: where, what kind, and the values on each side (None when absent)."""

    pointer: str
    kind: ChangeKind
    old: Any
    new: Any


def same(old: Any, new: Any) -> bool:
    """Type-exact equality of two parsed JSON values (``1``, ``1.0`` and ``true`` differ),
    without serialising them: Python's ``==`` in C, then a walk over the types only."""
    if old is new:
        return True
    if type(old) is not type(new) or old != new:
        return False
    if isinstance(old, dict):
        return all(same(value, new[key]) for key, value in old.items())
    if isinstance(old, list):
        return all(map(same, old, new))
    return True


def compare(old: Any, new: Any) -> tuple[Change, ...]:
    """Every difference from ``old`` to ``new``, ordered by pointer.

    Objects are walked here and members equal on both sides skipped, and so are the items
    equal at both ends of a list, so deepdiff only aligns the items of a list that differ:
    comparing a 15 MB ``tokenizer.json`` costs a walk over it, not a deepdiff of its vocab
    (20 s). Equality is type-exact everywhere, in lists too."""
    changes: list[Change] = []
    if not same(old, new):
        _walk(old, new, [], changes)
    return tuple(sorted(changes, key=lambda c: c.pointer))


def compare_json(
    old: bytes | jsontext.JsonText,
    new: bytes | jsontext.JsonText,
    loads: Callable[[bytes], Any] = json.loads,
) -> tuple[Change, ...]:
    """``compare(loads(old), loads(new))`` for two JSON texts, at the cost of the bytes that
    differ rather than of the files. A caller that reads more of the texts afterwards passes
    them as ``JsonText``, whose scan this then leaves for it.

    A value spelled the same on both sides is the same value, so it is compared by its bytes
    (in place) and never parsed: only the containers on the way to a difference are scanned
    (their other values skipped by the scanner, in C where it is built), and only the values
    that differ are parsed. One edit of a 15 MB ``tokenizer.json`` parses a few bytes, where
    parsing both whole took about 1.2 s and 200 MB. Where the bytes alone cannot settle it
    (a byte-order mark, text that is not UTF-8, a duplicate key on the way, not JSON) both are
    parsed whole with ``loads``, which raises as it does."""
    a = old if isinstance(old, jsontext.JsonText) else jsontext.JsonText(old)
    b = new if isinstance(new, jsontext.JsonText) else jsontext.JsonText(new)
    try:
        changes = _compare_texts(a, b)
    except (
        scanner.JsonSyntaxError,
        jsontext.DuplicateKeyError,
        pointers.PointerError,
        ValueError,
        RecursionError,
    ):
        changes = None
    return compare(loads(a.data), loads(b.data)) if changes is None else changes


def _compare_texts(a: jsontext.JsonText, b: jsontext.JsonText) -> tuple[Change, ...] | None:
    for data in (a.data, b.data):
        if data.startswith(BOM) or scanner.check_utf8(data) is not None:
            return None
    a.prepare([])
    b.prepare([])
    changes: list[Change] = []
    _walk_texts(a, b, a.span(""), b.span(""), [], changes)
    return tuple(sorted(changes, key=lambda c: c.pointer))


Span = tuple[int, int]


def _spelled_alike(a: jsontext.JsonText, at: Span, b: jsontext.JsonText, bt: Span) -> bool:
    if at[1] - at[0] != bt[1] - bt[0]:
        return False
    with memoryview(b.data) as view:
        return a.data.startswith(view[bt[0] : bt[1]], at[0])


def _parsed(doc: jsontext.JsonText, span: Span) -> Any:
    return json.loads(doc.data[span[0] : span[1]])


def _alike(a: jsontext.JsonText, at: Span, b: jsontext.JsonText, bt: Span) -> bool:
    """``same`` for two values in the texts: by their bytes, and parsed only if those differ."""
    return _spelled_alike(a, at, b, bt) or same(_parsed(a, at), _parsed(b, bt))


def _walk_texts(
    a: jsontext.JsonText,
    b: jsontext.JsonText,
    at: Span,
    bt: Span,
    path: list[str],
    changes: list[Change],
) -> None:
    """``_walk`` over two values located in the texts (pairs spelled alike are skipped)."""
    if _spelled_alike(a, at, b, bt):
        return
    opener, other = a.data[at[0]], b.data[bt[0]]
    pointer = pointers.join_pointer(path)
    if opener == other == 0x7B:  # two objects
        mine, theirs = a.container_at(at[0], pointer), b.container_at(bt[0], pointer)
        kept = {slot.key: slot for slot in theirs.slots}
        for slot in mine.slots:
            assert slot.key is not None
            match = kept.get(slot.key)
            here = [*path, slot.key]
            span = (slot.value_start, slot.value_end)
            if match is None:
                changes.append(
                    Change(pointers.join_pointer(here), "removed", _parsed(a, span), _ABSENT)
                )
            else:
                _walk_texts(a, b, span, (match.value_start, match.value_end), here, changes)
        keys = {slot.key for slot in mine.slots}
        for slot in theirs.slots:
            if slot.key not in keys:
                assert slot.key is not None
                value = _parsed(b, (slot.value_start, slot.value_end))
                changes.append(
                    Change(pointers.join_pointer([*path, slot.key]), "added", _ABSENT, value)
                )
    elif opener == other == 0x5B:  # two arrays
        olds = [(s.value_start, s.value_end) for s in a.container_at(at[0], pointer).slots]
        news = [(s.value_start, s.value_end) for s in b.container_at(bt[0], pointer).slots]
        start, old_end, new_end = 0, len(olds), len(news)
        while start < min(old_end, new_end) and _alike(a, olds[start], b, news[start]):
            start += 1
        while (
            old_end > start
            and new_end > start
            and _alike(a, olds[old_end - 1], b, news[new_end - 1])
        ):
            old_end, new_end = old_end - 1, new_end - 1
        if old_end - start == 1 and new_end - start == 1:
            _walk_texts(a, b, olds[start], news[start], [*path, str(start)], changes)
            return
        old_items = [_parsed(a, span) for span in olds[start:old_end]]
        new_items = [_parsed(b, span) for span in news[start:new_end]]
        _align(old_items, new_items, start, path, changes)
    else:
        old_value, new_value = _parsed(a, at), _parsed(b, bt)
        if not same(old_value, new_value):
            _walk(old_value, new_value, path, changes)


def _walk(old: Any, new: Any, path: list[str], changes: list[Change]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key, value in old.items():
            if key not in new:
                changes.append(
                    Change(pointers.join_pointer([*path, key]), "removed", value, _ABSENT)
                )
            elif not same(value, new[key]):
                _walk(value, new[key], [*path, key], changes)
        for key, value in new.items():
            if key not in old:
                changes.append(Change(pointers.join_pointer([*path, key]), "added", _ABSENT, value))
    elif isinstance(old, list) and isinstance(new, list):
        _walk_list(old, new, path, changes)
    else:
        changes.append(Change(pointers.join_pointer(path), "changed", old, new))


def _walk_list(old: list[Any], new: list[Any], path: list[str], changes: list[Change]) -> None:
    """Items kept at both ends are skipped here; deepdiff aligns what is left between them."""
    start, old_end, new_end = 0, len(old), len(new)
    while start < min(old_end, new_end) and same(old[start], new[start]):
        start += 1
    while old_end > start and new_end > start and same(old[old_end - 1], new[new_end - 1]):
        old_end, new_end = old_end - 1, new_end - 1
    if old_end - start == 1 and new_end - start == 1:
        _walk(old[start], new[start], [*path, str(start)], changes)
        return
    _align(old[start:old_end], new[start:new_end], start, path, changes)


def _align(
    old: list[Any], new: list[Any], start: int, path: list[str], changes: list[Change]
) -> None:
    """The changes between the differing middles of two lists, which begin at index ``start``.

    deepdiff aligns list items with ``==`` and hashes, under which ``1``, ``1.0`` and ``true``
    are one value: ``[1, 2]`` to ``[true, 2]`` was no difference at all. So it is given each
    item's canonical JSON text, which keeps them apart, and the pairs it matches are walked
    here. Pointers name the old index, except for an added item (the new one), as deepdiff's."""
    from deepdiff import DeepDiff  # imported here: only diff commands pay for it

    tree = DeepDiff(
        [_spelling(item) for item in old],
        [_spelling(item) for item in new],
        threshold_to_diff_deeper=0,
        view="tree",
        verbose_level=2,
    )
    for report, levels in tree.items():
        kind = _KINDS.get(report)
        for level in levels:
            in_old = int(level.path(output_format="list")[0])
            in_new = int(level.path(use_t2=True, output_format="list")[0])
            at_old, at_new = start + in_old, start + in_new
            if kind == "removed":
                changes.append(
                    Change(pointers.join_pointer([*path, str(at_old)]), kind, old[in_old], _ABSENT)
                )
            elif kind == "added":
                changes.append(
                    Change(pointers.join_pointer([*path, str(at_new)]), kind, _ABSENT, new[in_new])
                )
            elif kind == "changed" and not same(old[in_old], new[in_new]):
                _walk(old[in_old], new[in_new], [*path, str(at_old)], changes)


def _spelling(value: Any) -> str:
    """A JSON value's canonical text: equal for equal values of one type, different otherwise
    (``1``, ``1.0`` and ``true`` are ``1``, ``1.0`` and ``true``)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
