"""``plan`` and ``sync``: which transforms a target needs, against what is applied.

A catalog transform is needed when the checkpoint *as upstream shipped it* (the originals in
the journal) fails for the target with a start-up error the transform declares it fixes
(``[needed_when] startup_errors``, judged by the engine model). The profile's ``[transforms]``
are wanted whatever the target. ``sync`` reverts what is no longer wanted, re-applies what has
new parameters and applies what is missing; a second ``sync`` does nothing.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from patcher.engines.effects import patched_files
from patcher.engines.files import MARKED_FILES, ConfigFiles, snapshot_config_files
from patcher.engines.model import derive
from patcher.engines.parser_flags import parser_flag_error, parser_words
from patcher.engines.readings import assumed
from patcher.engines.target import Target
from patcher.engines.view import StartupError
from patcher.errors import PatcherError, TargetError
from patcher.ops.launching import Launch, plan_launch
from patcher.ops.rebuilding import (
    FileChange,
    Rebuild,
    Step,
    commit_rebuild,
    journalled_step,
    plan_rebuild,
    upstream_bytes,
)
from patcher.results import JsonResult
from patcher.store.checkpoint import Checkpoint, open_checkpoint
from patcher.store.file_status import FileStatus, file_states, refuse_unsettled_files
from patcher.store.journal import Entry, Journal, originals
from patcher.store.overlay import existing_overlay, make_overlay
from patcher.store.session import write_session
from patcher.store.snapshot import Snapshot
from patcher.text.document import canonical
from patcher.text.pointers import join_pointer
from patcher.transforms.catalog import builtin_transforms, find_transform
from patcher.transforms.params import resolve_params

ActionKind = Literal["apply", "revert", "reapply", "restore"]


@dataclass(frozen=True, slots=True)
class Action:
    """One step of a plan, and why."""

    action: ActionKind
    name: str
    params: Mapping[str, Any]
    reason: str
    entry_id: int | None = None
    # A revert's edits as it puts them back, per file: the entry's inverse patch (no tests).
    undoes: tuple[tuple[str, tuple[dict[str, Any], ...]], ...] = ()


@dataclass(frozen=True, slots=True, repr=False)
class Plan(JsonResult):
    """What ``sync`` would do for ``target`` (nothing when the checkpoint is in sync)."""

    checkpoint: Path
    target: Target
    actions: tuple[Action, ...]
    upstream_errors: tuple[StartupError, ...]
    # Patched files that are not as patcher left them (a hand edit, a new upstream download,
    # missing, half-done): sync refuses until they are settled, as its rebuild would lose them.
    drift: tuple[FileStatus, ...] = ()
    # The server's flags and command line once synced (None while there is drift).
    launch: Launch | None = None
    # Entries applied by hand (not by a sync for a target) that the target does not want:
    # kept, as sync owns only what a target brought in (``prune`` reverts them).
    manual: tuple[Entry, ...] = ()

    @property
    def in_sync(self) -> bool:
        """Whether nothing needs doing: no action, and every patched file as patcher left it."""
        return not self.actions and not self.drift

    def to_json(self) -> dict[str, Any]:
        """A plan as JSON."""
        return {
            "checkpoint": str(self.checkpoint),
            "target": self.target.record(),
            "engine_note": assumed(self.target.engine).note,
            "reading": assumed(self.target.engine).to_json(),
            "overridden": [o.to_json() for o in self.target.overridden],
            "in_sync": self.in_sync,
            "actions": [
                {
                    "action": a.action,
                    "name": a.name,
                    "params": dict(a.params),
                    "reason": a.reason,
                    "entry": a.entry_id,
                    "undoes": [{"path": f, "patch": list(ops)} for f, ops in a.undoes],
                }
                for a in self.actions
            ],
            "upstream_startup_errors": [e.message for e in self.upstream_errors],
            "drift": [{"path": f.path, "state": f.state} for f in self.drift],
            "manual": [{"name": e.transform, "entry": e.id} for e in self.manual],
            "flags": None if self.launch is None else list(self.launch.flags),
            "argv": None if self.launch is None else list(self.launch.argv),
            "launch": None if self.launch is None else self.launch.to_json(),
        }


@dataclass(frozen=True, slots=True, repr=False)
class SyncResult(JsonResult):
    """The plan, the journal entries ``sync`` applied and reverted (empty for a dry run), and
    the files it changed (for a dry run: would change)."""

    plan: Plan
    applied: tuple[int, ...]
    reverted: tuple[int, ...]
    dry_run: bool
    files: tuple[FileChange, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """A sync result as JSON."""
        return {
            **self.plan.to_json(),
            "dry_run": self.dry_run,
            "applied": list(self.applied),
            "reverted": list(self.reverted),
        }


def upstream_files(snapshot: Snapshot) -> ConfigFiles:
    """The engine's files as upstream shipped them: the journal's originals where patched,
    the snapshot's files elsewhere."""
    journal = snapshot.journal
    kept = originals(snapshot.checkpoint, journal)
    upstream = {n: d for n, d in kept.items() if n in MARKED_FILES}
    return patched_files(snapshot_config_files(snapshot), upstream, "as upstream shipped it")


