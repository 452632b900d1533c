"""Applying a transform: compile in memory, write the journal entry ahead, then the files."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from patcher import __version__
from patcher.catalog import find_transform
from patcher.checkpoint import Checkpoint, open_checkpoint
from patcher.compiler import FilePlan, compile_transform
from patcher.document import canonical
from patcher.errors import DoesNotApplyError
from patcher.files import holds_bytes, replace_file
from patcher.fsio import check_real_dir, mtime_ns
from patcher.journal import (
    Entry,
    FileRecord,
    Journal,
    must_keep,
    now,
    read_journal,
    store_object,
)
from patcher.params import resolve_params
from patcher.recovery import roll_back
from patcher.results import JsonResult
from patcher.session import write_session
from patcher.transform import Transform, substitute

if TYPE_CHECKING:
    from patcher.engines.target import Engine

ApplyOutcome = Literal["applied", "dry-run", "nothing-to-do", "already-applied"]


@dataclass(frozen=True, slots=True, repr=False)
class ApplyResult(JsonResult):
    """What ``apply`` did (or, for a dry run, would do)."""

    json_renderer: ClassVar[str] = "apply_json"

    outcome: ApplyOutcome
    checkpoint: Path
    transform: Transform
    params: Mapping[str, Any]
    files: tuple[FilePlan, ...]
    entry_id: int | None = None
    warnings: tuple[str, ...] = ()
    replaced: int | None = None  # the entry of the same transform this one replaced


def _records(
    checkpoint: Checkpoint, plans: tuple[FilePlan, ...], befores: dict[str, str]
) -> tuple[FileRecord, ...]:
    return tuple(
        FileRecord(
            path=p.path,
            kind=p.kind,
            link=p.link,
            before=befores[p.path],
            after=p.after_hash,
            forward=p.forward,
            inverse=p.inverse,
            before_size=len(p.before),
            after_size=len(p.after),
            before_mtime_ns=mtime_ns(checkpoint.path(p.path)),
        )
        for p in plans
    )


def _write(checkpoint: Checkpoint, plans: tuple[FilePlan, ...]) -> None:
    for plan in plans:
        replace_file(checkpoint, plan.path, plan.after, expect=plan.before)


def _same_applied(journal: Journal, transform: Transform, params: Mapping[str, Any]) -> int | None:
    for entry in reversed(journal.applied):
        if entry.transform == transform.name and canonical(entry.params) == canonical(params):
            return entry.id
    return None


def _applied_with_other_params(
    checkpoint: Checkpoint, transform: Transform, params: Mapping[str, Any]
) -> bool:
    check_real_dir(checkpoint.journal_dir)  # a linked journal is refused, not read
    applied = [e for e in read_journal(checkpoint).applied if e.transform == transform.name]
    return bool(applied) and canonical(applied[-1].params) != canonical(params)


def _effect_warnings(
    checkpoint: Checkpoint,
    transform: Transform,
    values: Mapping[str, Any],
    plans: tuple[FilePlan, ...],
    engine: Engine | None,
) -> tuple[str, ...]:
    """Refuse when ``engine`` ignores the edit or would no longer start after it; without one,
    warn about the sampled versions where that happens (for transforms declaring effects)."""
    if not plans or (engine is None and not transform.effects):
        return ()
    from patcher.engines.effects import SAMPLED_VLLM, judge_edit, patched_files, version_ranges
    from patcher.engines.files import read_config_files

    before = read_config_files(checkpoint)
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


def apply_transform(
    checkpoint: Path | str,
    transform: str | Path | Transform,
    params: Mapping[str, Any] | None = None,
    *,
    dry_run: bool = False,
    overlay: Path | str | None = None,
    engine: Engine | str | None = None,
    target: Mapping[str, Any] | None = None,
    stack: bool = False,
    revision: str | None = None,
) -> ApplyResult:
    """Apply ``transform`` (a built-in name, a transform file path, or a ``Transform``) to the
    checkpoint. Returns the plan; with ``dry_run`` nothing is written. With ``overlay``, the
    checkpoint is left untouched and the edits go to that overlay folder (made if needed).

    With ``engine`` (``"vllm==0.16.0"``), a transform whose declared effect that engine would
    not derive from the patched files is refused; without it, the result carries a warning
    naming the vLLM versions that ignore the edit. ``target`` (engine, GPU, profile) is kept
    in the journal entry, as ``sync`` does.

    Applied already with other parameters, the transform's entry is replaced (one entry per
    transform; the old one stays in the history as reverted); ``stack`` adds a second entry
    on top instead."""
    judge: Engine | None
    if isinstance(engine, str):
        from patcher.engines.target import parse_engine

        judge = parse_engine(engine)
    else:
        judge = engine
    ckpt = open_checkpoint(checkpoint, revision)
    if overlay is not None and not dry_run:
        from patcher.overlay import make_overlay

        ckpt = open_checkpoint(make_overlay(ckpt.root, overlay))
    chosen = transform if isinstance(transform, Transform) else find_transform(str(transform))
    resolved = resolve_params(chosen, params or {})
    if not stack and _applied_with_other_params(ckpt, chosen, resolved.recorded):
        from dataclasses import replace

        from patcher.replacing import replace_entry

        warnings: tuple[str, ...] = ()
        if chosen.effects or dry_run:  # judged on the predicted bytes, before any write
            preview = replace_entry(ckpt, chosen, resolved, dry_run=True, target=target)
            warnings = _effect_warnings(ckpt, chosen, resolved.values, preview.files, judge)
            if dry_run:
                return replace(preview, warnings=warnings)
        done = replace_entry(ckpt, chosen, resolved, dry_run=False, target=target)
        return replace(done, warnings=warnings)
    plans = compile_transform(ckpt, chosen, resolved)
    warnings = _effect_warnings(ckpt, chosen, resolved.values, plans, judge)
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
        if not all(holds_bytes(ckpt, p.path, p.before) for p in plans):
            plans = compile_transform(ckpt, chosen, resolved)  # changed while we waited
            if not plans:
                return ApplyResult("nothing-to-do", ckpt.root, chosen, resolved.recorded, ())
        journal_dir = ckpt.journal_dir
        definition = store_object(journal_dir, chosen.text.encode("utf-8"))
        befores = {
            plan.path: (
                store_object(
                    journal_dir,
                    plan.before,
                    digest=plan.before_hash,
                    source=ckpt.path(plan.path),
                )
                if must_keep(journal_dir, session.journal, plan.before_hash, plan.kind, __version__)
                else plan.before_hash
            )
            for plan in plans
        }
        entry = Entry(
            id=session.journal.next_id(),
            state="pending",
            transform=chosen.name,
            source=chosen.source,
            definition=definition,
            params=dict(resolved.recorded),
            time=now(),
            tool_version=__version__,
            files=_records(ckpt, plans, befores),
            target=None if target is None else dict(target),
        )
        session.save(session.journal.put(entry))
        try:
            _write(ckpt, plans)
        except BaseException:
            # Settle by hashing, not by what we think was written: a write can land and the
            # step after it fail. Only when every file is back to its original is the entry
            # dropped; otherwise it stays pending and the next command settles it.
            with contextlib.suppress(BaseException):
                roll_back(ckpt, entry)
                session.save(session.journal.drop(entry.id))
            raise
        session.save(session.journal.put(entry.with_state("applied")))
        return ApplyResult(
            "applied", ckpt.root, chosen, resolved.recorded, plans, entry.id, warnings
        )
