"""``patcher restore``: put back the bytes patcher left over a hand edit (or a deletion).

A hand edit of a patched file blocks revert (it would lose the edit) and sync (it rebuilds
from the upstream bytes). patcher holds what it wrote: the original of each entry's file and
the forward patch, so the patched bytes can be rebuilt exactly and written back over the edit.
The journal is unchanged (the entries stay applied, now with their files as recorded); a dry
run shows the diff of what would be discarded. ``--upstream`` goes the other way: it reverts,
discarding the hand edit, every entry that patched the file, so the upstream bytes are back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patcher.errors import ConflictError
from patcher.ops.reapply import patched_bytes
from patcher.ops.revert import EntryRevert, FileRevert, RevertResult, revert
from patcher.results import JsonResult
from patcher.store.change import Change, Keep, commit
from patcher.store.checkpoint import Checkpoint, open_checkpoint
from patcher.store.file_status import file_states
from patcher.store.fsio import sha256
from patcher.store.journal import Entry, FileRecord, Journal, State, load_object
from patcher.store.session import FileWrite, read_journal, write_session
from patcher.store.snapshot import Snapshot
from patcher.text.textdiff import unified


@dataclass(frozen=True, slots=True, repr=False)
class RestoreResult(JsonResult):
    """The files put back (for a dry run: that would be), each with the diff from what is
    there now to what patcher left (what the restore discards, as removals)."""

    checkpoint: Path
    files: tuple[tuple[str, str], ...]
    dry_run: bool

    def to_json(self) -> dict[str, Any]:
        """A restore result as JSON."""
        return {
            "checkpoint": str(self.checkpoint),
            "dry_run": self.dry_run,
            "files": [{"path": p, "diff": d} for p, d in self.files],
        }


def restore(
    checkpoint: Path | str, file: str | None = None, *, dry_run: bool = False
) -> RestoreResult:
    """Write the bytes patcher left back over every journalled file that was edited by hand
    or deleted since (``file``: that one only). Files as patcher left them are untouched; a
    file patcher never patched, or one a new upstream download replaced (``rebase``), is
    refused. A dry run takes no lock and writes nothing."""
    ckpt = open_checkpoint(checkpoint)
    if dry_run:
        writes, _ = _plan_restore(Snapshot(ckpt), file)
        return RestoreResult(ckpt.root, _shown(writes), True)
    with write_session(ckpt) as session:
        journal = session.journal
        writes, owner = _plan_restore(Snapshot.of(session), file)
        if writes:
            # One pending record for the whole step: the entries that last patched the files
            # are "reapplying", with the bytes each file holds now and the patched bytes it
            # gets (kept as objects), so a kill between two files is rolled forward.
            ahead = journal
            for write in writes:
                target = sha256(write.data)
                ahead = _pending(ahead, owner[write.path].id, "reapplying", write, target)
            keep = tuple(Keep(write.data) for write in writes)
            commit(session, Change(journal, ahead, tuple(writes), journal, keep))
    return RestoreResult(ckpt.root, _shown(writes), False)


def _plan_restore(snapshot: Snapshot, file: str | None) -> tuple[list[FileWrite], dict[str, Entry]]:
    """The writes that put the patched bytes back, and the entry that last patched each file."""
    ckpt, journal = snapshot.checkpoint, snapshot.journal
    states = {f.path: f.state for f in file_states(ckpt, journal)}
    last: dict[str, FileRecord] = {}
    owner: dict[str, Entry] = {}
    for entry in journal.applied:
        for record in entry.files:
            last[record.path] = record
            owner[record.path] = entry
    if file is not None:
        if file not in last:
            raise ConflictError(
                "no applied transform patched this file",
                file=ckpt.root / file,
                hint=f"patcher status {ckpt.arg} lists the patched files",
            )
        if states.get(file) == "upstream":
            raise ConflictError(
                "a new upstream version is here, not a hand edit",
                file=ckpt.path(file),
                hint=f"patcher rebase {ckpt.arg}",
            )
    writes = []
    for path in last:
        if (file is None or path == file) and states.get(path) in ("changed", "missing"):
            now = snapshot.read(path)
            writes.append(FileWrite(path, patched_bytes(ckpt, last[path]), expect=now, old=now))
    return writes, owner


def _shown(writes: list[FileWrite]) -> tuple[tuple[str, str], ...]:
    """Each file's diff from what is there now to the patched bytes (what a restore discards)."""
    return tuple(
        (w.path, unified(w.old or b"", w.data, f"{w.path} (now)", f"{w.path} (patched)"))
        for w in writes
    )


