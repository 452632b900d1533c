"""Overlays for read-only model stores: ``OUT`` holds a symlink to every entry of the source
checkpoint, and patcher replaces the links it edits with patched files (and restores them on
revert), so the source is never written."""

from __future__ import annotations

import json
from pathlib import Path

from patcher.checkpoint import JOURNAL_DIR, OVERLAY_FILE, open_checkpoint
from patcher.errors import CheckpointError
from patcher.fsio import atomic_write, ensure_dir, write_error


def existing_overlay(source: Path, out: Path | str) -> Path | None:
    """``out`` when it is already an overlay of ``source``, else None."""
    target = Path(out).expanduser().absolute()
    record = target / JOURNAL_DIR / OVERLAY_FILE
    if not record.is_file():
        return None
    recorded = json.loads(record.read_text()).get("source")
    return target if Path(recorded).resolve() == source.resolve() else None


def make_overlay(source: Path | str, out: Path | str) -> Path:
    """Create (or reuse) the overlay ``out`` of ``source``; returns its absolute path."""
    ckpt = open_checkpoint(source)
    target = Path(out).expanduser().absolute()
    record = target / JOURNAL_DIR / OVERLAY_FILE
    if record.is_file():
        recorded = json.loads(record.read_text()).get("source")
        if Path(recorded).resolve() != ckpt.root.resolve():
            raise CheckpointError(
                f"already an overlay of {recorded}",
                file=target,
                hint="choose another --overlay folder",
            )
        return target
    if ckpt.root.resolve() == target.resolve() or ckpt.root.resolve() in target.resolve().parents:
        raise CheckpointError(
            "the overlay cannot be inside its source",
            file=target,
            hint="choose a folder outside the checkpoint",
        )
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise CheckpointError(
            "exists and is not an empty folder", file=target, hint="choose a new --overlay folder"
        )
    try:
        target.mkdir(parents=True, exist_ok=True)
        for entry in sorted(ckpt.root.iterdir()):
            if entry.name != JOURNAL_DIR:
                (target / entry.name).symlink_to(entry)
    except OSError as exc:
        raise write_error(exc, target) from exc
    ensure_dir(target / JOURNAL_DIR)
    atomic_write(record, (json.dumps({"source": str(ckpt.root)}, indent=1) + "\n").encode())
    return target
