"""``diff``: the checkpoint against its original state, from the journal (no network)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patcher.errors import PatcherError
from patcher.results import JsonResult
from patcher.store.checkpoint import open_checkpoint
from patcher.store.files import current_hash, read_current
from patcher.store.journal import load_object
from patcher.store.session import read_journal
from patcher.text.structdiff import Change, compare_json
from patcher.text.textdiff import unified


@dataclass(frozen=True, slots=True)
class FileDiff:
    """One journalled file against its original: a unified diff and structural changes."""

    path: str
    unified: str
    changes: tuple[Change, ...]


@dataclass(frozen=True, slots=True, repr=False)
class CheckpointDiff(JsonResult):
    """All journalled files that differ from their originals."""

    checkpoint: Path
    files: tuple[FileDiff, ...]
    journalled: bool = True  # False: patcher never patched this checkpoint

    def to_json(self) -> dict[str, Any]:
        """A structural diff as JSON."""
        return {
            "checkpoint": str(self.checkpoint),
            "journalled": self.journalled,
            "files": [
                {
                    "path": f.path,
                    "changes": [
                        {"pointer": c.pointer, "kind": c.kind, "old": c.old, "new": c.new}
                        for c in f.changes
                    ],
                }
                for f in self.files
            ],
        }


def _loads_replacing(data: bytes) -> Any:
    """A file parsed as diff shows it: bytes that are not UTF-8 read as U+FFFD."""
    return json.loads(data.decode("utf-8", "replace"))


def diff(
    checkpoint: Path | str, *, structural: bool = True, revision: str | None = None
) -> CheckpointDiff:
    """Compare every file the journal knows with its original (upstream) bytes, whoever
    changed it: an applied transform, or a hand edit that a revert --force kept."""
    ckpt = open_checkpoint(checkpoint, revision)
    journal = read_journal(ckpt)
    results = []
    paths = dict.fromkeys(r.path for e in journal.entries for r in e.files)
    for path in paths:
        applied = [e.file(path) for e in journal.applied if e.file(path)]
        # The upstream bytes: what the first applied entry found; with none applied, what
        # the latest stack of entries started from (an entry whose before no entry made).
        every = [r for e in journal.entries if (r := e.file(path)) is not None]
        made = {r.after for r in every}
        roots = [r for r in every if r.before not in made] or every
        first = applied[0] if applied else roots[-1]
        assert first is not None
        if not applied and current_hash(ckpt, path) in {r.before for r in every}:
            continue  # reverted: back to bytes an entry found
        try:
            original = load_object(ckpt.journal_dir, first.before)
        except (PatcherError, OSError):  # an original the journal no longer holds
            continue
        current = read_current(ckpt, path) or b""
        if current == original:
            continue
        text = unified(original, current, f"a/{path} (original)", f"b/{path}")
        changes: tuple[Change, ...] = ()
        if structural and first.kind == "json":
            try:
                changes = compare_json(original, current, loads=_loads_replacing)
            except (ValueError, RecursionError):  # not JSON, or nested past Python's limit
                changes = ()
        results.append(FileDiff(path, text, changes))
    return CheckpointDiff(ckpt.root, tuple(results), journalled=bool(journal.entries))
