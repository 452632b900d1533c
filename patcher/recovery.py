"""Settling what a crash left half done, by hashing the files.

A ``pending`` apply is rolled back: files already patched get their original bytes back and
the entry is dropped. A ``reverting`` entry is rolled forward: every file is given the bytes
recorded in ``targets`` before the first write, then the entry is marked reverted.
"""

from __future__ import annotations

from collections.abc import Callable

from patcher.checkpoint import Checkpoint
from patcher.errors import JournalError
from patcher.files import current_hash, replace_file
from patcher.journal import Entry, FileRecord, Journal, load_object


def restore_original(checkpoint: Checkpoint, record: FileRecord, *, expect: str | None) -> None:
    """Put back the exact original: the symlink it was, or its original bytes."""
    data = load_object(checkpoint.journal_dir, record.before)
    replace_file(checkpoint, record.path, data, expect=expect, link=record.link)


def _roll_back(checkpoint: Checkpoint, entry: Entry) -> None:
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
        if target is None or current_hash(checkpoint, record.path) == target:
            continue
        data = load_object(checkpoint.journal_dir, target)
        link = record.link if target == record.before else None
        replace_file(checkpoint, record.path, data, expect=None, link=link)


def settle(checkpoint: Checkpoint, journal: Journal, save: Callable[[Journal], None]) -> None:
    """Bring every unsettled entry to a settled state and save the journal after each."""
    for entry in journal.unsettled:
        if entry.state == "pending":
            _roll_back(checkpoint, entry)
            journal = journal.drop(entry.id)
        else:
            _roll_forward(checkpoint, entry)
            journal = journal.put(entry.with_state("reverted", targets={}))
        save(journal)
