"""Structural differences between two JSON documents, as JSON pointers (via deepdiff)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from patcher import jsontext

ChangeKind = Literal["added", "removed", "changed"]
# What deepdiff reports about two lists of item spellings (see ``_walk_list``).
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
    _walk(old, new, [], changes)
    return tuple(sorted(changes, key=lambda c: c.pointer))


def _walk(old: Any, new: Any, path: list[str], changes: list[Change]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key, value in old.items():
            if key not in new:
                changes.append(
                    Change(jsontext.join_pointer([*path, key]), "removed", value, _ABSENT)
                )
            elif not same(value, new[key]):
                _walk(value, new[key], [*path, key], changes)
        for key, value in new.items():
            if key not in old:
                changes.append(Change(jsontext.join_pointer([*path, key]), "added", _ABSENT, value))
    elif isinstance(old, list) and isinstance(new, list):
        _walk_list(old, new, path, changes)
    else:
        changes.append(Change(jsontext.join_pointer(path), "changed", old, new))


def _walk_list(old: list[Any], new: list[Any], path: list[str], changes: list[Change]) -> None:
    """Items kept at both ends are skipped here; deepdiff aligns what is left between them.

    deepdiff aligns list items with ``==`` and hashes, under which ``1``, ``1.0`` and ``true``
    are one value: ``[1, 2]`` to ``[true, 2]`` was no difference at all. So it is given each
    item's canonical JSON text, which keeps them apart, and the pairs it matches are walked
    here. Pointers name the old index, except for an added item (the new one), as deepdiff's."""
    start, old_end, new_end = 0, len(old), len(new)
    while start < min(old_end, new_end) and same(old[start], new[start]):
        start += 1
    while old_end > start and new_end > start and same(old[old_end - 1], new[new_end - 1]):
        old_end, new_end = old_end - 1, new_end - 1
    if old_end - start == 1 and new_end - start == 1:
        _walk(old[start], new[start], [*path, str(start)], changes)
        return
    from deepdiff import DeepDiff  # imported here: only diff commands pay for it

    old_spelled = [_spelling(item) for item in old[start:old_end]]
    new_spelled = [_spelling(item) for item in new[start:new_end]]
    tree = DeepDiff(
        old_spelled, new_spelled, threshold_to_diff_deeper=0, view="tree", verbose_level=2
    )
    for report, levels in tree.items():
        kind = _KINDS.get(report)
        for level in levels:
            at_old = start + int(level.path(output_format="list")[0])
            at_new = start + int(level.path(use_t2=True, output_format="list")[0])
            if kind == "removed":
                changes.append(
                    Change(jsontext.join_pointer([*path, str(at_old)]), kind, old[at_old], _ABSENT)
                )
            elif kind == "added":
                changes.append(
                    Change(jsontext.join_pointer([*path, str(at_new)]), kind, _ABSENT, new[at_new])
                )
            elif kind == "changed" and not same(old[at_old], new[at_new]):
                _walk(old[at_old], new[at_new], [*path, str(at_old)], changes)


def _spelling(value: Any) -> str:
    """A JSON value's canonical text: equal for equal values of one type, different otherwise
    (``1``, ``1.0`` and ``true`` are ``1``, ``1.0`` and ``true``)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
