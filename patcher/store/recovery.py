"""Settling what a crash left half done, by hashing the files.

A ``pending`` apply is rolled back: files already patched get their original bytes back and
the entry is dropped. A ``reverting`` (or ``reapplying``) entry is rolled forward: every file
still holding the bytes it had when the change started (``sources``) is given the bytes
recorded in ``targets``, then the entry is marked reverted (or applied again). A file that
holds neither was changed since: it is left alone and the entry stays half done.
"""

from __future__ import annotations

from collections.abc import Callable

from patcher.errors import JournalError
from patcher.store.checkpoint import Checkpoint
from patcher.store.files import current_hash, replace_file
from patcher.store.fsio import set_mtime_ns
from patcher.store.journal import Entry, FileRecord, Journal, load_object


def restore_original(checkpoint: Checkpoint, record: FileRecord, *, expect: str | None) -> None:
    """Put back the exact original: the symlink it was, or its original bytes."""
    data = load_object(checkpoint.journal_dir, record.before)
    replace_file(checkpoint, record.path, data, expect=expect, link=record.link)
    if record.link is None:
        set_mtime_ns(checkpoint.path(record.path), record.before_mtime_ns)


def roll_back(checkpoint: Checkpoint, entry: Entry) -> None:
    """Put every file of a pending entry back to its original; raise when one matches
    neither its original nor its patched bytes."""
    for record in entry.files:
        current = current_hash(checkpoint, record.path)
        if current == record.before:
            continue
        if current != record.after:
            raise JournalError(
                f"an interrupted apply of {entry.transform!r} cannot be settled: the file matches "
                "neither its original nor its patched bytes",
                file=checkpoint.path(record.path),
                hint=f"inspect the file; its original is {checkpoint.journal_dir}/objects/"
                f"{record.before}",
            )
        restore_original(checkpoint, record, expect=current)


def _roll_forward(checkpoint: Checkpoint, entry: Entry) -> None:
    for record in entry.files:
        target = entry.targets.get(record.path)
        current = current_hash(checkpoint, record.path)
        if target is None or current == target:
            continue
        source = entry.sources.get(record.path)  # None: the file was absent at the start
        if current != source:
            # Changed since the interrupted revert (a hand edit?): writing would lose it.
            raise JournalError(
                f"an interrupted revert of {entry.transform!r} cannot be finished: the file "
                "changed since it started",
                file=checkpoint.path(record.path),
                hint=f"inspect the file; the bytes the revert was writing are "
                f"{checkpoint.journal_dir}/objects/{target}",
            )
        data = load_object(checkpoint.journal_dir, target)
        link = record.link if target == record.before else None
        replace_file(checkpoint, record.path, data, expect=source, link=link)


def settle(checkpoint: Checkpoint, journal: Journal, save: Callable[[Journal], None]) -> None:
    """Bring every unsettled entry to a settled state and save the journal after each."""
    for entry in journal.unsettled:
        if entry.state == "pending":
            roll_back(checkpoint, entry)
            journal = journal.drop(entry.id)
        elif entry.state == "reapplying":
            _roll_forward(checkpoint, entry)
            journal = journal.put(entry.with_state("applied", targets={}, sources={}))
        else:
            _roll_forward(checkpoint, entry)
            journal = journal.put(entry.with_state("reverted", targets={}, sources={}))
        save(journal)
