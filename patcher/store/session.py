"""A write session on a checkpoint: the lock held, the journal loaded and settled; the one
write-ahead step every writing operation goes through; and the journal for reading, settled
first when a crash left it half done."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from patcher.errors import PatcherError
from patcher.store.checkpoint import Checkpoint
from patcher.store.files import current_hash, replace_file
from patcher.store.fsio import ensure_dir, set_mtime_ns, sha256, stale_temp_files
from patcher.store.journal import Journal, journal_digest, load_journal, save_journal, temp_dirs
from patcher.store.lock import Held, locked
from patcher.store.recovery import settle


@dataclass(frozen=True, slots=True)
class FileWrite:
    """One file of a write-ahead step: ``data`` (or a symlink to ``link``, whose target holds
    ``data``) written over the file while it still holds ``expect`` (a hash, the bytes, or None
    for a file that is absent), then ``mtime_ns`` set on a written file. ``old`` (with
    ``old_link`` and ``old_mtime_ns``) is what a failed step puts back; None: nothing to put
    back (the file was absent)."""

    path: str
    data: bytes
    expect: str | bytes | None
    link: str | None = None
    mtime_ns: int | None = None
    old: bytes | None = None
    old_link: str | None = None
    old_mtime_ns: int | None = None


def _put_back(checkpoint: Checkpoint, writes: Sequence[FileWrite]) -> bool:
    """After a step failed: every file that holds its new bytes gets its old ones back, judged
    by hashing what is on disk, not by what we think was written. True when all are back."""
    for w in writes:
        new = sha256(w.data)
        if w.old is not None and current_hash(checkpoint, w.path) == new:
            replace_file(checkpoint, w.path, w.old, expect=new, link=w.old_link)
            if w.old_link is None and w.old_mtime_ns is not None:
                set_mtime_ns(checkpoint.path(w.path), w.old_mtime_ns)
    return all(
        current_hash(checkpoint, w.path) == (None if w.old is None else sha256(w.old))
        for w in writes
    )


def _say_half_done(failure: BaseException, checkpoint: Checkpoint) -> None:
    """A failure that leaves the change recorded as pending: the next command settles it, and
    the message must say so rather than let "run it again" read as "nothing happened"."""
    if isinstance(failure, PatcherError):
        failure.reworded(
            hint="the change is left half done and the next command settles it (finished or "
            f"undone): run patcher status {checkpoint.arg} to see how it ended"
        )


@dataclass(slots=True)
class Session:
    """The journal as it stands while the lock is held; ``save`` writes it atomically."""

    checkpoint: Checkpoint
    journal: Journal
    digest: str | None
    held: Held | None = None

    def save(self, journal: Journal) -> None:
        """Write ``journal`` and make it the current one, if the journal on disk is still the
        one this session read (a compare-and-swap: the lock may silently not hold) and the lock
        is still ours."""
        if self.held is not None:
            self.held.check()
        try:
            self.digest = save_journal(self.checkpoint.journal_dir, journal, expect=self.digest)
        except PatcherError:
            # A save can fail after its rename landed (the folder's fsync): then the journal
            # on disk is this one, and the session must know it to write the next.
            with contextlib.suppress(PatcherError):
                if load_journal(self.checkpoint.journal_dir) == journal:
                    self.digest = journal_digest(self.checkpoint.journal_dir)
                    self.journal = journal
            raise
        self.journal = journal

    def _take_back(
        self, failure: BaseException, before: Journal, writes: Sequence[FileWrite]
    ) -> None:
        """After ``failure``: put the files back and the journal with them; where that cannot
        be done, the change stays pending and ``failure`` says so."""
        with contextlib.suppress(BaseException):
            if _put_back(self.checkpoint, writes):
                self.save(before)
                return
        _say_half_done(failure, self.checkpoint)

    def write_ahead(self, ahead: Journal, writes: Sequence[FileWrite], done: Journal) -> None:
        """The one write-ahead step: save ``ahead`` (the change recorded as pending, with the
        hashes its files have and will have), write the files, then save ``done``. On any
        failure (an error, Ctrl-C) the files are put back and the journal with them; where a
        file cannot be put back, ``ahead`` stays for the next command to settle
        (``patcher.store.recovery``). A kill at any point is settled the same way."""
        before = self.journal
        try:
            self.save(ahead)
        except BaseException as failure:
            if self.journal is ahead:  # it landed after all: take it back, nothing is written
                self._take_back(failure, before, ())
            raise
        try:
            for w in writes:
                if self.held is not None:
                    self.held.check()
                replace_file(self.checkpoint, w.path, w.data, expect=w.expect, link=w.link)
                if w.link is None and w.mtime_ns is not None:
                    set_mtime_ns(self.checkpoint.path(w.path), w.mtime_ns)
        except BaseException as failure:
            self._take_back(failure, before, writes)
            raise
        try:
            self.save(done)
        except PatcherError as exc:
            if self.journal is done:  # landed: the change is made and recorded
                exc.reworded(
                    problem=exc.problem + "; the change was made and recorded all the same",
                    hint="check the disk: patcher status " + self.checkpoint.arg,
                )
            else:
                _say_half_done(exc, self.checkpoint)
            raise


@contextlib.contextmanager
def write_session(checkpoint: Checkpoint) -> Iterator[Session]:
    """Lock the checkpoint, load its journal and settle any change a crash left half done."""
    ensure_dir(checkpoint.journal_dir)
    with locked(checkpoint.journal_dir / "lock") as held:
        digest = journal_digest(checkpoint.journal_dir)
        session = Session(checkpoint, load_journal(checkpoint.journal_dir), digest, held)
        for stale in stale_temp_files(temp_dirs(checkpoint, session.journal)):
            # Only writers holding this lock make temp files: these are a killed one's.
            with contextlib.suppress(OSError):
                stale.unlink()
        settle(session.checkpoint, session.journal, session.save)
        yield session


def read_journal(checkpoint: Checkpoint) -> Journal:
    """The journal for reading. If a crash left a change half done, it is settled first, under
    the lock (which is why a read-only command may write), unless the checkpoint is read-only."""
    journal = load_journal(checkpoint.journal_dir)
    if journal.unsettled or _has_temp_files(checkpoint, journal):
        try:
            with write_session(checkpoint) as session:
                return session.journal
        except PatcherError:
            # Read-only, full disk, or a file changed since the crash: report the half-done
            # entry as it is; a writing command names the problem.
            return load_journal(checkpoint.journal_dir)
    return journal


def _has_temp_files(checkpoint: Checkpoint, journal: Journal) -> bool:
    if not checkpoint.journal_dir.is_dir():
        return False
    return bool(stale_temp_files(temp_dirs(checkpoint, journal)))