def _plain(op: dict[str, Any]) -> dict[str, Any]:
    """An RFC 6902 op without the journal's own keys (``x-raw``: the value's bytes)."""
    return {k: v for k, v in op.items() if not k.startswith("x-")}


def plan(
    checkpoint: Path | str, target: Target, *, revision: str | None = None, prune: bool = False
) -> Plan:
    """Compare what is applied (transform and parameters) with what ``target`` needs plus the
    profile's transforms, and return the actions with a reason for each, and the launch: the
    server's flags and command line for the files as sync would leave them.

    The plan is proven as sync would carry it out: the same code plans the change in memory,
    so an action sync would refuse (an edit the engine ignores, say) is refused here, with the same
    message.

    Entries applied by hand (``patcher apply``, not a sync) that the target does not want are
    kept and listed in ``manual``; ``prune`` plans their revert too."""
    plan, _ = _proven_plan(open_checkpoint(checkpoint, revision), target, prune)
    return plan


def _proven_plan(
    ckpt: Checkpoint, target: Target, prune: bool
) -> tuple[Plan, tuple[FileChange, ...]]:
    """The plan with its launch, and the files a sync would change (planned in memory by
    the code sync runs, with nothing written)."""
    snapshot = Snapshot(ckpt)
    plan = _plan(snapshot, target, prune)
    if plan.drift:
        return plan, ()
    files = snapshot_config_files(snapshot)
    changes: tuple[FileChange, ...] = ()
    planned: Mapping[str, bytes] = {}
    if plan.actions:
        change = _rebuild_for(snapshot, plan, target)
        changes = tuple(
            FileChange(p, old, new) for p, (old, new) in sorted(change.rebuilt.files.items())
        )
        planned = change.final
        files = patched_files(files, planned, "as sync would leave it")
    launch = plan_launch(ckpt, files, target, planned=planned)
    return replace(plan, launch=launch), changes


def _plan(snapshot: Snapshot, target: Target, prune: bool = False) -> Plan:
    ckpt, journal = snapshot.checkpoint, snapshot.journal
    upstream = derive(
        target.engine,
        upstream_files(snapshot),
        target.gpu,
        kv_cache_dtype=target.kv_cache_dtype,
    )
    wanted: dict[str, tuple[Mapping[str, Any], str]] = {}
    for transform in builtin_transforms():
        # Only an error the files cause: one a chosen flag causes, no file edit clears.
        fixes = [
            e
            for e in upstream.startup_errors
            if e.code in transform.needed_when and e.transform == transform.name
        ]
        if fixes:
            why = f"needed: {target.describe()} refuses the upstream files: {fixes[0].message}"
            if fixes[0].flag and fixes[0].flag.startswith("--kv-cache-dtype"):
                why += f" (or keep the files as shipped: plan with {fixes[0].flag})"
            wanted[transform.name] = (resolve_params(transform, {}).recorded, why)
    for name, given in target.transforms.items():
        try:
            transform = find_transform(name)
            recorded = resolve_params(transform, given, typed=True).recorded
        except PatcherError as exc:
            if target.profile is None:
                raise
            # Name the profile line that asked for it: the message alone does not say where.
            raise type(exc)(
                exc.problem,
                file=target.profile,
                pointer=join_pointer(["transforms", name]),
                hint=exc.hint,
            ) from None
        wanted[transform.name] = (recorded, f"wanted by {target.profile or 'the target'}")
    latest: dict[str, Entry] = {}
    for entry in journal.applied:
        latest[entry.transform] = entry
    actions: list[Action] = []
    manual: list[Entry] = []
    for entry in sorted(latest.values(), key=lambda e: -e.id):
        if entry.transform not in wanted and entry.target is None and not prune:
            manual.append(entry)
        elif entry.transform not in wanted:
            actions.append(
                Action(
                    "revert",
                    entry.transform,
                    dict(entry.params),
                    _why_not(entry, target),
                    entry.id,
                    tuple(
                        (r.path, tuple(_plain(op) for op in r.inverse if op["op"] != "test"))
                        for r in entry.files
                    ),
                )
            )
        elif canonical(dict(entry.params)) != canonical(dict(wanted[entry.transform][0])):
            params, _ = wanted[entry.transform]
            actions.append(
                Action(
                    "reapply",
                    entry.transform,
                    params,
                    f"parameters changed: {canonical(dict(entry.params))} -> "
                    f"{canonical(dict(params))}",
                    entry.id,
                )
            )
    for name, (params, why) in wanted.items():
        if name not in latest:
            actions.append(Action("apply", name, params, why))
    restore, drift = _file_drift(ckpt, journal, {a.name for a in actions}, latest)
    actions += restore
    return Plan(
        ckpt.root, target, tuple(actions), upstream.startup_errors, drift, manual=tuple(manual)
    )


