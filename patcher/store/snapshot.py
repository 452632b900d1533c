"""The checkpoint as one plan sees it: the journal and the config files, each read once.

A planner (``plan_entry``, ``plan_rebuild``, a revert's, a restore's) takes a ``Snapshot`` and
returns a ``Change`` (``patcher.store.change``); ``commit`` then writes it, comparing each file
with the bytes the snapshot read. A snapshot reads a file the first time a planner asks for
it, and never again: two looks at one file in one plan see the same bytes. Only the files a
plan names are read (the config files a transform edits, the journal's files); weights never.

A snapshot over bytes held in memory (``holding``: a rebuild's fold) stands for the
checkpoint's files: they are plain files there, with no link and no mtime of their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from pathlib import Path

from patcher.store.checkpoint import Checkpoint
from patcher.store.files import read_current
from patcher.store.fsio import mtime_ns
from patcher.store.journal import Journal
from patcher.store.session import Session, read_journal


class Snapshot:
    """``checkpoint``'s journal and files as one plan reads them (see the module). The
    journal is the session's (read under the lock), or, for a look without one, read when
    first asked for."""

    # A plain class, not a frozen dataclass: every command imports this module, and defining
    # a frozen dataclass costs about 0.7 ms (docs/benchmark.md). Nothing assigns to it after
    # __init__; what it has read is kept in the two dicts.
    def __init__(
        self,
        checkpoint: Checkpoint,
        given: Journal | None = None,
        held: Mapping[str, bytes | None] | None = None,
    ) -> None:
        self.checkpoint = checkpoint
        self.given = given
        self.held = held
        self._bytes: dict[str, bytes | None] = {}
        self._links: dict[str, str | None] = {}

    @classmethod
    def of(cls, session: Session) -> Snapshot:
        """The checkpoint as ``session`` holds it: its journal, read under the lock."""
        return cls(session.checkpoint, session.journal)

    @cached_property
    def journal(self) -> Journal:
        """The journal the plan is made on (read once, when first asked for)."""
        return self.given if self.given is not None else read_journal(self.checkpoint)

    def read(self, relative: str) -> bytes | None:
        """The bytes of ``relative`` (through a link), None when it is missing: read from
        the checkpoint the first time, the same bytes after."""
        if self.held is not None:
            return self.held.get(relative)
        if relative not in self._bytes:
            self._bytes[relative] = read_current(self.checkpoint, relative)
        return self._bytes[relative]

    def link(self, relative: str) -> str | None:
        """The link ``relative`` is (its target as written), None for a plain file or a
        held one."""
        if self.held is not None:
            return None
        if relative not in self._links:
            self._links[relative] = self.checkpoint.link_target(relative)
        return self._links[relative]

    def mtime_ns(self, relative: str) -> int | None:
        """The file's modification time, None for a held file (it has none of its own)."""
        return None if self.held is not None else mtime_ns(self.checkpoint.path(relative))

    def path(self, relative: str) -> Path:
        """Where ``relative`` is, for messages (a held file is named as the checkpoint's)."""
        if self.held is not None:
            return self.checkpoint.root / relative
        return self.checkpoint.path(relative)

    def holding(self, held: Mapping[str, bytes | None]) -> Snapshot:
        """A snapshot of the same journal over ``held`` (path -> bytes; missing or None:
        absent) in place of the checkpoint's files."""
        return Snapshot(self.checkpoint, self.journal, held)
