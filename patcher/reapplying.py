"""``reapply``: after a re-download put upstream bytes back over patched files, put the
journal's transforms back, from the definitions and parameters the journal kept."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from patcher.applying import ApplyResult, apply_transform, now
from patcher.checkpoint import open_checkpoint
from patcher.errors import ConflictError
from patcher.files import current_hash
from patcher.journal import FileRecord, load_object
from patcher.recovery import restore_original
from patcher.session import write_session
from patcher.status import file_states
from patcher.transform import parse_transform


@dataclass(frozen=True, slots=True)
class ReapplyResult:
    """The transforms applied again (empty when no file was back to its original)."""

    checkpoint: Path
    reapplied: tuple[ApplyResult, ...]


def reapply_transforms(checkpoint: Path | str) -> ReapplyResult:
    """Re-apply every applied transform when some of their files are back to the original
    (upstream) bytes: the others are first put back to their originals too, byte for byte."""
    ckpt = open_checkpoint(checkpoint)
    with write_session(ckpt) as session:
        journal = session.journal
        states = {f.path: f.state for f in file_states(ckpt, journal)}
        if "original" not in states.values():
            return ReapplyResult(ckpt.root, ())
        for path, state in states.items():
            if state in ("changed", "missing"):
                raise ConflictError(
                    f"{state} since patched; reapply only puts back files that are as patcher "
                    "left them or back to their originals",
                    file=ckpt.path(path),
                    hint=f"patcher status {ckpt.root}",
                )
        applied = journal.applied
        first: dict[str, FileRecord] = {}
        last: dict[str, FileRecord] = {}
        for entry in applied:
            for record in entry.files:
                first.setdefault(record.path, record)
                last[record.path] = record
        ahead = journal
        for entry in applied:
            targets = {r.path: first[r.path].before for r in entry.files}
            ahead = ahead.put(entry.with_state("reverting", targets=targets))
        session.save(ahead)
        for path, record in first.items():
            if states.get(path) == "patched":
                restore_original(ckpt, record, expect=last[path].after)
        done = ahead
        for entry in applied:
            done = done.put(entry.with_state("reverted", reverted_time=now(), targets={}))
        session.save(done)
        definitions = [
            (
                parse_transform(load_object(ckpt.journal_dir, e.definition).decode(), e.source),
                dict(e.params),
            )
            for e in applied
        ]
    assert all(current_hash(ckpt, p) == r.before for p, r in first.items())
    results = tuple(apply_transform(ckpt.root, t, params) for t, params in definitions)
    return ReapplyResult(ckpt.root, results)
