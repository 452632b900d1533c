"""``patcher forget``: remove ``.patcher/`` from a checkpoint once nothing is applied."""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patcher.errors import ConflictError, JournalError, WriteError
from patcher.results import JsonResult
from patcher.store.checkpoint import OVERLAY_FILE, Checkpoint, open_checkpoint
from patcher.store.file_status import file_states
from patcher.store.fsio import TMP_SUFFIX, check_real_dir
from patcher.store.journal import Journal
from patcher.store.session import read_journal, write_session


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


def forget(checkpoint: Path | str, *, dry_run: bool = False, force: bool = False) -> ForgetResult:
    """Remove the checkpoint's journal, lock and stored originals (``.patcher/``), under the
    lock, only when no transform is applied: the files are then the upstream bytes, and the
    history has nothing left to undo. Refused while anything is applied, and, unless
    ``force``, while a journalled file is not the upstream bytes (edited by hand after a
    forced revert, missing, or half-done): ``.patcher/objects`` then holds the only copy of
    those bytes (a local folder has no re-download)."""
    ckpt = open_checkpoint(checkpoint)
    folder = ckpt.journal_dir
    if not dry_run:
        _remove_forgotten(ckpt.root)
    if not folder.exists() and not folder.is_symlink():
        return ForgetResult(ckpt.root, False, False, dry_run)
    check_real_dir(folder)  # a linked journal folder is refused, never followed
    if dry_run:  # no lock taken, nothing written
        size = _forgettable(ckpt, read_journal(ckpt), force)
        return ForgetResult(ckpt.root, False, True, True, size)
    with write_session(ckpt) as session:
        size = _forgettable(ckpt, session.journal, force)
        # One step: renamed away whole, then removed. A kill mid-removal never leaves a
        # journal without its objects (or the reverse); what it leaves is removed next time.
        gone = ckpt.root / f"{_FORGOTTEN}{os.urandom(4).hex()}"
        try:
            folder.rename(gone)
        except OSError as exc:
            raise WriteError(
                f"cannot remove the journal folder ({exc.strerror})",
                file=folder,
                hint="check the folder's permissions",
            ) from None
    _remove_forgotten(ckpt.root)
    return ForgetResult(ckpt.root, True, True, False, size)


_FORGOTTEN = ".patcher-forgotten-"


def _remove_forgotten(root: Path) -> None:
    """Remove the journal folders a forget renamed away (its own, and any a kill left)."""
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        for entry in entries:
            if entry.name.startswith(_FORGOTTEN) and entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)  # never follows a link inside


def _forgettable(ckpt: Checkpoint, journal: Journal, force: bool) -> int:
    """Refuse what forget must not remove; else the size of ``.patcher/``."""
    folder = ckpt.journal_dir
    applied = journal.applied
    if applied:
        names = ", ".join(f"{e.transform} (entry {e.id})" for e in applied)
        raise ConflictError(
            f"{len(applied)} transform(s) still applied: {names}",
            file=folder,
            hint=f"patcher revert {ckpt.arg} --all, then patcher forget {ckpt.arg}",
        )
    if not force:
        _refuse_losing_upstream(ckpt, journal)
    return _journal_size(folder)


def _refuse_losing_upstream(ckpt: Checkpoint, journal: Journal) -> None:
    """Refuse while a journalled file is anything but the upstream bytes patcher kept."""
    lost = [f for f in file_states(ckpt, journal) if f.state != "reverted"]
    if not lost:
        return
    first = lost[0]
    names = ", ".join(f"{f.path} ({f.state})" for f in lost)
    raise ConflictError(
        f"{names}: not the upstream bytes, and .patcher/objects holds the only copy of them; "
        "forget would lose it",
        file=ckpt.path(first.path),
        hint=f"put them back: patcher restore {ckpt.arg} --upstream (or keep the edit and "
        f"drop the copy: patcher forget {ckpt.arg} --force)",
    )


_OURS = frozenset({"journal.json", "lock", "objects", OVERLAY_FILE})


def _journal_size(folder: Path) -> int:
    """The bytes of ``.patcher/``, walking only what patcher makes there (two levels: the
    journal, the lock, the objects); anything else is refused as damage, not walked or
    removed (a folder tree thousands deep, a link, a file of the user's)."""
    size = 0
    for directory in (folder, folder / "objects"):
        try:
            entries = list(os.scandir(directory))
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise WriteError(
                f"cannot read the journal folder ({exc.strerror})",
                file=directory,
                hint="check the folder's permissions",
            ) from None
        for entry in entries:
            temp = entry.name.endswith(TMP_SUFFIX)
            if (
                directory == folder
                and entry.name == "objects"
                and entry.is_dir(follow_symlinks=False)
            ):
                continue
            if (directory != folder or entry.name in _OURS or temp) and entry.is_file(
                follow_symlinks=False
            ):
                size += entry.stat(follow_symlinks=False).st_size
                continue
            raise JournalError(
                "journal is damaged (it holds something patcher did not make); nothing was removed",
                file=entry.path,
                hint=f"move it out of {folder}, then run patcher forget again",
            )
    return size
