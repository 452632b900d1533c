"""Rebuild a checkpoint's patched state from its upstream bytes, as one write-ahead step.

Used by ``sync``, ``rebase`` and replacing an entry: the wanted transforms are applied in
memory, one after the other, to the upstream bytes (compiled by the same code as ``apply``):
``plan_rebuild``, which writes nothing, and is all a dry run or ``plan`` does. ``rebuild``
then moves the checkpoint to the result in one step. The retired entries are written
``reverting`` and the new ones ``reapplying``, each with the hash every file has now
(``sources``) and will have (``targets``); the files are replaced; then the entries are
settled. A kill at any point is finished by the next command (``patcher.store.recovery``);
an error or Ctrl-C is undone at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from patcher.errors import PatcherError
from patcher.ops.adding import effect_warnings, file_record, same_definition
from patcher.store.change import Change, Keep, commit
from patcher.store.checkpoint import Checkpoint
from patcher.store.files import CONFIG_SUFFIXES
from patcher.store.fsio import sha256
from patcher.store.journal import (
    Entry,
    State,
    load_object,
    now,
    originals,
)
from patcher.store.session import FileWrite, Session
from patcher.store.snapshot import Snapshot
from patcher.text.document import canonical
from patcher.transforms.compiler import compile_transform
from patcher.transforms.definition import Transform, parse_transform
from patcher.transforms.params import resolve_params
from patcher.version import __version__

if TYPE_CHECKING:
    from patcher.engines.engine import Engine
    from patcher.engines.files import ConfigFiles


@dataclass(frozen=True, slots=True)
class Step:
    """A transform to apply in the rebuild, with its parameters and target record.
    ``judge``: an engine that must derive the transform's declared effect from the files the
    steps before it leave (sync's new steps); an edit it ignores is refused."""

    transform: Transform
    params: Mapping[str, Any]
    target: Mapping[str, Any] | None = None
    judge: Engine | None = None


def journalled_step(checkpoint: Checkpoint, entry: Entry) -> Step:
    """A step that applies ``entry`` again, from the definition and parameters it recorded
    (so a changed catalog cannot change what it does)."""
    text = load_object(checkpoint.journal_dir, entry.definition).decode("utf-8")
    return Step(parse_transform(text, entry.source), dict(entry.params), entry.target)


def upstream_bytes(snapshot: Snapshot) -> dict[str, bytes]:
    """The checkpoint's config files as upstream shipped them: the journal's originals where
    a file is patched, the file as the snapshot read it otherwise."""
    ckpt = snapshot.checkpoint
    found: dict[str, bytes] = {}
    for child in sorted(ckpt.root.iterdir()):
        if child.name.endswith(CONFIG_SUFFIXES) and child.is_file():
            data = snapshot.read(child.name)
            if data is not None:
                found[child.name] = data
    return {**found, **originals(ckpt, snapshot.journal)}


def _upstream_link_and_mtime(
    snapshot: Snapshot, retire: tuple[Entry, ...], path: str
) -> tuple[str | None, int | None]:
    """The link and mtime ``path`` had upstream: from the first retired entry on it, else the
    file as it is now."""
    record = next((r for e in retire for r in e.files if r.path == path), None)
    if record is not None:
        return record.link, record.before_mtime_ns
    return snapshot.link(path), snapshot.mtime_ns(path)


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
    rebuild changes, with its bytes before (None: absent) and after."""

    entries: list[Entry | None]
    files: dict[str, tuple[bytes | None, bytes]]


@dataclass(frozen=True, slots=True)
class Rebuild:
    """A rebuild worked out in memory: what it makes (``rebuilt``), every file it touches as
    the steps leave it (``final``), and the change that writes it."""

    steps: tuple[Step, ...]
    rebuilt: Rebuilt
    final: Mapping[str, bytes]
    change: Change


def _fold(
    snapshot: Snapshot, base: Mapping[str, bytes], steps: list[Step], retire: tuple[Entry, ...]
) -> tuple[list[Entry | None], dict[str, bytes | None], list[bytes]]:
    """Each step compiled against the files the steps before it leave, from ``base``: its
    entry (ids from 1, to be renumbered), the files at the end and the bytes to keep."""
    held: dict[str, bytes | None] = dict(base)
    held.setdefault("config.json", b"{}")  # a checkpoint needs a config file
    made: list[Entry | None] = []
    keep: list[bytes] = []
    seen: set[str] = set()
    files: ConfigFiles | None = None  # the snapshot's, parsed once if a step is judged
    for step in steps:
        resolved = resolve_params(step.transform, dict(step.params))
        plans = compile_transform(snapshot.holding(held), step.transform, resolved)
        if step.judge is not None:  # judged on the bytes this fold holds, before any write
            # Deferred, as in effect_warnings: only a judged step loads the engine model.
            from patcher.engines.effects import patched_files
            from patcher.engines.files import snapshot_config_files

            files = snapshot_config_files(snapshot) if files is None else files
            folded = patched_files(files, {p: d for p, d in held.items() if d is not None})
            effect_warnings(snapshot, step.transform, resolved.values, plans, step.judge, folded)
        recorded = canonical(dict(resolved.recorded))
        if not plans or any(
            e is not None
            and e.transform == step.transform.name
            and canonical(dict(e.params)) == recorded
            and same_definition(e, step.transform)
            for e in made
        ):
            made.append(None)
            continue
        records = []
        for plan in plans:
            # The first entry on a file records what the real one was upstream (a Hugging
            # Face cache link, its mtime), so a revert puts that back.
            link, mtime = (
                _upstream_link_and_mtime(snapshot, retire, plan.path)
                if plan.path not in seen
                else (None, None)
            )
            seen.add(plan.path)
            keep.append(plan.before)
            records.append(file_record(plan, link, mtime))
            held[plan.path] = plan.after
        definition = step.transform.text.encode("utf-8")
        keep.append(definition)
        made.append(
            Entry(
                id=0,
                state="pending",
                transform=step.transform.name,
                source=step.transform.source,
                definition=sha256(definition),
                params=dict(resolved.recorded),
                time=now(),
                tool_version=__version__,
                files=tuple(records),
                target=None if step.target is None else dict(step.target),
            )
        )
    return made, held, keep


def plan_rebuild(
    snapshot: Snapshot,
    base: Mapping[str, bytes],
    steps: list[Step],
    retire: tuple[Entry, ...],
) -> Rebuild:
    """Apply ``steps`` to ``base`` in memory, retiring ``retire`` (entries of the snapshot's
    journal): the change a rebuild would make to the checkpoint, with nothing written."""
    journal = snapshot.journal
    made, held, keep = _fold(snapshot, base, steps, retire)
    created: list[Entry | None] = []
    next_id = journal.next_id()
    for entry in made:
        created.append(None if entry is None else replace(entry, id=next_id))
        next_id += entry is not None
    new_entries = [e for e in created if e is not None]
    touched = {r.path for e in [*new_entries, *retire] for r in e.files}
    final = {p: d for p in sorted(touched) if (d := held.get(p)) is not None}
    current = {p: snapshot.read(p) for p in final}
    changing = {p: d for p, d in final.items() if current[p] != d}
    owner: dict[str, Entry] = {}
    for entry in new_entries:
        for record in entry.files:
            owner[record.path] = entry
    written = {r.path for e in new_entries for r in e.files}
    for entry in reversed(retire):  # a file no new entry writes goes back to its original
        for record in entry.files:
            if record.path not in written:
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
        held_record = holder.file(path)
        restored = (
            held_record is not None and holder in retire and sha256(data) == held_record.before
        )
        old = current[path]
        writes.append(
            FileWrite(
                path,
                data,
                expect=None if old is None else sha256(old),
                link=held_record.link if restored and held_record is not None else None,
                old=old,
            )
        )
    done = ahead
    for entry in retire:
        done = done.put(entry.with_state("reverted", reverted_time=now(), targets={}, sources={}))
    for entry in new_entries:
        done = done.put(entry.with_state("applied", targets={}, sources={}))
    rebuilt = Rebuilt(created, {p: (current[p], d) for p, d in changing.items()})
    kept = tuple(Keep(data) for data in (*keep, *final.values()))
    change = Change(journal, ahead, tuple(writes), done, kept)
    return Rebuild(tuple(steps), rebuilt, final, change)


def rebuild(
    session: Session,
    snapshot: Snapshot,
    base: Mapping[str, bytes],
    steps: list[Step],
    retire: tuple[Entry, ...],
    before_write: Callable[[Mapping[str, bytes]], None] | None = None,
) -> Rebuilt:
    """Apply ``steps`` to ``base`` in memory, then make the checkpoint that result in one
    write-ahead step, retiring ``retire`` (see ``Rebuilt``); ``snapshot``: the checkpoint as
    ``session`` holds it (:meth:`Snapshot.of`), already read for ``base``. ``before_write``
    is given the files the rebuild leaves (path -> bytes) before anything is written: an
    error it raises leaves the checkpoint and its journal as they were."""
    change = plan_rebuild(snapshot, base, steps, retire)
    if before_write is not None:
        before_write(change.final)
    return commit_rebuild(session, change)


def commit_rebuild(session: Session, planned: Rebuild) -> Rebuilt:
    """Write a rebuild planned on ``session``'s journal (``patcher.store.change.commit``)."""
    journal = session.journal
    try:
        commit(session, planned.change)
    except PatcherError as exc:
        made = planned.rebuilt.entries
        dropped = [s.transform.name for s, e in zip(planned.steps, made, strict=True) if e is None]
        if dropped and session.journal is not journal:  # made, or settled forward next
            exc.reworded(
                problem=f"{exc.problem}; once finished, {', '.join(dropped)} is no longer "
                "applied (its edit changes nothing in the new files)"
            )
        raise
    return planned.rebuilt
