"""Structural differences between two JSON documents, as JSON pointers (via deepdiff)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from patcher import jsontext

ChangeKind = Literal["added", "removed", "changed"]
_KINDS: dict[str, ChangeKind] = {
    "dictionary_item_added": "added",
    "iterable_item_added": "added",
    "dictionary_item_removed": "removed",
    "iterable_item_removed": "removed",
    "values_changed": "changed",
    "type_changes": "changed",
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

    Objects are walked here and members equal on both sides skipped, so deepdiff only sees the
    values that differ: comparing a 15 MB ``tokenizer.json`` costs a walk over it, not a
    deepdiff of its vocab (20 s)."""
    changes: list[Change] = []
    _walk(old, new, [], changes)
    return tuple(sorted(changes, key=lambda c: c.pointer))


def _walk(old: Any, new: Any, path: list[str], changes: list[Change]) -> None:
    if not (isinstance(old, dict) and isinstance(new, dict)):
        changes += _deepdiff(old, new, path)
        return
    for key, value in old.items():
        if key not in new:
            changes.append(Change(jsontext.join_pointer([*path, key]), "removed", value, _ABSENT))
        elif not same(value, new[key]):
            _walk(value, new[key], [*path, key], changes)
    for key, value in new.items():
        if key not in old:
            changes.append(Change(jsontext.join_pointer([*path, key]), "added", _ABSENT, value))


def _deepdiff(old: Any, new: Any, path: list[str]) -> list[Change]:
    from deepdiff import DeepDiff  # imported here: only diff commands pay for it

    tree = DeepDiff(old, new, threshold_to_diff_deeper=0, view="tree", verbose_level=2)
    changes = []
    for report, levels in tree.items():
        kind = _KINDS.get(report)
        if kind is None:
            continue
        for level in levels:
            parts = [*path, *(str(t) for t in level.path(output_format="list"))]
            changes.append(
                Change(
                    jsontext.join_pointer(parts),
                    kind,
                    _ABSENT if kind == "added" else level.t1,
                    _ABSENT if kind == "removed" else level.t2,
                )
            )
    return changes
