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


def compare(old: Any, new: Any) -> tuple[Change, ...]:
    """Every difference from ``old`` to ``new``, ordered by pointer."""
    from deepdiff import DeepDiff  # imported here: only diff commands pay for it

    tree = DeepDiff(old, new, threshold_to_diff_deeper=0, view="tree", verbose_level=2)
    changes = []
    for report, levels in tree.items():
        kind = _KINDS.get(report)
        if kind is None:
            continue
        for level in levels:
            pointer = jsontext.join_pointer([str(t) for t in level.path(output_format="list")])
            changes.append(
                Change(
                    pointer,
                    kind,
                    _ABSENT if kind == "added" else level.t1,
                    _ABSENT if kind == "removed" else level.t2,
                )
            )
    return tuple(sorted(changes, key=lambda c: c.pointer))
