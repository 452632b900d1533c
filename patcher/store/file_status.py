"""Status: the applied transforms, and the state of every journalled file."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from patcher.errors import ConflictError, UnsafePathError
from patcher.results import JsonResult
from patcher.store.beneath import open_beneath
from patcher.store.checkpoint import Checkpoint, open_checkpoint
from patcher.store.files import open_current, read_current
from patcher.store.fsio import file_sha256
from patcher.store.hfcache import downloaded_etag, git_blob_sha1, patched_siblings, snapshot_repo
from patcher.store.journal import Entry, FileRecord, Journal
from patcher.store.session import read_journal

FileState = Literal[
    "patched", "changed", "original", "missing", "reverted", "edited", "half-done", "upstream"
]


@dataclass(frozen=True, slots=True)
class FileStatus:
    """One journalled file: its state and the entries that touched it."""

    path: str
    state: FileState
    entries: tuple[int, ...]


@dataclass(frozen=True, slots=True, repr=False)
class Status(JsonResult):
    """The applied transforms (oldest first) and every journalled file."""

    checkpoint: Path
    applied: tuple[Entry, ...]
    reverted: tuple[Entry, ...]
    files: tuple[FileStatus, ...]
    unsettled: tuple[Entry, ...] = ()
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """A status as JSON."""
        return {
            "checkpoint": str(self.checkpoint),
            "applied": [_entry_json(e) for e in self.applied],
            "reverted": [_entry_json(e) for e in self.reverted],
            "files": [
                {"path": f.path, "state": f.state, "entries": list(f.entries)} for f in self.files
            ],
            "unsettled": [_entry_json(e) for e in self.unsettled],
            "notes": list(self.notes),
        }


def checkpoint_status(checkpoint: Path | str, *, revision: str | None = None) -> Status:
    """Classify every journalled file of the checkpoint; reads only the journalled files."""
    ckpt = open_checkpoint(checkpoint, revision)
    journal = read_journal(ckpt)
    reverted = tuple(e for e in journal.entries if e.state == "reverted")
    notes: list[str] = []
    if not journal.applied:
        ref = snapshot_repo(ckpt.root)
        for sibling in patched_siblings(ckpt.root)[:1]:
            assert ref is not None
            notes.append(
                f"revision {sibling.name[:12]} of {ref.repo_id} has transforms applied; carry "
                f"them to this revision: patcher rebase {ref.repo_id}"
            )
    return Status(
        ckpt.root,
        journal.applied,
        reverted,
        file_states(ckpt, journal),
        journal.unsettled,
        tuple(notes),
    )


def _current(ckpt: Checkpoint, path: str, journal: Journal, touching: list[Entry]) -> str | None:
    """The file's hash, without reading it when its size rules out every recorded state
    (a journalled file replaced by a 2 GB one must not be read whole)."""
    records = [r for e in journal.entries for r in e.files if r.path == path]
    sizes = {r.before_size for r in records} | {r.after_size for r in records}
    fd = open_current(ckpt, path)  # opened once: the size and the hash are of one file
    if fd is None:
        return None
    try:
        size = os.fstat(fd).st_size
        if touching and None not in sizes and size not in sizes:
            return f"size:{size}"  # matches no recorded hash: changed
        return file_sha256(fd)
    finally:
        os.close(fd)


def _redownloaded(ckpt: Checkpoint, path: str) -> bool:
    """Whether a ``--local-dir`` download put these exact bytes here (its etag matches)."""
    etag = downloaded_etag(ckpt.root, path)
    if etag is None:
        return False
    data = read_current(ckpt, path)
    return data is not None and git_blob_sha1(data) == etag


def _new_in_source(ckpt: Checkpoint, path: str, first: FileRecord) -> bool:
    """Whether an overlay's source now holds other bytes than the ones this patched copy was
    made from (a new upstream revision landed in the read-only store): the copy is stale."""
    source = ckpt.overlay_source
    if source is None or first.link is None:
        return False
    try:
        fd = open_beneath(source, path)
    except (OSError, UnsafePathError):
        return False  # gone from the source, or not a file: nothing newer to rebase onto
    try:
        size = os.fstat(fd).st_size
        if first.before_size is not None and size != first.before_size:
            return True
        return file_sha256(fd) != first.before
    finally:
        os.close(fd)


def file_states(ckpt: Checkpoint, journal: Journal) -> tuple[FileStatus, ...]:
    """The state of every file the journal names."""
    files: list[FileStatus] = []
    paths = dict.fromkeys(r.path for e in journal.entries for r in e.files)
    for path in paths:
        touching = [e for e in journal.applied if e.file(path)]
        current = _current(ckpt, path, journal, touching)
        state: FileState
        interrupted = tuple(e.id for e in journal.unsettled if e.file(path))
        if interrupted:
            # A change a crash left half done, that could not be settled (read-only, full
            # disk, or the file changed since): never report it as clean.
            files.append(FileStatus(path, "half-done", interrupted))
            continue
        if not touching:
            ids = tuple(e.id for e in journal.entries if e.file(path))
            # Reverted: back to bytes an entry found (entries reverted in any order end on
            # one of them), unless edited since: a hand edit revert --force kept, which
            # differs from upstream and is said so.
            found = {r.before for e in journal.entries for r in e.files if r.path == path}
            if current is None:
                state = "missing"
            else:
                state = "reverted" if current in found else "edited"
        else:
            first, last = touching[0].file(path), touching[-1].file(path)
            assert first is not None and last is not None
            ids = tuple(e.id for e in touching)
            if current is None:
                state = "missing"
            elif current == last.after:
                state = "upstream" if _new_in_source(ckpt, path, first) else "patched"
            elif current == first.before:
                state = "original"
            elif _redownloaded(ckpt, path):
                state = "upstream"
            else:
                state = "changed"
        files.append(FileStatus(path, state, ids))
    return tuple(files)


def refuse_unsettled_files(ckpt: Checkpoint, journal: Journal, doing: str, hint: str) -> None:
    """Before a rebuild from the upstream bytes (``sync``, replacing an entry): refuse when a
    journalled file is anything but as patcher left it (or back to those upstream bytes),
    since the rebuild would lose that."""
    for state in file_states(ckpt, journal):
        # "edited": no applied entry holds it, so a rebuild takes it as it is.
        if state.state not in ("patched", "reverted", "original", "edited"):
            upstream = state.state == "upstream"
            raise ConflictError(
                f"{'a new upstream version' if upstream else state.state} since patched; "
                f"{doing} rebuilds from the upstream bytes it was patched from and would lose "
                "that",
                file=ckpt.path(state.path),
                hint=f"patcher rebase {ckpt.arg}, then run it again" if upstream else hint,
            )


def _entry_json(e: Entry) -> dict[str, Any]:
    return {
        "id": e.id,
        "transform": e.transform,
        "name": e.transform,
        "params": dict(e.params),
        "source": e.source,
        "time": e.time,
        "tool_version": e.tool_version,
        "files": [f.path for f in e.files],
        "target": None if e.target is None else dict(e.target),
    }
