"""Overlays for read-only model stores: ``OUT`` holds a symlink to every entry of the source
checkpoint, and patcher replaces the links it edits with patched files (and restores them on
revert), so the source is never written."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from patcher.errors import CheckpointError
from patcher.store.checkpoint import JOURNAL_DIR, OVERLAY_FILE, open_checkpoint
from patcher.store.fsio import (
    atomic_symlink,
    atomic_write,
    ensure_dir,
    stale_temp_files,
    write_error,
)


def _record(target: Path) -> dict[str, object]:
    """An overlay folder's record (empty when it is not, readably, an overlay)."""
    try:
        record = json.loads((target / JOURNAL_DIR / OVERLAY_FILE).read_text())
    except (OSError, ValueError, RecursionError):
        return {}
    return record if isinstance(record, dict) else {}


def _recorded_source(target: Path) -> str | None:
    """The source an overlay folder records, or None when it is not (readably) an overlay."""
    recorded = _record(target).get("source")
    return recorded if isinstance(recorded, str) else None


def existing_overlay(source: Path, out: Path | str) -> Path | None:
    """``out`` when it is already an overlay of ``source``, else None."""
    target = Path(out).expanduser().absolute()
    recorded = _recorded_source(target)
    return target if recorded is not None and Path(recorded).resolve() == source.resolve() else None


def _interrupted_creation(source: Path, target: Path) -> bool:
    """Whether ``target`` is what a killed :func:`make_overlay` of ``source`` leaves: links to
    the source's entries under their own names, and at most an empty ``.patcher`` (or one
    holding a temp file). Anything else in it is the user's, and is not touched."""
    for entry in target.iterdir():
        if entry.name == JOURNAL_DIR and not entry.is_symlink() and entry.is_dir():
            if set(entry.iterdir()) - set(stale_temp_files([entry])):
                return False
        elif not entry.is_symlink() or entry.resolve() != (source / entry.name).resolve():
            return False
    return True


def _follow_source(source: Path, target: Path) -> None:
    """Give ``target`` a link to each entry of ``source`` it lacks (all of them in a new
    overlay; in an existing one, those the store gained since, such as a new
    generation_config.json) and none left dangling for an entry the source lost. Patched
    files and anything not linked to the source stay."""
    try:
        for entry in sorted(source.iterdir()):
            link = target / entry.name
            if entry.name != JOURNAL_DIR and not link.is_symlink() and not link.exists():
                with contextlib.suppress(FileExistsError):  # another run made it meanwhile
                    link.symlink_to(entry)
        for link in sorted(target.iterdir()):
            if link.is_symlink() and not link.exists() and link.readlink() == source / link.name:
                with contextlib.suppress(FileNotFoundError):
                    link.unlink()
    except OSError as exc:
        raise write_error(exc, target) from exc


def _repoint(old: Path, new: Path, target: Path) -> None:
    """Point ``target``'s links to entries of ``old`` at the same entries of ``new``, then
    record ``new`` as its source and ``old`` among the former ones (the journal's recorded
    links still name them: a revert puts back a link to ``new``'s file). Each link is swapped
    atomically and the record is written last, so a run killed midway is finished by the
    next one."""
    for link in sorted(target.iterdir()):
        if link.is_symlink() and link.readlink() == old / link.name:
            atomic_symlink(link, str(new / link.name), root=target)
    record = target / JOURNAL_DIR / OVERLAY_FILE
    moved_from = [*_recorded_moves(target), str(old)]
    text = json.dumps({"source": str(new), "moved_from": moved_from}, indent=1) + "\n"
    atomic_write(record, text.encode())
    _follow_source(new, target)


def _recorded_moves(target: Path) -> list[str]:
    """The former sources an overlay records (none when it never moved)."""
    moves = _record(target).get("moved_from")
    return [m for m in moves if isinstance(m, str)] if isinstance(moves, list) else []


def make_overlay(source: Path | str, out: Path | str) -> Path:
    """Create (or reuse) the overlay ``out`` of ``source``; returns its absolute path."""
    ckpt = open_checkpoint(source)
    target = Path(out).expanduser().absolute()
    if existing_overlay(ckpt.root, target) is not None:
        _follow_source(ckpt.root, target)
        if _record(target).get("creating"):  # a creation killed midway: finished now
            _write_record(target, {"source": str(ckpt.root)})
        return target
    recorded = _recorded_source(target)
    if recorded is not None:
        if Path(recorded).exists():
            raise CheckpointError(
                f"already an overlay of {recorded}",
                file=target,
                hint="choose another --overlay folder",
            )
        # The store it was made from is gone (moved, or mounted elsewhere in a restarted pod):
        # it becomes an overlay of the source named now, patched copies and journal kept. A
        # different revision there shows as a new upstream, which sync refuses (rebase).
        _repoint(Path(recorded), ckpt.root, target)
        return target
    if ckpt.root.resolve() == target.resolve() or ckpt.root.resolve() in target.resolve().parents:
        raise CheckpointError(
            "the overlay cannot be inside its source",
            file=target,
            hint="choose a folder outside the checkpoint",
        )
    # An empty folder, or what a killed creation left, is (re)used; anything else is refused.
    resumed = target.is_dir() and _interrupted_creation(ckpt.root, target)
    if target.exists() and not resumed:
        raise CheckpointError(
            "exists and is not an empty folder", file=target, hint="choose a new --overlay folder"
        )
    try:
        target.mkdir(parents=True, exist_ok=True)
        for temp in stale_temp_files([target / JOURNAL_DIR]):
            temp.unlink()
    except OSError as exc:
        raise write_error(exc, target) from exc
    # The record first, marked as being made: a run killed while it links is then a half-made
    # overlay that every command names as such (and the next apply or sync finishes), never
    # a folder of links that looks like a checkpoint with nothing applied.
    ensure_dir(target / JOURNAL_DIR)
    _write_record(target, {"source": str(ckpt.root), "creating": True})
    _follow_source(ckpt.root, target)  # a link to every entry of the source
    _write_record(target, {"source": str(ckpt.root)})
    return target


def _write_record(target: Path, record: dict[str, object]) -> None:
    text = json.dumps(record, indent=1) + "\n"
    atomic_write(target / JOURNAL_DIR / OVERLAY_FILE, text.encode())