def _file_drift(
    ckpt: Checkpoint, journal: Journal, acted_on: set[str], latest: Mapping[str, Entry]
) -> tuple[list[Action], tuple[FileStatus, ...]]:
    """What the files say beyond the journal: a kept transform whose files a re-download put
    back to the upstream bytes is restored (as recorded); any other patched file that is not
    as patcher left it is drift, which sync refuses to rebuild over."""
    applied = {r.path for e in journal.applied for r in e.files}
    restore: dict[str, Action] = {}
    drift: list[FileStatus] = []
    for state in file_states(ckpt, journal):
        if state.path not in applied or state.state in ("patched", "reverted"):
            continue
        if state.state != "original":
            drift.append(state)
            continue
        for entry in latest.values():
            if entry.transform not in acted_on and entry.file(state.path):
                restore[entry.transform] = Action(
                    "restore",
                    entry.transform,
                    dict(entry.params),
                    f"{state.path} is back to the upstream bytes (re-downloaded?)",
                    entry.id,
                )
    return list(restore.values()), tuple(drift)


def _why_not(entry: Entry, target: Target) -> str:
    try:
        transform = find_transform(entry.transform)
    except PatcherError:  # a user's transform file that is gone: not wanted by this target
        return f"not wanted by {target.profile or 'the target'}"
    if transform.needed_when:
        return f"not needed: {target.describe()} starts with the upstream files"
    return f"not wanted by {target.profile or 'the target'}"


def sync(
    checkpoint: Path | str,
    target: Target,
    *,
    dry_run: bool = False,
    overlay: Path | str | None = None,
    revision: str | None = None,
    prune: bool = False,
) -> SyncResult:
    """Carry out the plan as one all-or-nothing step: the wanted transforms (those kept, then
    the new ones) are applied to the upstream bytes in memory, and the checkpoint is
    moved to the result under one write-ahead record (see ``patcher.ops.rebuilding``). Entries
    kept are re-recorded under new ids; the old ones are marked reverted.

    With ``overlay``, the checkpoint (a read-only model store) is left untouched: the overlay
    folder (made if needed) gets links to its files and the patched copies. A dry run writes
    nothing and returns the files a real run would change, with their new bytes. Entries
    applied by hand are kept unless ``prune`` (see :func:`plan`)."""
    ckpt = open_checkpoint(checkpoint, revision)
    if overlay is not None:
        if not dry_run:
            ckpt = open_checkpoint(make_overlay(ckpt.root, overlay))
        elif existing_overlay(ckpt.root, overlay) is not None:
            ckpt = open_checkpoint(overlay)
    if dry_run:
        plan, changes = _proven_plan(ckpt, target, prune)
        refuse_no_start(ckpt.named or str(ckpt.root), plan.launch, target)
        return SyncResult(plan, (), (), True, () if plan.in_sync else changes)
    if not ckpt.journal_dir.exists():
        # Never written by patcher: the lock would make .patcher/ even for a refused sync, so
        # the plan is proven in memory first (a refusal then leaves the folder as is).
        proven, _ = _proven_plan(ckpt, target, prune)
        refuse_no_start(ckpt.named or str(ckpt.root), proven.launch, target)
    looked = Snapshot(ckpt)
    plan = _plan(looked, target, prune)
    if plan.in_sync:  # nothing to write: no lock taken
        plan = replace(plan, launch=plan_launch(ckpt, snapshot_config_files(looked), target))
        refuse_no_start(ckpt.named or str(ckpt.root), plan.launch, target)
        return SyncResult(plan, (), (), False)
    # The sync itself refuses what plan refuses, before it writes (each new step's effect,
    # then the launch on the rebuilt files, in memory).
    return _carry_out(ckpt, target, prune)


