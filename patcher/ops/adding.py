"""Adding one journal entry for a transform: compile in memory, write the entry ahead, then
the files (``Session.write_ahead``). ``apply`` uses it for a transform not yet applied, and a
rebuild (sync, rebase, replacing an entry) compiles its steps in memory the same way
(``patcher.ops.rebuilding``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from patcher.errors import DoesNotApplyError
from patcher.results import JsonResult
from patcher.store.change import Change, Keep, commit
from patcher.store.checkpoint import Checkpoint
from patcher.store.files import holds_bytes
from patcher.store.fsio import sha256
from patcher.store.journal import Entry, FileRecord, Journal, must_keep, now
from patcher.store.session import FileWrite, read_journal, write_session
from patcher.store.snapshot import Snapshot
from patcher.text.document import canonical
from patcher.text.textdiff import unified
from patcher.transforms.compiler import FilePlan, compile_transform
from patcher.transforms.definition import Transform, substitute
from patcher.transforms.params import ResolvedParams
from patcher.version import __version__

if TYPE_CHECKING:
    from patcher.engines.engine import Engine
    from patcher.engines.files import ConfigFiles

ApplyOutcome = Literal["applied", "dry-run", "nothing-to-do", "already-applied"]


@dataclass(frozen=True, slots=True, repr=False)
class ApplyResult(JsonResult):
    """What ``apply`` did (or, for a dry run, would do)."""

    outcome: ApplyOutcome
    checkpoint: Path
    transform: Transform
    params: Mapping[str, Any]
    files: tuple[FilePlan, ...]
    entry_id: int | None = None
    warnings: tuple[str, ...] = ()
    replaced: int | None = None  # the entry of the same transform this one replaced

    def to_json(self) -> dict[str, Any]:
        """An apply result as JSON."""
        return {
            "outcome": self.outcome,
            "checkpoint": str(self.checkpoint),
            "transform": self.transform.name,
            "params": dict(self.params),
            "entry": self.entry_id,
            "replaced": self.replaced,
            "warnings": list(self.warnings),
            "files": [
                {
                    "path": f.path,
                    "patch": list(f.forward),
                    "inverse": list(f.inverse),
                    "diff": unified(f.before, f.after, f"a/{f.path}", f"b/{f.path}"),
                }
                for f in self.files
            ],
        }


def file_record(plan: FilePlan, link: str | None, mtime: int | None) -> FileRecord:
    """The journal's record of ``plan``, with the link and mtime its file had before it (what
    a revert puts back)."""
    return FileRecord(
        path=plan.path,
        kind=plan.kind,
        link=link,
        before=plan.before_hash,
        after=plan.after_hash,
        forward=plan.forward,
        inverse=plan.inverse,
        before_size=len(plan.before),
        after_size=len(plan.after),
        before_mtime_ns=mtime,
    )


def same_definition(entry: Entry, transform: Transform) -> bool:
    """Whether ``entry`` was applied from exactly ``transform``'s text: a second ``set`` of
    the same member with another value, or a transform file edited since, is another
    definition under the same name."""
    return entry.definition == sha256(transform.text.encode("utf-8"))


def _same_applied(journal: Journal, transform: Transform, params: Mapping[str, Any]) -> int | None:
    for entry in reversed(journal.applied):
        if (
            entry.transform == transform.name
            and canonical(entry.params) == canonical(params)
            and same_definition(entry, transform)
        ):
            return entry.id
    return None


def effect_warnings(
    snapshot: Snapshot,
    transform: Transform,
    values: Mapping[str, Any],
    plans: tuple[FilePlan, ...],
    engine: Engine | None,
    before: ConfigFiles | None = None,
) -> tuple[str, ...]:
    """Refuse when ``engine`` ignores the edit or would no longer start after it; without one,
    warn about the sampled versions where that happens (for transforms declaring effects).
    ``before``: the files the edit applies to, where they are not the snapshot's (a rebuild's
    fold)."""
    if not plans or (engine is None and not transform.effects):
        return ()
    # Deferred: only a judged edit loads the engine model; saves a plain apply ~25 ms.
    from patcher.engines.effects import SAMPLED_VLLM, judge_edit, patched_files, version_ranges
    from patcher.engines.files import snapshot_config_files

    checkpoint = snapshot.checkpoint
    if before is None:
        before = snapshot_config_files(snapshot)
    after = patched_files(before, {p.path: p.after for p in plans if p.kind == "json"})
    verdict = judge_edit(transform, values, before, after, [engine] if engine else SAMPLED_VLLM)
    missed, refused = verdict.missed, verdict.refused
    warnings: list[str] = []
    if missed:
        first = missed[0]
        flags = transform.runtime.flags if transform.runtime else ()
        flag = " ".join(substitute(f, values) for f in flags) or None
        what = (
            f"{first.effect} stays {first.derived.value} there ({first.derived.reason}), "
            f"not {first.claimed}"
        )
        if engine is not None:
            raise DoesNotApplyError(
                f"{transform.name} has no effect on {engine}: {what}; nothing changed",
                file=checkpoint.root,
                hint=f"start the server with {flag}"
                if flag
                else "see patcher show " + transform.name,
            )
        warnings.append(
            f"{transform.name} has no effect on {version_ranges(m.engine for m in missed)}: {what}"
            + (f"; there, start the server with {flag}" if flag else "")
        )
    if refused:
        error = refused[0].error
        if engine is not None:
            raise DoesNotApplyError(
                f"{transform.name} would stop {engine} from starting: {error.message}; "
                "nothing changed",
                file=checkpoint.root,
                hint=error.note or f"patcher check {checkpoint.arg} --engine {engine}",
            )
        versions = version_ranges(r.engine for r in refused if r.error.code == error.code)
        warnings.append(f"{transform.name} makes {versions} refuse to start: {error.message}")
    return tuple(warnings)


def plan_entry(
    snapshot: Snapshot,
    chosen: Transform,
    params: Mapping[str, Any],
    plans: tuple[FilePlan, ...],
    target: Mapping[str, Any] | None,
) -> Change:
    """The change that records ``plans`` (``chosen`` compiled with ``params`` on ``snapshot``)
    as a new entry of its journal: pending while its files are written, then applied."""
    ckpt, journal = snapshot.checkpoint, snapshot.journal
    definition = chosen.text.encode("utf-8")
    keep = [Keep(definition)]
    for plan in plans:
        # Bytes an entry of this version can rebuild from kept bytes need not be kept again.
        if must_keep(ckpt.journal_dir, journal, plan.before_hash, plan.kind, __version__):
            keep.append(Keep(plan.before, plan.before_hash, plan.path))
    entry = Entry(
        id=journal.next_id(),
        state="pending",
        transform=chosen.name,
        source=chosen.source,
        definition=sha256(definition),
        params=dict(params),
        time=now(),
        tool_version=__version__,
        files=tuple(file_record(p, p.link, snapshot.mtime_ns(p.path)) for p in plans),
        target=None if target is None else dict(target),
    )
    writes = tuple(
        FileWrite(
            plan.path,
            plan.after,
            expect=plan.before,
            old=plan.before,
            old_link=record.link,
            old_mtime_ns=record.before_mtime_ns,
        )
        for plan, record in zip(plans, entry.files, strict=True)
    )
    # Pending while written: a failure puts every file back by hashing, not by what we
    # think was written (a write can land and the step after it fail).
    return Change(
        journal,
        journal.put(entry),
        writes,
        journal.put(entry.with_state("applied")),
        tuple(keep),
    )


def add_entry(
    ckpt: Checkpoint,
    chosen: Transform,
    resolved: ResolvedParams,
    *,
    dry_run: bool = False,
    target: Mapping[str, Any] | None = None,
    judge: Engine | None = None,
) -> ApplyResult:
    """Apply ``chosen`` with ``resolved`` parameters as a new journal entry (on top of any
    entry it has already); with ``dry_run``, only say what it would write. ``judge``: refuse
    the edit when that engine would not derive its declared effect."""
    looked = Snapshot(ckpt)
    plans = compile_transform(looked, chosen, resolved)
    warnings = effect_warnings(looked, chosen, resolved.values, plans, judge)
    if dry_run:
        outcome: ApplyOutcome = "dry-run" if plans else "nothing-to-do"
        return ApplyResult(outcome, ckpt.root, chosen, resolved.recorded, plans, None, warnings)
    if not plans:
        # Nothing to write, so nothing is locked or created either.
        previous = _same_applied(read_journal(ckpt), chosen, resolved.recorded)
        outcome = "nothing-to-do" if previous is None else "already-applied"
        return ApplyResult(outcome, ckpt.root, chosen, resolved.recorded, (), previous)
    with write_session(ckpt) as session:
        previous = _same_applied(session.journal, chosen, resolved.recorded)
        if previous is not None:
            return ApplyResult(
                "already-applied", ckpt.root, chosen, resolved.recorded, (), previous
            )
        snapshot = Snapshot.of(session)
        if not all(holds_bytes(ckpt, p.path, p.before) for p in plans):
            plans = compile_transform(snapshot, chosen, resolved)  # changed while we waited
            if not plans:
                return ApplyResult("nothing-to-do", ckpt.root, chosen, resolved.recorded, ())
        change = plan_entry(snapshot, chosen, resolved.recorded, plans, target)
        commit(session, change)
        entry_id = change.done.entries[-1].id
        return ApplyResult(
            "applied", ckpt.root, chosen, resolved.recorded, plans, entry_id, warnings
        )
