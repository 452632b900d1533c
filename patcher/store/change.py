"""A change to a checkpoint, planned in memory, and the one function that writes it.

Every command that changes a checkpoint plans a ``Change`` on the journal it read under the
lock, with nothing written: the bytes the journal must keep, the journal while the files are
written (``ahead``: the entries pending, with the hash each file has and will have), the file
writes (each checked against the bytes it replaces), and the journal once done. A dry run is a
change that is not committed. ``commit`` is the only place a change reaches the disk: the kept
bytes first, then ``Session.write_ahead``, which a kill, an error or Ctrl-C leaves before or
after (``patcher.store.recovery`` settles a killed one on the next command).
"""

from __future__ import annotations

from typing import NamedTuple

from patcher.errors import ConflictError
from patcher.store.journal import Journal, store_object
from patcher.store.session import FileWrite, Session


# NamedTuples, not frozen dataclasses: every writing command imports this module, and a frozen
# dataclass costs about 0.7 ms to define, a NamedTuple 0.1 ms (docs/benchmark.md).
class Keep(NamedTuple):
    """Bytes the journal must keep under ``objects/`` (an original, a definition, a target).
    ``source``: the checkpoint file that holds them now and is about to be replaced, kept by a
    hard link where it can be, and never more readable than it."""

    data: bytes
    digest: str | None = None  # the bytes' sha256, when the planner has it already
    source: str | None = None


class Change(NamedTuple):
    """A change planned on ``base``: ``keep``, then ``ahead``, the ``writes``, then ``done``."""

    base: Journal
    ahead: Journal
    writes: tuple[FileWrite, ...]
    done: Journal
    keep: tuple[Keep, ...] = ()


def commit(session: Session, change: Change) -> Journal:
    """Write ``change`` under ``session``'s lock, as one write-ahead step; returns the journal
    it leaves. A change planned on another journal than the session's is refused."""
    if change.base is not session.journal and change.base != session.journal:
        raise ConflictError(
            "the journal changed since this change was planned",
            file=session.checkpoint.journal_dir / "journal.json",
            hint=f"run the command again (patcher status {session.checkpoint.arg})",
        )
    journal_dir = session.checkpoint.journal_dir
    for kept in change.keep:
        source = None if kept.source is None else session.checkpoint.path(kept.source)
        store_object(journal_dir, kept.data, digest=kept.digest, source=source)
    if not change.writes and change.ahead == change.done:
        session.save(change.done)  # the journal alone (the upstream it was downloaded from)
    else:
        session.write_ahead(change.ahead, change.writes, change.done)
    return change.done
