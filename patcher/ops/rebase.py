"""``rebase``: the journalled files hold a new upstream version; carry the transforms onto it.

``rebase`` is the user's statement that the current bytes of the journalled files are the new
upstream (in an overlay, the bytes its source holds now under a patched copy). Each applied
transform is then, per JSON pointer it edits:

- re-applied, when upstream left that member as it was;
- no longer needed, when upstream made the same change (the transform is dropped);
- a conflict, when upstream changed the member to something else: nothing is written and the
  three versions (original, patched, new upstream) are shown.

The transforms are re-compiled from the definitions and parameters the journal kept, in
memory (``patcher.ops.rebuilding``), then the result is written to the checkpoint as one
write-ahead step (the new entries are ``reapplying`` until every file is in place).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patcher.errors import ConflictError
from patcher.ops.reapply import patched_bytes
from patcher.ops.rebuilding import journalled_step, rebuild, upstream_bytes
from patcher.ops.revert import revert
from patcher.results import JsonResult
from patcher.store.checkpoint import Checkpoint, open_checkpoint
from patcher.store.files import read_current
from patcher.store.fsio import sha256 as _sha
from patcher.store.hfcache import patched_siblings
from patcher.store.journal import Entry, load_journal, load_object
from patcher.store.session import write_session
from patcher.store.snapshot import Snapshot
from patcher.text.document import MISSING
from patcher.text.jsontext import DuplicateKeyError, JsonText
from patcher.text.scanner import JsonSyntaxError

_ABSENT = object()


@dataclass(frozen=True, slots=True)
class RebasedTransform:
    """What became of one applied transform."""

    transform: str
    outcome: str  # "re-applied" | "no longer needed"
    old_entry: int
    new_entry: int | None


@dataclass(frozen=True, slots=True, repr=False)
class RebaseResult(JsonResult):
    """Per transform, what rebase did (empty when nothing was journalled, or ``up_to_date``:
    every journalled file is as patched, so there is no new upstream to rebase onto); for a
    cached repository, the revision the journal came from and what became of it."""

    checkpoint: Path
    transforms: tuple[RebasedTransform, ...]
    carried_from: Path | None = None
    old_reverted: bool = False
    up_to_date: bool = False

    def to_json(self) -> dict[str, Any]:
        """A rebase result as JSON."""
        return {
            "checkpoint": str(self.checkpoint),
            "transforms": [
                {
                    "transform": t.transform,
                    "outcome": t.outcome,
                    "old_entry": t.old_entry,
                    "new_entry": t.new_entry,
                }
                for t in self.transforms
            ],
            "carried_from": None if self.carried_from is None else str(self.carried_from),
            "old_reverted": self.old_reverted,
            "up_to_date": self.up_to_date,
        }


def _value(doc: JsonText | None, pointer: str) -> Any:
    """The value at ``pointer``, parsed from its bytes only (``_ABSENT``: none, or not JSON)."""
    if doc is None:
        return _ABSENT
    try:
        value = doc.get(pointer)
    except (JsonSyntaxError, DuplicateKeyError, RecursionError, ValueError):
        return _ABSENT
    return _ABSENT if value is MISSING else value


def _show(value: Any) -> str:
    return "(absent)" if value is _ABSENT else json.dumps(value)


def _conflicts(ckpt: Checkpoint, entry: Entry, record_new: Mapping[str, bytes | None]) -> None:
    for record in entry.files:
        if record.kind != "json":
            continue
        new = record_new.get(record.path)
        # Each version is scanned once, across the ops; only the values at their paths parse.
        original = JsonText(load_object(ckpt.journal_dir, record.before))
        patched = JsonText(patched_bytes(ckpt, record))
        theirs_doc = None if new is None else JsonText(new)
        for op in record.forward:
            if op["op"] == "test":
                continue
            pointer = op["path"]
            old, ours, theirs = (
                _value(original, pointer),
                _value(patched, pointer),
                _value(theirs_doc, pointer),
            )
            if theirs != old and theirs != ours:
                raise ConflictError(
                    f"upstream changed a member {entry.transform!r} edits: original "
                    f"{_show(old)}, patched {_show(ours)}, new upstream {_show(theirs)}; "
                    "nothing was changed",
                    file=ckpt.path(record.path),
                    pointer=pointer,
                    hint=f"decide by hand: patcher revert {ckpt.arg} {entry.transform} --force, "
                    "or keep the new upstream value and revert it",
                )


def rebase(
    checkpoint: Path | str,
    *,
    to: str | None = None,
    revert_old: bool = False,
    revision: str | None = None,
) -> RebaseResult:
    """Adopt the current bytes of the journalled files as the new upstream and re-apply the
    applied transforms onto them, all or nothing (see the module documentation).

    For ``ORG/NAME`` in the Hugging Face cache, when the revision ``refs/main`` (or ``to``)
    names is not the patched one, the journal of the patched snapshot is carried to it; the
    old snapshot is left as it is (a running server may use it) unless ``revert_old``."""
    if to is not None:
        checkpoint = f"{str(checkpoint).partition('@')[0]}@{to}"
    ckpt = open_checkpoint(checkpoint, revision)
    if not load_journal(ckpt.journal_dir).applied:
        siblings = patched_siblings(ckpt.root)
        if siblings:
            return _carry(open_checkpoint(siblings[0]), ckpt, revert_old)
        return RebaseResult(ckpt.root, ())
    with write_session(ckpt) as session:
        applied = session.journal.applied
        paths = list(dict.fromkeys(r.path for e in applied for r in e.files))
        snapshot = Snapshot.of(session)
        base = upstream_bytes(snapshot)
        source = open_checkpoint(ckpt.overlay_source) if ckpt.overlay_source else None
        fresh_paths = []
        for path in paths:
            records = [r for e in applied for r in e.files if r.path == path]
            data = snapshot.read(path)
            if data is not None and _sha(data) != records[-1].after:
                base[path] = data  # the new upstream (still-patched files keep the original)
                fresh_paths.append(path)
            elif source is not None and records[0].link is not None:
                # An overlay's patched copy: the new upstream is what its source holds now.
                fresh = read_current(source, path)
                if fresh is not None and _sha(fresh) != records[0].before:
                    base[path] = fresh
                    fresh_paths.append(path)
        if not fresh_paths:
            # Every file is as patched: re-applying would only churn the journal.
            return RebaseResult(ckpt.root, (), up_to_date=True)
        for entry in applied:
            _conflicts(ckpt, entry, base)
        steps = [journalled_step(ckpt, e) for e in applied]
        created = rebuild(session, snapshot, base, steps, applied).entries
    return RebaseResult(ckpt.root, _outcomes(applied, created))


def _carry(old: Checkpoint, new: Checkpoint, revert_old: bool) -> RebaseResult:
    """Apply the old snapshot's transforms to the new snapshot, under the rebase rules, as one
    write-ahead step (the same rebuild as a local rebase, from the new snapshot's bytes)."""
    applied = load_journal(old.journal_dir).applied
    upstream = {r.path: read_current(new, r.path) for e in applied for r in e.files}
    for entry in applied:
        _conflicts(old, entry, upstream)
    with write_session(new) as session:
        steps = [journalled_step(old, e) for e in applied]
        snapshot = Snapshot.of(session)
        created = rebuild(session, snapshot, upstream_bytes(snapshot), steps, ()).entries
    if revert_old:
        revert(old.root, every=True)
    return RebaseResult(new.root, _outcomes(applied, created), old.root, revert_old)


def _outcomes(
    applied: tuple[Entry, ...], created: list[Entry | None]
) -> tuple[RebasedTransform, ...]:
    return tuple(
        RebasedTransform(
            e.transform,
            "no longer needed" if new is None else "re-applied",
            e.id,
            None if new is None else new.id,
        )
        for e, new in zip(applied, created, strict=True)
    )
