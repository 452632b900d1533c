"""Reverting applied transforms: the original bytes when a file is exactly as patcher left
it, the guarded inverse patch under later non-overlapping transforms, and a refusal (or, with
``force``, a partial inverse) when a file was edited by hand."""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from patcher.errors import ConflictError, JournalError
from patcher.results import JsonResult, ShortRepr
from patcher.store.change import Change, Keep, commit
from patcher.store.checkpoint import Checkpoint, open_checkpoint
from patcher.store.fsio import Digest, sha256
from patcher.store.journal import (
    Entry,
    FileRecord,
    Journal,
    RebuiltBytes,
    load_journal,
    load_object,
    now,
)
from patcher.store.session import FileWrite, Session, write_session
from patcher.store.snapshot import Snapshot
from patcher.text import pointers
from patcher.text.document import Op
from patcher.text.textdiff import unified

if TYPE_CHECKING:
    from patcher.text import jsontext

# The JSON scanner and the patch replay (patcher.text.jsontext, .replay) are imported where a
# revert needs them: under a later entry, or forced. The common revert writes the kept
# original back and needs neither (about 4 ms of every revert's start; docs/benchmark.md).

How = Literal["original", "previous", "inverse", "forced", "discarded", "already-original"]


@dataclass(frozen=True, slots=True, repr=False)
class FileRevert(ShortRepr):
    """What reverting does to one file."""

    path: str
    how: How
    current: bytes | None
    new: bytes | None
    link: str | None
    skipped: tuple[Op, ...] = ()
    mtime_ns: int | None = None  # the original's, given back with its bytes
    current_sha: str | None = None  # the hashes of ``current`` and ``new``, where known
    new_sha: str | None = None


@dataclass(frozen=True, slots=True, repr=False)
class EntryRevert(ShortRepr):
    """One entry reverted (or, for a dry run, to be reverted)."""

    entry_id: int
    transform: str
    files: tuple[FileRevert, ...]


@dataclass(frozen=True, slots=True, repr=False)
class RevertResult(JsonResult):
    """What ``revert`` did."""

    outcome: Literal["reverted", "dry-run", "nothing-to-do"]
    checkpoint: Path
    entries: tuple[EntryRevert, ...]

    def to_json(self) -> dict[str, Any]:
        """A revert result as JSON."""
        return {
            "outcome": self.outcome,
            "checkpoint": str(self.checkpoint),
            "reverted": [
                {
                    "entry": e.entry_id,
                    "transform": e.transform,
                    "files": [
                        {"path": f.path, "how": f.how, "not_restored": list(f.skipped)}
                        for f in e.files
                    ],
                }
                for e in self.entries
            ],
        }


def _tokens(op: Op) -> list[str]:
    return pointers.split_pointer(op["path"])


def _is_index(token: str) -> bool:
    return token == "-" or token.isdigit()


def _overlap(a: Op, b: Op, doc: jsontext.JsonText) -> bool:
    """Whether two edits touch the same value, or one shifts the array the other indexes
    (anything but an object there counts: a file that is not JSON overlaps everything)."""
    if pointers.related(a["path"], b["path"]):
        return True
    ta, tb = _tokens(a), _tokens(b)
    for x, tx, ty in ((a, ta, tb), (b, tb, ta)):
        if x["op"] not in ("add", "remove") or not tx or not _is_index(tx[-1]):
            continue
        if ty[: len(tx) - 1] == tx[:-1] and _kind(doc, pointers.join_pointer(tx[:-1])) != "object":
            return True
    return False


def _kind(doc: jsontext.JsonText, pointer: str) -> str | None:
    """What is at ``pointer`` (located in the bytes); None when nothing, or not JSON."""
    from patcher.text import jsontext, scanner

    try:
        return doc.kind(pointer)
    except (scanner.JsonSyntaxError, jsontext.DuplicateKeyError, RecursionError, ValueError):
        return None


def _edits(record: FileRecord) -> list[Op]:
    return [op for op in record.forward if op["op"] != "test"]


def _select(
    journal: Journal,
    target: str | None,
    last: bool,
    every: bool,
    ckpt: Checkpoint,
    entries: tuple[int, ...] = (),
) -> list[Entry]:
    applied = list(journal.applied)
    if entries:
        return [e for e in reversed(applied) if e.id in entries]
    if every:
        return list(reversed(applied))
    if last:
        return applied[-1:]  # nothing applied: nothing to do, as for --all
    else:
        entry_id = (target or "").removeprefix("#")
        chosen = [e for e in applied if e.transform == target or str(e.id) == entry_id][-1:]
    if not chosen:
        raise JournalError(
            f"{target!r} is not applied to this checkpoint",
            file=ckpt.root,
            hint=f"patcher status {ckpt.arg}",
        )
    return chosen