def _rebuild_for(snapshot: Snapshot, plan: Plan, target: Target) -> Rebuild:
    """The rebuild that carries out ``plan`` (made on the snapshot's journal), worked out in
    memory; an edit the target's engine ignores, or unsettled files, are refused."""
    ckpt, journal = snapshot.checkpoint, snapshot.journal
    refuse_unsettled_files(
        ckpt,
        journal,
        "sync",
        f"patcher status {ckpt.arg} (then revert --force, reapply or rebase)",
    )
    # A restored transform is re-applied as recorded, with the others kept.
    changed = {a.name for a in plan.actions if a.action != "restore"}
    latest = {e.transform: e for e in journal.applied}
    steps = [
        journalled_step(ckpt, e)
        for e in journal.applied
        if latest[e.transform] is e and e.transform not in changed
    ]
    # Each new step is judged on the files the steps before it leave (an edit this engine
    # ignores is refused), in the one fold that plans the rebuild.
    new_steps = [
        Step(find_transform(a.name), a.params, target.record(), judge=target.engine)
        for a in plan.actions
        if a.action in ("apply", "reapply")
    ]
    base = upstream_bytes(snapshot)
    return plan_rebuild(snapshot, base, [*steps, *new_steps], journal.applied)


def _carry_out(ckpt: Checkpoint, target: Target, prune: bool = False) -> SyncResult:
    """The sync itself, under the lock: the plan's launch is worked out on the rebuilt files
    before they are written (a launch plan refuses is refused with nothing written)."""
    with write_session(ckpt) as session:
        snapshot = Snapshot.of(session)  # under the lock: the journal and files it acts on
        plan = _plan(snapshot, target, prune)
        files = snapshot_config_files(snapshot)
        if plan.in_sync:  # another process synced it, or recovery settled a half-done entry
            if not plan.drift:
                plan = replace(plan, launch=plan_launch(ckpt, files, target))
                refuse_no_start(ckpt.named or str(ckpt.root), plan.launch, target)
            return SyncResult(plan, (), (), False)
        change = _rebuild_for(snapshot, plan, target)
        files = patched_files(files, change.final, "as sync would leave it")
        plan = replace(plan, launch=plan_launch(ckpt, files, target, planned=change.final))
        refuse_no_start(ckpt.named or str(ckpt.root), plan.launch, target)  # before any write
        rebuilt = commit_rebuild(session, change)
    created = rebuilt.entries
    kept = len(change.steps) - sum(a.action in ("apply", "reapply") for a in plan.actions)
    applied = tuple(e.id for e in created[kept:] if e is not None)
    reverted = tuple(a.entry_id for a in plan.actions if a.entry_id is not None)
    changes = tuple(FileChange(p, old, new) for p, (old, new) in sorted(rebuilt.files.items()))
    return SyncResult(plan, applied, reverted, False, changes)


def refuse_no_start(checkpoint: str, launch: Launch | None, target: Target) -> None:
    """No go-ahead for a launch that cannot start at any context on the target (no KV cache
    fits beside the weights, or the engine still refuses the files): sync and run refuse it
    before anything is written or started; plan shows it and exits 1."""
    if launch is not None and launch.problem is not None:
        # The parsers the server's flags name are no secret, and plan needs them to show why.
        named = parser_words(target.engine, target.flags)
        given = ("--", *named) if named and parser_flag_error(target.engine, named) else ()
        raise TargetError(
            f"the server cannot start: {launch.problem}",
            hint=shlex.join(["patcher", "plan", checkpoint, *target.options(), *given])
            + " shows why",
        )
