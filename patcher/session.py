"""A write session on a checkpoint: the lock held, the journal loaded and settled."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from patcher.checkpoint import Checkpoint
from patcher.fsio import ensure_dir
from patcher.journal import Journal, load_journal, save_journal
from patcher.lock import locked
from patcher.recovery import settle


@dataclass(slots=True)
class Session:
    """The journal as it stands while the lock is held; ``save`` writes it atomically."""

    checkpoint: Checkpoint
    journal: Journal

    def save(self, journal: Journal) -> None:
        """Write ``journal`` and make it the current one."""
        save_journal(self.checkpoint.journal_dir, journal)
        self.journal = journal


@contextlib.contextmanager
def write_session(checkpoint: Checkpoint) -> Iterator[Session]:
    """Lock the checkpoint, load its journal and settle any change a crash left half done."""
    ensure_dir(checkpoint.journal_dir)
    with locked(checkpoint.journal_dir / "lock"):
        session = Session(checkpoint, load_journal(checkpoint.journal_dir))
        settle(session.checkpoint, session.journal, session.save)
        yield session