class _Planner:
    """Plans one entry's revert against the current contents, without writing anything."""

    def __init__(
        self,
        checkpoint: Checkpoint,
        journal: Journal,
        force: bool,
        read: Callable[[str], bytes | None],
        rebuilt: RebuiltBytes,
        discard: bool = False,
    ) -> None:
        self.checkpoint = checkpoint
        self.journal = journal
        self.force = force or discard
        # Put the bytes before the entry back over a hand edit, instead of the inverse patch
        # where it still matches (restore --upstream).
        self.discard = discard
        self.read = read
        self.objects: dict[str, bytes] = {}  # new bytes, to store
        self.loaded: dict[str, bytes] = {}  # kept originals read ahead
        self.rebuilt = rebuilt  # shared by the entries of one revert

    def original(self, digest: str) -> bytes:
        if digest in self.objects:
            return self.objects[digest]
        if digest in self.loaded:
            return self.loaded[digest]
        return load_object(self.checkpoint.journal_dir, digest, self.journal, self.rebuilt)

    def read_ahead(self, digest: str) -> None:
        """Read and check a kept original before it is known to be needed (it nearly always
        is: it is what a revert writes back), while the current bytes hash on a thread."""
        if (self.checkpoint.journal_dir / "objects" / digest).is_file():
            with contextlib.suppress(JournalError):  # raised again where it is needed
                self.loaded[digest] = load_object(self.checkpoint.journal_dir, digest)

    def refuse_changed(
        self, entry: Entry, record: FileRecord, expected: bytes, current: bytes | None
    ) -> ConflictError:
        path = self.checkpoint.path(record.path)
        if current is None:
            return ConflictError(
                f"file is missing since {entry.transform!r} was applied",
                file=path,
                hint="restore it, or run: patcher revert "
                f"{self.checkpoint.arg} {entry.transform} --force",
            )
        detail = unified(
            expected, current, f"{record.path} (as patcher left it)", f"{record.path} (now)"
        )
        # Deferred: only a refusal names the pointer; saves every revert ~2 ms (structdiff).
        from patcher.text.structdiff import compare_json

        pointer = None
        with contextlib.suppress(ValueError, RecursionError):
            pointer = next((c.pointer for c in compare_json(expected, current)), None)
        error = ConflictError(
            f"edited by hand since {entry.transform!r} was applied; not reverting",
            file=path,
            pointer=pointer,
            hint=f"patcher revert {self.checkpoint.arg} {entry.transform} --force "
            "(undoes only what still matches), or patcher restore "
            f"{self.checkpoint.arg} {shlex.quote(record.path)} (discards the hand edit)",
        )
        error.detail = detail
        return error

    def expected_after(self, record: FileRecord) -> bytes:
        original = self.original(record.before)
        if record.kind == "text":
            return str(record.forward[-1]["value"]).encode("utf-8")
        from patcher.text.replay import replay

        path = str(self.checkpoint.path(record.path))
        return replay(original, record.forward, file=path, strict=False, hint="").data

    def plan(self, entry: Entry) -> tuple[EntryRevert, list[Entry]]:
        updated: dict[int, Entry] = {}
        files: list[FileRevert] = []
        for record in entry.files:
            later = [e for e in self.journal.applied if e.id > entry.id and e.file(record.path)]
            current = self.read(record.path)
            hashing = None if current is None else Digest(current)
            if not later and hashing is not None:
                self.read_ahead(record.before)
            current_sha = None if hashing is None else hashing.result()
            if not later:
                files.append(self.plan_alone(entry, record, current, current_sha))
                continue
            from patcher.text import jsontext
            from patcher.text.replay import replay

            current_doc = jsontext.JsonText(current or b"null")  # scanned only where asked
            for other in later:
                other_record = other.file(record.path)
                assert other_record is not None
                for mine in _edits(record):
                    for theirs in _edits(other_record):
                        if _overlap(mine, theirs, current_doc):
                            raise ConflictError(
                                f"#{entry.id} {entry.transform} and the later #{other.id} "
                                f"{other.transform} both edit "
                                f"{theirs['path'] or 'the whole file'}",
                                file=self.checkpoint.path(record.path),
                                pointer=mine["path"],
                                hint=f"revert #{other.id} first: patcher revert "
                                f"{self.checkpoint.arg} {other.id}",
                            )
            last_record = later[-1].file(record.path)
            assert last_record is not None
            if current_sha != last_record.after and not self.force:
                # Compare with the file as patcher left it after the last transform.
                expected = self.expected_after(last_record)
                raise self.refuse_changed(entry, record, expected, current)
            if current is None or record.kind == "text":
                raise ConflictError(
                    "cannot undo under later transforms",
                    file=record.path,
                    hint="revert the later transforms first",
                )
            hint = (
                f"revert the later transforms first, or: patcher revert {self.checkpoint.arg} --all"
            )
            path = str(self.checkpoint.path(record.path))
            result = replay(
                current_doc, record.inverse, file=path, strict=not self.force, hint=hint
            )
            new = result.data
            new_sha = sha256(new)
            self.objects[new_sha] = new
            # Each later entry's record follows the revert underneath it: its bytes before and
            # after (hash and size, which status compares first) are those without this entry.
            befores = [(record.before, record.before_size)]
            for other in later[1:]:
                other_record = other.file(record.path)
                assert other_record is not None
                original = self.original(other_record.before)
                rebased = replay(original, record.inverse, file=path, strict=True, hint=hint).data
                self.objects[sha256(rebased)] = rebased
                befores.append((sha256(rebased), len(rebased)))
            # The last later entry now "leaves" the file as it would be without hand edits:
            # a hand edit kept by --force stays visible as one (status: changed), never
            # absorbed into what patcher recorded and silently dropped by a later revert.
            expected_new = new
            if current_sha != last_record.after:
                expected_new = replay(
                    self.expected_after(last_record),
                    record.inverse,
                    file=path,
                    strict=True,
                    hint=hint,
                ).data
            afters = [*befores[1:], (sha256(expected_new), len(expected_new))]
            for index, other in enumerate(later):
                base = updated.get(other.id, other)
                records = tuple(
                    replace(
                        r,
                        before=befores[index][0],
                        after=afters[index][0],
                        before_size=befores[index][1],
                        after_size=afters[index][1],
                        link=record.link if index == 0 else r.link,
                    )
                    if r.path == record.path
                    else r
                    for r in base.files
                )
                updated[other.id] = replace(base, files=records)
            how: How = "inverse" if current_sha == last_record.after else "forced"
            files.append(
                FileRevert(
                    record.path, how, current, new, None, result.skipped, None, current_sha, new_sha
                )
            )
        return EntryRevert(entry.id, entry.transform, tuple(files)), list(updated.values())

    def plan_alone(
        self, entry: Entry, record: FileRecord, current: bytes | None, current_sha: str | None
    ) -> FileRevert:
        if current_sha == record.before:
            return FileRevert(record.path, "already-original", current, None, None)
        edited = current is not None and current_sha != record.after
        if current_sha == record.after or (current is None and self.force) or self.discard:
            try:
                original = self.original(record.before)  # checked against record.before
            except JournalError:
                # The stored original is gone or damaged: --force undoes with the inverse
                # patch, as the refusal without it says (a JSON file as patcher left it).
                if not self.force or current is None or record.kind == "text":
                    raise
                return self.replayed(record, current)
            # Under an earlier entry of the same file, the bytes back are that entry's.
            earlier = any(e.id < entry.id and e.file(record.path) for e in self.journal.applied)
            how: How = "previous" if earlier else "original"
            return FileRevert(
                record.path,
                "discarded" if edited and self.discard else how,
                current,
                original,
                record.link,
                mtime_ns=record.before_mtime_ns,
                current_sha=current_sha,
                new_sha=record.before,
            )
        if not self.force or current is None:
            raise self.refuse_changed(entry, record, self.expected_after(record), current)
        if record.kind == "text":
            return FileRevert(record.path, "forced", current, self.original(record.before), None)
        return self.replayed(record, current)

    def replayed(self, record: FileRecord, current: bytes) -> FileRevert:
        """A forced revert of a JSON file: its inverse patch, where it still matches."""
        from patcher.text.replay import replay

        path = str(self.checkpoint.path(record.path))
        result = replay(current, record.inverse, file=path, strict=False, hint="")
        new = result.data
        self.objects[sha256(new)] = new
        return FileRevert(record.path, "forced", current, new, None, result.skipped)


