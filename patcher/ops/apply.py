"""Applying a transform: a new entry, or, when it is applied already with other parameters,
a replacement of its entry (``patcher.ops.replacing``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patcher.engines.engine import parse_engine
from patcher.ops.adding import ApplyResult, add_entry, effect_warnings, same_definition
from patcher.store.checkpoint import Checkpoint, open_checkpoint
from patcher.store.fsio import check_real_dir
from patcher.store.overlay import make_overlay
from patcher.store.session import read_journal
from patcher.store.snapshot import Snapshot
from patcher.text.document import canonical
from patcher.transforms.catalog import find_transform
from patcher.transforms.definition import Transform
from patcher.transforms.params import resolve_params

if TYPE_CHECKING:
    from patcher.engines.engine import Engine


def _applied_otherwise(
    checkpoint: Checkpoint, transform: Transform, params: Mapping[str, Any]
) -> bool:
    """Whether the transform's latest entry has other parameters or another definition (a
    second ``set`` of one member, a transform file edited since): it is replaced."""
    check_real_dir(checkpoint.journal_dir)  # a linked journal is refused, not read
    applied = [e for e in read_journal(checkpoint).applied if e.transform == transform.name]
    return bool(applied) and (
        canonical(applied[-1].params) != canonical(params)
        or not same_definition(applied[-1], transform)
    )


def apply(
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
        judge = parse_engine(engine)
    else:
        judge = engine
    result = _apply(checkpoint, transform, params, dry_run, overlay, judge, stack, target, revision)
    if judge is None:
        return result
    # Imported here: the readings' package data (importlib.resources) costs a plain apply
    # about 10 ms of start-up, and only an engine-judged apply needs it.
    from patcher.engines.readings import assumed

    note = assumed(judge).note
    return replace(result, warnings=(note, *result.warnings)) if note else result


def _apply(
    checkpoint: Path | str,
    transform: str | Path | Transform,
    params: Mapping[str, Any] | None,
    dry_run: bool,
    overlay: Path | str | None,
    judge: Engine | None,
    stack: bool,
    target: Mapping[str, Any] | None,
    revision: str | None,
) -> ApplyResult:
    ckpt = open_checkpoint(checkpoint, revision)
    if overlay is not None and not dry_run:
        ckpt = open_checkpoint(make_overlay(ckpt.root, overlay))
    chosen = transform if isinstance(transform, Transform) else find_transform(str(transform))
    resolved = resolve_params(chosen, params or {})
    if not stack and _applied_otherwise(ckpt, chosen, resolved.recorded):
        # Imported here: a replacement brings the rebuild machinery, which a new entry (the
        # common apply) does not need (about 5 ms of every apply's start; docs/benchmark.md).
        from patcher.ops.replacing import replace_entry

        warnings: tuple[str, ...] = ()
        if chosen.effects or dry_run:  # judged on the predicted bytes, before any write
            preview = replace_entry(ckpt, chosen, resolved, dry_run=True, target=target)
            warnings = effect_warnings(
                Snapshot(ckpt), chosen, resolved.values, preview.files, judge
            )
            if dry_run:
                return replace(preview, warnings=warnings)
        done = replace_entry(ckpt, chosen, resolved, dry_run=False, target=target)
        return replace(done, warnings=warnings)
    return add_entry(ckpt, chosen, resolved, dry_run=dry_run, target=target, judge=judge)
