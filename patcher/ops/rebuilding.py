"""Rebuild a checkpoint's patched state from its upstream bytes, as one write-ahead step.

Used by ``sync`` and ``rebase``: the wanted transforms are applied in a scratch copy of the
upstream files (compiled by the same code as ``apply``), then the checkpoint is moved to the
result in one step. The retired entries are written ``reverting`` and the new ones
``reapplying``, each with the hash every file has now (``sources``) and will have
(``targets``); the files are replaced; then the entries are settled. A kill at any point is
finished by the next command (``patcher.store.recovery``); an error or Ctrl-C is undone at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from patcher.errors import PatcherError
from patcher.ops.adding import add_entry
from patcher.store.checkpoint import Checkpoint, open_checkpoint
from patcher.store.files import read_current
from patcher.store.fsio import mtime_ns, sha256
from patcher.store.journal import (
    Entry,
    State,
    load_journal,
    load_object,
    now,
    originals,
    store_object,
)
from patcher.store.scratch import SCRATCH_SUFFIXES, scratch_error, work_folder
from patcher.store.session import FileWrite, Session
from patcher.transforms.definition import Transform, parse_transform
from patcher.transforms.params import resolve_params


@dataclass(frozen=True, slots=True)
class Step:
    """A transform to apply in the rebuild, with its parameters and target record."""

    transform: Transform
    params: Mapping[str, Any]
    target: Mapping[str, Any] | None = None


def journalled_step(checkpoint: Checkpoint, entry: Entry) -> Step:
    """A step that applies ``entry`` again, from the definition and parameters it recorded
    (so a changed catalog cannot change what it does)."""
    text = load_object(checkpoint.journal_dir, entry.definition).decode("utf-8")
    return Step(parse_transform(text, entry.source), dict(entry.params), entry.target)


def upstream_bytes(session: Session) -> dict[str, bytes]:
    """The checkpoint's config files as upstream shipped them: the journal's originals where
    a file is patched, the file as it is otherwise."""
    ckpt = session.checkpoint
    found: dict[str, bytes] = {}
    for child in sorted(ckpt.root.iterdir()):
        if child.name.endswith(SCRATCH_SUFFIXES) and child.is_file():
            data = read_current(ckpt, child.name)
            if data is not None:
                found[child.name] = data
    return {**found, **originals(ckpt, session.journal)}


def _upstream_link_and_mtime(
    checkpoint: Checkpoint, retire: tuple[Entry, ...], path: str
) -> tuple[str | None, int | None]:
    """The link and mtime ``path`` had upstream: from the first retired entry on it, else the
    file as it is now."""
    record = next((r for e in retire for r in e.files if r.path == path), None)
    if record is not None:
        return record.link, record.before_mtime_ns
    return checkpoint.link_target(path), mtime_ns(checkpoint.path(path))


@dataclass(frozen=True, slots=True)
class FileChange:
    """A config file ``sync`` changed (or, for a dry run, would change): its bytes before and
    after (None: absent)."""

    path: str
    before: bytes | None
    after: bytes | None

    def __repr__(self) -> str:
        sizes = [None if b is None else len(b) for b in (self.before, self.after)]
        return f"FileChange({self.path!r}, {sizes[0]} -> {sizes[1]} bytes)"


def file_changes(
    before: Mapping[str, bytes | None], after: Mapping[str, bytes | None]
) -> tuple[FileChange, ...]:
    """The files whose bytes differ between two snapshots (path -> bytes, None: absent)."""
    return tuple(
        FileChange(path, before.get(path), after.get(path))
        for path in sorted({*before, *after})
        if before.get(path) != after.get(path)
    )


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """Per step, its new entry (None when the step changed nothing); and each file the
    rebuild changed, with its bytes before (None: absent) and after."""

    entries: list[Entry | None]
    files: dict[str, tuple[bytes | None, bytes]]


def rebuild(
    session: Session,
    base: Mapping[str, bytes],
    steps: list[Step],
    retire: tuple[Entry, ...],
    before_write: Callable[[Mapping[str, bytes]], None] | None = None,
) -> Rebuilt:
    """Apply ``steps`` to ``base`` in a scratch copy, then make the checkpoint that result in
    one write-ahead step, retiring ``retire`` (see ``Rebuilt``). ``before_write`` is given the
    files the rebuild leaves (path -> bytes) before anything is written: an error it raises
    leaves the checkpoint and its journal as they were."""
    ckpt, journal = session.checkpoint, session.journal
    with work_folder("rebuild") as scratch:
        work = Path(scratch)
        try:
            for path, data in base.items():
                (work / path).parent.mkdir(parents=True, exist_ok=True)
                (work / path).write_bytes(data)
            if not (work / "config.json").exists():
                (work / "config.json").write_text("{}")  # a checkpoint needs a config file
        except OSError as exc:
            raise scratch_error(exc) from None
        try:
            results = [
                add_entry(
                    open_checkpoint(work),
                    s.transform,
                    resolve_params(s.transform, dict(s.params)),
                    target=s.target,
                )
                for s in steps
            ]
        except PatcherError as exc:  # a message names the user's checkpoint, never the copy
            raise exc.relocated(work, ckpt.root) from None
        scratch_journal = load_journal(work / ".patcher")
        touched = {r.path for e in scratch_journal.entries for r in e.files}
        touched |= {r.path for e in retire for r in e.files}
        final = {p: (work / p).read_bytes() for p in touched if (work / p).exists()}
        if before_write is not None:
            before_write(final)
        for entry in scratch_journal.entries:
            store_object(ckpt.journal_dir, load_object(work / ".patcher", entry.definition))
            for record in entry.files:
                if (work / ".patcher" / "objects" / record.before).is_file():
                    store_object(ckpt.journal_dir, load_object(work / ".patcher", record.before))
    for data in final.values():
        store_object(ckpt.journal_dir, data)
    next_id = journal.next_id()
    created: list[Entry | None] = []
    seen: set[str] = set()
    for result in results:
        if result.entry_id is None:
            created.append(None)
            continue
        entry = next(e for e in scratch_journal.entries if e.id == result.entry_id)
        records = []
        for record in entry.files:
            # The scratch files were plain: the first entry on a file records what the real one
            # was upstream (a Hugging Face cache link, its mtime), so a revert puts that back.
            first = record.path not in seen
            seen.add(record.path)
            link, mtime = (
                _upstream_link_and_mtime(ckpt, retire, record.path) if first else (None, None)
            )
            records.append(replace(record, link=link, before_mtime_ns=mtime))
        created.append(replace(entry, id=next_id, time=now(), files=tuple(records)))
        next_id += 1
    new_entries = [e for e in created if e is not None]
    current = {p: read_current(ckpt, p) for p in final}
    changing = {p: d for p, d in final.items() if current[p] != d}
    owner: dict[str, Entry] = {}
    for entry in new_entries:
        for record in entry.files:
            owner[record.path] = entry
    for entry in reversed(retire):  # a file no new entry writes goes back to its original
        for record in entry.files:
            if record.path not in {r.path for e in new_entries for r in e.files}:
                owner[record.path] = entry
    ahead = journal
    for entry in [*retire, *new_entries]:
        mine = [p for p in changing if owner.get(p) is entry]
        state: State = "reapplying" if entry in new_entries else "reverting"
        ahead = ahead.put(
            entry.with_state(
                state,
                targets={p: sha256(changing[p]) for p in mine},
                sources={p: sha256(current[p] or b"") for p in mine if current[p] is not None},
            )
        )
    writes = []
    for path, data in changing.items():
        holder = owner[path]
        held = holder.file(path)
        restored = held is not None and holder in retire and sha256(data) == held.before
        old = current[path]
        writes.append(
            FileWrite(
                path,
                data,
                expect=None if old is None else sha256(old),
                link=held.link if restored and held is not None else None,
                old=old,
            )
        )
    done = ahead
    for entry in retire:
        done = done.put(entry.with_state("reverted", reverted_time=now(), targets={}, sources={}))
    for entry in new_entries:
        done = done.put(entry.with_state("applied", targets={}, sources={}))
    try:
        session.write_ahead(ahead, writes, done)
    except PatcherError as exc:
        dropped = [s.transform.name for s, e in zip(steps, created, strict=True) if e is None]
        if dropped and session.journal is not journal:  # made, or settled forward next
            exc.reworded(
                problem=f"{exc.problem}; once finished, {', '.join(dropped)} is no longer "
                "applied (its edit changes nothing in the new files)"
            )
        raise
    return Rebuilt(created, {p: (current[p], d) for p, d in changing.items()})