@dataclass(slots=True)
class _Step:
    """Every selected entry's revert, planned in memory against the files as the entries
    before it leave them: one write-ahead step writes them all (a kill, Ctrl-C or full disk
    between two entries leaves all of them or none)."""

    journal: Journal
    plans: list[EntryRevert]
    objects: dict[str, bytes]
    first: dict[str, FileRevert]  # each path's first change: the bytes there now
    last: dict[str, FileRevert]  # and its last: the bytes the step leaves


def _plan_all(
    snapshot: Snapshot, chosen: list[Entry], force: bool, discard: bool, rebuilt: RebuiltBytes
) -> _Step:
    """Each chosen entry reverted in turn, in memory, on the files the ones before leave."""
    ckpt = snapshot.checkpoint
    contents: dict[str, bytes | None] = {}

    def read(path: str) -> bytes | None:
        return contents[path] if path in contents else snapshot.read(path)

    step = _Step(snapshot.journal, [], {}, {}, {})
    for entry in chosen:
        planner = _Planner(ckpt, step.journal, force, read, rebuilt, discard)
        plan, updates = planner.plan(entry)
        step.plans.append(plan)
        step.objects.update(planner.objects)
        for change in plan.files:
            if change.new is not None:
                contents[change.path] = change.new
                step.first.setdefault(change.path, change)
                step.last[change.path] = change
        for other in updates:
            step.journal = step.journal.put(other)
        step.journal = step.journal.put(entry.with_state("reverted"))
    return step