def restore_upstream(
    checkpoint: Path | str, file: str | None = None, *, dry_run: bool = False
) -> RevertResult:
    """Put the upstream bytes back: revert every applied entry that patched ``file`` (or,
    without it, every file edited by hand or deleted since), each file getting the bytes from
    before the entry over the hand edit. An entry that patched other files too reverts them
    as well; the result lists each entry."""
    ckpt = open_checkpoint(checkpoint)
    journal = read_journal(ckpt)
    patched = {r.path for e in journal.applied for r in e.files}
    unpatched = _edited_unpatched(ckpt, journal, patched, file)
    if unpatched:
        return _put_upstream_back(ckpt, unpatched, dry_run)
    if file is not None and file not in patched:
        raise ConflictError(
            "no applied transform patched this file",
            file=ckpt.root / file,
            hint=f"patcher status {ckpt.arg} lists the patched files",
        )
    if file is not None:
        chosen = {file}
    else:
        chosen = {f.path for f in file_states(ckpt, journal) if f.state in ("changed", "missing")}
    ids = tuple(e.id for e in journal.applied if any(r.path in chosen for r in e.files))
    if not ids:
        return RevertResult("nothing-to-do", ckpt.root, ())
    return revert(checkpoint, entries=ids, discard=True, dry_run=dry_run)


def _edited_unpatched(
    ckpt: Checkpoint, journal: Journal, patched: set[str], file: str | None
) -> list[str]:
    """The journalled files no applied entry patches that are not the upstream bytes now (a
    hand edit a forced revert kept, a deletion): nothing is left to revert, the kept upstream
    bytes are written back."""
    return [
        f.path
        for f in file_states(ckpt, journal)
        if f.path not in patched and f.state in ("edited", "missing") and file in (None, f.path)
    ]


def _put_upstream_back(ckpt: Checkpoint, paths: list[str], dry_run: bool) -> RevertResult:
    """Write the upstream bytes (what the file's first entry found) over ``paths``, in one
    step; the journal is unchanged (nothing applied, the files reverted). A dry run takes no
    lock and writes nothing."""
    if dry_run:
        _, entries = _upstream_writes(Snapshot(ckpt), paths)
        return RevertResult("dry-run", ckpt.root, entries)
    with write_session(ckpt) as session:
        journal = session.journal
        writes, entries = _upstream_writes(Snapshot.of(session), paths)
        # Pending as one step: each file's first entry "reverting" to the upstream bytes.
        ahead = journal
        for write, entry in zip(writes, entries, strict=True):
            record = next(e for e in ahead.entries if e.id == entry.entry_id).file(write.path)
            assert record is not None
            ahead = _pending(ahead, entry.entry_id, "reverting", write, record.before)
        commit(session, Change(journal, ahead, tuple(writes), journal))
    return RevertResult("reverted", ckpt.root, entries)


def _upstream_writes(
    snapshot: Snapshot, paths: list[str]
) -> tuple[list[FileWrite], tuple[EntryRevert, ...]]:
    """The writes that put each path's upstream bytes (its first entry's) back."""
    ckpt, journal = snapshot.checkpoint, snapshot.journal
    writes: list[FileWrite] = []
    entries: list[EntryRevert] = []
    for path in paths:
        first = next(e for e in journal.entries if e.file(path))
        record = first.file(path)
        assert record is not None
        data = load_object(ckpt.journal_dir, record.before, journal)
        now = snapshot.read(path)
        writes.append(FileWrite(path, data, expect=now, link=record.link, old=now))
        change = FileRevert(path, "discarded", now, data, record.link)
        entries.append(EntryRevert(first.id, first.transform, (change,)))
    return writes, tuple(entries)


def _pending(
    journal: Journal, entry_id: int, state: State, write: FileWrite, target: str
) -> Journal:
    """``journal`` with entry ``entry_id`` half done (``state``) for ``write``: the file holds
    ``write.old`` now (absent: no source) and gets the object ``target``; the next command
    rolls a killed step forward (``store.recovery``)."""
    entry = next(e for e in journal.entries if e.id == entry_id)
    sources = dict(entry.sources)
    if write.old is not None:
        sources[write.path] = sha256(write.old)
    return journal.put(
        entry.with_state(state, targets={**entry.targets, write.path: target}, sources=sources)
    )
