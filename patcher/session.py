"""A write session on a checkpoint: the lock held, the journal loaded and settled."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from patcher.checkpoint import Checkpoint
from patcher.fsio import ensure_dir, stale_temp_files
from patcher.journal import Journal, journal_digest, load_journal, save_journal, temp_dirs
from patcher.lock import locked
from patcher.recovery import settle


@dataclass(slots=True)
class Session:
    """The journal as it stands while the lock is held; ``save`` writes it atomically."""

    checkpoint: Checkpoint
    journal: Journal
    digest: str | None

    def save(self, journal: Journal) -> None:
        """Write ``journal`` and make it the current one, if the journal on disk is still the
        one this session read (a compare-and-swap: the lock may silently not hold)."""
        self.digest = save_journal(self.checkpoint.journal_dir, journal, expect=self.digest)
        self.journal = journal


@contextlib.contextmanager
def write_session(checkpoint: Checkpoint) -> Iterator[Session]:
    """Lock the checkpoint, load its journal and settle any change a crash left half done."""
    ensure_dir(checkpoint.journal_dir)
    with locked(checkpoint.journal_dir / "lock"):
        digest = journal_digest(checkpoint.journal_dir)
        session = Session(checkpoint, load_journal(checkpoint.journal_dir), digest)
        for stale in stale_temp_files(temp_dirs(checkpoint, session.journal)):
            # Only writers holding this lock make temp files: these are a killed one's.
            with contextlib.suppress(OSError):
                stale.unlink()
        settle(session.checkpoint, session.journal, session.save)
        yield session
