"""``patcher forget``: remove ``.patcher/`` from a checkpoint once nothing is applied."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patcher.errors import ConflictError, WriteError
from patcher.results import JsonResult
from patcher.store.checkpoint import open_checkpoint
from patcher.store.fsio import check_real_dir
from patcher.store.session import write_session


@dataclass(frozen=True, slots=True, repr=False)
class ForgetResult(JsonResult):
    """Whether the journal folder was removed (or, for a dry run, would be), and its size."""

    checkpoint: Path
    removed: bool
    existed: bool
    dry_run: bool
    bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        """A forget result as JSON."""
        return {
            "checkpoint": str(self.checkpoint),
            "existed": self.existed,
            "removed": self.removed,
            "dry_run": self.dry_run,
            "bytes": self.bytes,
        }


def forget_checkpoint(checkpoint: Path | str, *, dry_run: bool = False) -> ForgetResult:
    """Remove the checkpoint's journal, lock and stored originals (``.patcher/``), under the
    lock, only when no transform is applied: the files are then the upstream bytes, and the
    history has nothing left to undo. Refused while anything is applied."""
    ckpt = open_checkpoint(checkpoint)
    folder = ckpt.journal_dir
    if not folder.exists() and not folder.is_symlink():
        return ForgetResult(ckpt.root, False, False, dry_run)
    check_real_dir(folder)  # a linked journal folder is refused, never followed
    with write_session(ckpt) as session:
        applied = session.journal.applied
        if applied:
            names = ", ".join(f"{e.transform} (entry {e.id})" for e in applied)
            raise ConflictError(
                f"{len(applied)} transform(s) still applied: {names}",
                file=folder,
                hint=f"patcher revert {ckpt.arg} --all, then patcher forget {ckpt.arg}",
            )
        size = sum(
            p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()
        )
        if dry_run:
            return ForgetResult(ckpt.root, False, True, True, size)
        try:
            shutil.rmtree(folder)  # unlinks links inside, never follows them
        except OSError as exc:
            raise WriteError(
                f"cannot remove the journal folder ({exc.strerror})",
                file=folder,
                hint="check the folder's permissions",
            ) from None
    return ForgetResult(ckpt.root, True, True, False, size)
