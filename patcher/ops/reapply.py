"""``reapply``: after a re-download put upstream bytes back over patched files, put the
journal's transforms back, as one all-or-nothing step.

The patched bytes are rebuilt from the journal alone: the original of each entry's file is in
``objects/`` and its forward patch replays on it byte-exactly, checked against the hash the
journal recorded. Nothing is re-compiled, so neither a changed catalog nor a deleted ``file``
parameter (a chat template) can make it differ or half-fail. The entries stay as they are; the
files are written under a ``reapplying`` write-ahead record that the next command finishes if
this one is killed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patcher.errors import ConflictError
from patcher.results import JsonResult
from patcher.store.change import Change, Keep, commit
from patcher.store.checkpoint import Checkpoint, open_checkpoint
from patcher.store.file_status import file_states
from patcher.store.fsio import sha256
from patcher.store.journal import Entry, FileRecord, load_journal, load_object
from patcher.store.session import FileWrite, write_session
from patcher.text.replay import replay


@dataclass(frozen=True, slots=True, repr=False)
class ReapplyResult(JsonResult):
    """The entries whose files were patched again (empty when no file was back to its
    original)."""

    checkpoint: Path
    entries: tuple[Entry, ...]
    files: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """A reapply result as JSON."""
        return {
            "checkpoint": str(self.checkpoint),
            "reapplied": [{"transform": e.transform, "entry": e.id} for e in self.entries],
            "files": list(self.files),
        }


def patched_bytes(checkpoint: Checkpoint, record: FileRecord, before: bytes | None = None) -> bytes:
    """The bytes ``record``'s entry left, rebuilt from its original (``before`` when the
    caller has read it already) and forward patch."""
    if before is None:
        before = load_object(checkpoint.journal_dir, record.before)
    if record.kind == "text":
        value = next(op["value"] for op in record.forward if op["op"] == "replace")
        data = str(value).encode("utf-8")
    else:
        data = replay(
            before,
            record.forward,
            file=str(checkpoint.path(record.path)),
            strict=True,
            hint=f"patcher status {checkpoint.arg}",
        ).data
    if sha256(data) != record.after:
        raise ConflictError(
            "the journal's patch does not rebuild the recorded bytes; nothing was written",
            file=checkpoint.path(record.path),
            hint=f"patcher revert {checkpoint.arg} --all --force, then apply again",
        )
    return data


def reapply(checkpoint: Path | str, *, revision: str | None = None) -> ReapplyResult:
    """Put every applied transform back where its files are back to the original (upstream)
    bytes; files still as patcher left them are kept. All or nothing."""
    ckpt = open_checkpoint(checkpoint, revision)
    if not load_journal(ckpt.journal_dir).applied:
        return ReapplyResult(ckpt.root, (), ())  # nothing journalled: create nothing
    with write_session(ckpt) as session:
        journal = session.journal
        states = {f.path: f.state for f in file_states(ckpt, journal)}
        for path, state in states.items():
            if state == "upstream":
                raise ConflictError(
                    "a new upstream version was downloaded here; reapply puts transforms back "
                    "only onto the original bytes",
                    file=ckpt.path(path),
                    hint=f"patcher rebase {ckpt.arg}",
                )
        if "original" not in states.values():
            return ReapplyResult(ckpt.root, (), ())
        for path, state in states.items():
            if state in ("changed", "missing"):
                raise ConflictError(
                    f"{state} since patched; reapply only puts back files that are as patcher "
                    "left them or back to their originals",
                    file=ckpt.path(path),
                    hint=f"patcher status {ckpt.arg}",
                )
        last: dict[str, tuple[Entry, FileRecord]] = {}
        first: dict[str, FileRecord] = {}
        for entry in journal.applied:
            for record in entry.files:
                first.setdefault(record.path, record)
                last[record.path] = (entry, record)
        todo = {p: last[p] for p in last if states.get(p) == "original"}
        # Each upstream original read once: the first entry's, which a failed step puts back
        # and which is the start of the patch when one entry holds the file.
        upstream = {p: load_object(ckpt.journal_dir, first[p].before) for p in todo}
        rebuilt = {
            p: patched_bytes(
                ckpt, record, upstream[p] if record.before == first[p].before else None
            )
            for p, (_, record) in todo.items()
        }
        ahead = journal
        for entry in journal.applied:
            mine = [p for p, (owner, _) in todo.items() if owner.id == entry.id]
            ahead = ahead.put(
                entry.with_state(
                    "reapplying",
                    targets={p: todo[p][1].after for p in mine},
                    sources={p: first[p].before for p in mine},
                )
            )
        writes = [
            FileWrite(
                path,
                data,
                expect=first[path].before,
                old=upstream[path],
            )
            for path, data in rebuilt.items()
        ]
        # Done, the entries are as they were: applied, their files patched again.
        keep = tuple(Keep(data) for data in rebuilt.values())
        commit(session, Change(journal, ahead, tuple(writes), journal, keep))
        return ReapplyResult(
            ckpt.root,
            tuple(e for e in journal.applied if any(r.path in rebuilt for r in e.files)),
            tuple(sorted(rebuilt)),
        )
