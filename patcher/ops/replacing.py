"""Applying a transform again with new parameters replaces its entry: one entry per
transform, the old one kept in the history as reverted.

It is done as ``sync`` does a re-apply, in one all-or-nothing step: the journal's other
transforms and then this one, with its new parameters, are applied to the upstream bytes in
memory, and the checkpoint is moved to the result under one write-ahead record
(``patcher.ops.rebuilding``). The entries kept are re-recorded under new ids.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from patcher.errors import ConflictError
from patcher.ops.adding import ApplyResult
from patcher.ops.rebuilding import (
    Rebuild,
    Step,
    commit_rebuild,
    file_changes,
    journalled_step,
    plan_rebuild,
    upstream_bytes,
)
from patcher.store.checkpoint import Checkpoint
from patcher.store.file_status import refuse_unsettled_files
from patcher.store.journal import Entry
from patcher.store.session import write_session
from patcher.store.snapshot import Snapshot
from patcher.transforms.compiler import FilePlan
from patcher.transforms.definition import Transform
from patcher.transforms.params import ResolvedParams


def _plans(
    new: Entry | None, before: Mapping[str, bytes | None], after: Mapping[str, bytes | None]
) -> tuple[FilePlan, ...]:
    records = {} if new is None else {r.path: r for r in new.files}
    plans = []
    for change in file_changes(before, after):
        record = records.get(change.path)
        plans.append(
            FilePlan(
                path=change.path,
                kind="json" if record is None else record.kind,
                before=change.before or b"",
                after=change.after or b"",
                forward=() if record is None else record.forward,
                inverse=() if record is None else record.inverse,
                link=None if record is None else record.link,
            )
        )
    return tuple(plans)


def _replacement(
    snapshot: Snapshot,
    transform: Transform,
    params: ResolvedParams,
    target: Mapping[str, Any] | None,
) -> tuple[Entry, Rebuild]:
    """The entry replaced and the rebuild that replaces it, planned on ``snapshot``."""
    ckpt, journal = snapshot.checkpoint, snapshot.journal
    mine = [e for e in journal.applied if e.transform == transform.name]
    if not mine:
        raise ConflictError(
            f"{transform.name} was reverted by another process meanwhile",
            file=ckpt.root,
            hint=f"run the command again (patcher status {ckpt.arg})",
        )
    refuse_unsettled_files(
        ckpt,
        journal,
        f"replacing {transform.name}'s entry",
        f"patcher status {ckpt.arg} (or apply with --stack to add an entry)",
    )
    steps = [journalled_step(ckpt, e) for e in journal.applied if e.transform != transform.name]
    steps.append(Step(transform, dict(params.recorded), target))
    return mine[-1], plan_rebuild(snapshot, upstream_bytes(snapshot), steps, journal.applied)


def replace_entry(
    ckpt: Checkpoint,
    transform: Transform,
    params: ResolvedParams,
    *,
    dry_run: bool,
    target: Mapping[str, Any] | None,
) -> ApplyResult:
    """Replace the applied entry of ``transform`` with one for ``params`` (see the module);
    a dry run plans it in memory and writes nothing."""
    if dry_run:
        old, change = _replacement(Snapshot(ckpt), transform, params, target)
        rebuilt = change.rebuilt
    else:
        with write_session(ckpt) as session:
            old, change = _replacement(Snapshot.of(session), transform, params, target)
            rebuilt = commit_rebuild(session, change)
    new = rebuilt.entries[-1]
    plans = _plans(
        new,
        {p: old for p, (old, _) in rebuilt.files.items()},
        {p: data for p, (_, data) in rebuilt.files.items()},
    )
    entry_id = None if new is None or dry_run else new.id
    return ApplyResult(
        "dry-run" if dry_run else "applied",
        ckpt.root,
        transform,
        params.recorded,
        plans,
        entry_id,
        replaced=old.id,
    )