def _execute(session: Session, step: _Step, chosen: list[Entry]) -> None:
    writes: list[FileWrite] = []
    targets: dict[str, str] = {}
    sources: dict[str, str] = {}
    for path, last in step.last.items():
        first = step.first[path]
        assert last.new is not None
        targets[path] = last.new_sha or sha256(last.new)
        if first.current is not None:
            sources[path] = first.current_sha or sha256(first.current)
        writes.append(
            FileWrite(
                path,
                last.new,
                expect=first.current,
                link=last.link,
                mtime_ns=last.mtime_ns,
                old=first.current,
            )
        )
    # Pending while written: every entry is "reverting" with the bytes its files hold now and
    # the bytes the whole step leaves; the next command rolls a killed step forward.
    ahead = step.journal
    done = step.journal
    latest = {e.id: e for e in step.journal.entries}
    for entry in (latest[e.id] for e in chosen):
        mine = {r.path for r in entry.files}
        reverting = entry.with_state(
            "reverting",
            targets={p: h for p, h in targets.items() if p in mine},
            sources={p: h for p, h in sources.items() if p in mine},
        )
        ahead = ahead.put(reverting)
        done = done.put(entry.with_state("reverted", reverted_time=now(), targets={}, sources={}))
    keep = tuple(Keep(data, digest) for digest, data in step.objects.items())
    commit(session, Change(session.journal, ahead, tuple(writes), done, keep))


def revert(
    checkpoint: Path | str,
    target: str | None = None,
    *,
    last: bool = False,
    every: bool = False,
    force: bool = False,
    dry_run: bool = False,
    revision: str | None = None,
    entries: tuple[int, ...] = (),
    discard: bool = False,
) -> RevertResult:
    """Revert the applied transform ``target`` (name or entry id), the last one, all of
    them, or the applied ``entries`` (ids), latest first. With ``dry_run`` nothing is
    written; the result says what would be. ``discard`` (implies ``force``): a file edited by
    hand since gets the bytes from before the entry, the hand edit discarded."""
    ckpt = open_checkpoint(checkpoint, revision)
    rebuilt = RebuiltBytes()
    if dry_run:
        journal = load_journal(ckpt.journal_dir)
        chosen = _select(journal, target, last, every, ckpt, entries)
        step = _plan_all(Snapshot(ckpt, journal), chosen, force, discard, rebuilt)
        return RevertResult(
            "dry-run" if step.plans else "nothing-to-do", ckpt.root, tuple(step.plans)
        )
    existing = load_journal(ckpt.journal_dir)
    if not existing.applied and not existing.unsettled:
        _select(existing, target, last, every, ckpt, entries)  # refuses a named or --last revert
        return RevertResult("nothing-to-do", ckpt.root, ())  # and writes nothing
    with write_session(ckpt) as session:
        chosen = _select(session.journal, target, last, every, ckpt, entries)
        step = _plan_all(Snapshot.of(session), chosen, force, discard, rebuilt)
        if chosen:
            _execute(session, step, chosen)
        return RevertResult(
            "reverted" if step.plans else "nothing-to-do", ckpt.root, tuple(step.plans)
        )
