"""The journal in ``<checkpoint>/.patcher/``: what was done, how to undo it, and the originals.

Layout::

    .patcher/journal.json        {"format": 1, "entries": [...]}, rewritten atomically
    .patcher/objects/<sha256>    the bytes a file had before it was patched: the upstream
                                 original always; an entry stacked on another is rebuilt
                                 from the one below it (one copy kept every KEYFRAME)
    .patcher/lock                the per-checkpoint lock

Entries move ``pending`` -> ``applied`` -> ``reverting`` -> ``reverted``; ``reapplying`` is an
applied entry whose files ``reapply`` is putting back. ``pending``, ``reverting`` and
``reapplying`` are write-ahead records of a change in progress; the next command settles them
by hashing the files (see ``patcher.store.recovery``).
"""

from __future__ import annotations

import json
import os
import shlex
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from patcher.errors import ConflictError, JournalError, UnsafePathError
from patcher.store import journal_fields as fields
from patcher.store.beneath import open_beneath
from patcher.store.checkpoint import Checkpoint
from patcher.store.fsio import (
    NotRegularFileError,
    atomic_link,
    atomic_write,
    ensure_dir,
    holds,
    read_regular,
    sha256,
)
from patcher.store.hfcache import RepoRef
from patcher.text.document import json_problem

FORMAT = 1
# A journal of config edits is kilobytes; past this it is not one (a sparse file, a disk fault),
# and it is refused before it is read into memory.
JOURNAL_LIMIT = 256 * 2**20
# A stacked entry's starting bytes are rebuilt by replaying the entries below it; every this
# many in a row, a full copy is kept so that no rebuild replays more.
KEYFRAME = 8
JOURNAL_FILE = "journal.json"
State = Literal["pending", "applied", "reverting", "reverted", "reapplying"]
STATES = fields.STATES


def now() -> str:
    """The current UTC time, ISO 8601 (the journal's timestamps)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class FileRecord:
    """One file of an entry: hashes around the change, and the patches both ways."""

    path: str
    kind: Literal["json", "text"]
    link: str | None
    before: str
    after: str
    forward: tuple[dict[str, Any], ...]
    inverse: tuple[dict[str, Any], ...]
    # Set on apply since journal format 1.1 (None in older journals): sizes let status tell a
    # changed file without reading it whole; the original's mtime comes back with its bytes.
    before_size: int | None = None
    after_size: int | None = None
    before_mtime_ns: int | None = None


@dataclass(frozen=True, slots=True)
class Entry:
    """One applied transform."""

    id: int
    state: State
    transform: str
    source: str
    definition: str
    params: Mapping[str, Any]
    time: str
    tool_version: str
    files: tuple[FileRecord, ...]
    reverted_time: str | None = None
    targets: Mapping[str, str] = field(default_factory=dict)
    sources: Mapping[str, str] = field(default_factory=dict)
    target: Mapping[str, Any] | None = None  # the engine/GPU/profile it was applied for

    def with_state(self, state: State, **changes: Any) -> Entry:
        """A copy in another state."""
        return replace(self, state=state, **changes)

    def file(self, path: str) -> FileRecord | None:
        """The record of ``path`` in this entry, if any."""
        return next((f for f in self.files if f.path == path), None)


@dataclass(frozen=True, slots=True)
class Journal:
    """All entries, oldest first, and the upstream repository once it is known."""

    entries: tuple[Entry, ...] = ()
    upstream: RepoRef | None = None

    @property
    def applied(self) -> tuple[Entry, ...]:
        """Entries whose changes are in place."""
        return tuple(e for e in self.entries if e.state == "applied")

    @property
    def unsettled(self) -> tuple[Entry, ...]:
        """Entries a crash left half done."""
        return tuple(e for e in self.entries if e.state in ("pending", "reverting", "reapplying"))

    def next_id(self) -> int:
        """The id for a new entry."""
        return max((e.id for e in self.entries), default=0) + 1

    def put(self, entry: Entry) -> Journal:
        """A journal with ``entry`` added or replacing the entry with the same id."""
        others = [e for e in self.entries if e.id != entry.id]
        return replace(self, entries=tuple(sorted([*others, entry], key=lambda e: e.id)))

    def drop(self, entry_id: int) -> Journal:
        """A journal without the entry ``entry_id``."""
        return replace(self, entries=tuple(e for e in self.entries if e.id != entry_id))


def _damaged(path: Path, problem: str) -> JournalError:
    return JournalError(
        f"journal is damaged ({problem}); nothing was changed",
        file=path,
        hint=f"restore it from a backup, or move {path.parent} aside to start afresh "
        "(its objects/ folder keeps the original bytes)",
    )


def _file_from(raw: Any) -> FileRecord:
    fields.check_file(raw)
    return FileRecord(
        path=raw["path"],
        kind=raw["kind"],
        link=raw.get("link"),
        before=raw["before"],
        after=raw["after"],
        forward=tuple(raw["forward"]),
        inverse=tuple(raw["inverse"]),
        before_size=raw.get("before_size"),
        after_size=raw.get("after_size"),
        before_mtime_ns=raw.get("before_mtime_ns"),
    )


def _entry_from(raw: Any) -> Entry:
    fields.check_entry(raw)
    return Entry(
        id=int(raw["id"]),
        state=raw["state"],
        transform=raw["transform"],
        source=raw["source"],
        definition=raw["definition"],
        params=dict(raw["params"]),
        time=raw["time"],
        tool_version=raw["tool_version"],
        files=tuple(_file_from(f) for f in raw["files"]),
        reverted_time=raw.get("reverted_time"),
        targets=dict(raw.get("targets", {})),
        sources=dict(raw.get("sources", {})),
        target=dict(raw["target"]) if isinstance(raw.get("target"), dict) else None,
    )


def load_journal(directory: Path) -> Journal:
    """Read the journal in ``directory``; an absent journal is empty."""
    path = directory / JOURNAL_FILE
    try:
        data = read_regular(path, limit=JOURNAL_LIMIT)
    except FileNotFoundError:
        return Journal()
    except NotRegularFileError as exc:
        raise _damaged(path, exc.strerror or "not a regular file") from None
    except OSError as exc:
        raise JournalError(
            f"cannot read the journal ({exc.strerror})",
            file=path,
            hint="run patcher as a user who can read the checkpoint, or fix its permissions",
        ) from None
    parsed = _PARSED.get(path)
    if parsed is not None and parsed[0] == data:
        return parsed[1]
    try:
        raw = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise _damaged(path, "not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise _damaged(path, f"invalid JSON at line {exc.lineno} column {exc.colno}") from None
    except (RecursionError, ValueError) as exc:
        raise _damaged(path, json_problem(exc)) from None
    version = raw.get("format") if isinstance(raw, dict) else None
    if type(version) is not int or version < 1:  # True is an int to Python, not a version
        raise _damaged(path, "no format version")
    if raw["format"] > FORMAT:
        raise JournalError(
            f"journal format {raw['format']} is newer than this patcher understands ({FORMAT})",
            file=path,
            hint="upgrade patcher: pip install -U patcher",
        )
    try:
        fields.expect(isinstance(raw["entries"], list), "entries is not a list")
        entries = tuple(_entry_from(e) for e in raw["entries"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _damaged(path, f"malformed entry: {exc}") from None
    ids = [e.id for e in entries]
    if len(set(ids)) != len(ids):
        raise _damaged(path, "two entries share an id")
    upstream = raw.get("upstream")
    if upstream is not None and not (
        isinstance(upstream, dict)
        and isinstance(upstream.get("repo"), str)
        and isinstance(upstream.get("revision"), str)
    ):
        raise _damaged(path, "upstream is not a repository and revision")
    _remember_lines(data, entries)
    repo = RepoRef(upstream["repo"], upstream["revision"]) if upstream else None
    journal = Journal(entries, repo)
    if len(_PARSED) >= 16:
        _PARSED.clear()
    _PARSED[path] = (data, journal)
    return journal


# The last journal read from each file, with its bytes: a command reads its journal once to
# look and again under the lock, and the second read, finding the same bytes, skips parsing
# and checking every entry again (a Journal is immutable, so one can be handed out twice).
_PARSED: dict[Path, tuple[bytes, Journal]] = {}


def _remember_lines(data: bytes, entries: tuple[Entry, ...]) -> None:
    """Seed the encoding cache with the lines just read (one entry per line), so that the
    next save re-encodes only what changes."""
    lines = data.decode("ascii", "replace").split("\n")[1:-2]
    if len(lines) != len(entries):
        return  # an older layout: entries are encoded on the next save
    for entry, line in zip(entries, lines, strict=True):
        line = line.removesuffix(",")
        if line.startswith(f'{{"id":{entry.id},') and line.endswith("}"):
            _ENCODED[id(entry)] = (entry, line)


def temp_dirs(checkpoint: Checkpoint, journal: Journal) -> list[Path]:
    """Where patcher's writes make temp files: its own folders and the journalled files'."""
    journal_dir = checkpoint.journal_dir
    paths = {r.path for e in journal.entries for r in e.files}
    return [journal_dir, journal_dir / "objects", checkpoint.root] + [
        checkpoint.path(p).parent for p in sorted(paths)
    ]


def _entry_json(entry: Entry) -> dict[str, Any]:
    files = [
        {
            "path": f.path,
            "kind": f.kind,
            "link": f.link,
            "before": f.before,
            "after": f.after,
            "forward": list(f.forward),
            "inverse": list(f.inverse),
            "before_size": f.before_size,
            "after_size": f.after_size,
            "before_mtime_ns": f.before_mtime_ns,
        }
        for f in entry.files
    ]
    return {
        "id": entry.id,
        "state": entry.state,
        "transform": entry.transform,
        "source": entry.source,
        "definition": entry.definition,
        "params": dict(entry.params),
        "time": entry.time,
        "tool_version": entry.tool_version,
        "files": files,
        "reverted_time": entry.reverted_time,
        "targets": dict(entry.targets),
        "sources": dict(entry.sources),
        "target": None if entry.target is None else dict(entry.target),
    }


# Entry -> its JSON line. Entries are immutable and an unchanged entry is the same object from
# save to save, so a save encodes only the entries that changed: its cost does not grow with
# the journal's length (beyond joining the lines).
_ENCODED: dict[int, tuple[Entry, str]] = {}


def _entry_line(entry: Entry) -> str:
    cached = _ENCODED.get(id(entry))
    if cached is not None and cached[0] is entry:
        return cached[1]
    line = json.dumps(_entry_json(entry), ensure_ascii=True, separators=(",", ":"))
    if len(_ENCODED) > 50_000:
        _ENCODED.clear()
    _ENCODED[id(entry)] = (entry, line)
    return line


KEEP_REVERTED = 20


def _pruned(entries: tuple[Entry, ...]) -> tuple[Entry, ...]:
    """All entries but the oldest settled reverted ones beyond the last ``KEEP_REVERTED``: a
    journal of many apply/revert cycles must not grow without bound."""
    reverted = [e.id for e in entries if e.state == "reverted"]
    dropped = set(reverted[:-KEEP_REVERTED]) if len(reverted) > KEEP_REVERTED else set()
    return tuple(e for e in entries if e.id not in dropped)


def journal_digest(directory: Path) -> str | None:
    """sha256 of journal.json as it is on disk (None when absent): the compare-and-swap token."""
    try:
        return sha256(read_regular(directory / JOURNAL_FILE))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _damaged(directory / JOURNAL_FILE, f"unreadable: {exc.strerror}") from None


def save_journal(directory: Path, journal: Journal, *, expect: str | None | bool = False) -> str:
    """Write the journal atomically and return its digest. With ``expect`` (a digest, or None
    for "no journal yet"), refuse when the journal on disk is not that one: another process
    wrote it although the lock should have stopped it (a lock that silently failed)."""
    if expect is not False and journal_digest(directory) != expect:
        raise ConflictError(
            "journal changed by another process while patcher held the lock (does locking work "
            "on this filesystem?); nothing more was written",
            file=directory / JOURNAL_FILE,
            hint=f"patcher status {shlex.quote(str(directory.parent))}",
        )
    ensure_dir(directory)
    payload: dict[str, Any] = {"format": FORMAT}
    if journal.upstream is not None:
        payload["upstream"] = {
            "repo": journal.upstream.repo_id,
            "revision": journal.upstream.revision,
        }
    # One entry per line, in ASCII escapes: a removed value may hold a lone surrogate
    # ("\ud800"), valid JSON text that UTF-8 cannot encode.
    head = json.dumps(payload, ensure_ascii=True)[:-1]
    lines = ",\n".join(_entry_line(e) for e in _pruned(journal.entries))
    data = f'{head}, "entries": [\n{lines}\n]}}\n'.encode("ascii")
    atomic_write(directory / JOURNAL_FILE, data, root=directory.parent)
    return sha256(data)


def originals(checkpoint: Checkpoint, journal: Journal) -> dict[str, bytes]:
    """The upstream bytes of every file the applied entries patched (from ``objects/``)."""
    found: dict[str, bytes] = {}
    for entry in journal.applied:
        for record in entry.files:
            if record.path not in found:
                found[record.path] = load_object(checkpoint.journal_dir, record.before)
    return found


def store_object(
    directory: Path, data: bytes, *, digest: str | None = None, source: Path | None = None
) -> str:
    """Keep ``data`` under its sha256 (once) and return the hash. An object already there is
    trusted only when it holds exactly ``data`` (else it is rewritten). ``digest`` is
    ``data``'s hash when the caller has it already. ``source`` is the checkpoint file that
    holds ``data`` and is about to be replaced: where it can be, it is kept by a hard link
    instead of a copy (``atomic_link``); a copy takes its mode, so it is no more readable than
    the original, and a private original makes the journal folder private."""
    digest = sha256(data) if digest is None else digest
    mode = None if source is None else _source_mode(source, directory.parent, data)
    objects = directory / "objects"
    target = objects / digest
    private = mode is not None and not mode & 0o077
    ensure_dir(directory, private=private)
    ensure_dir(objects, private=private)
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        good = False
    else:
        try:
            good = stat.S_ISREG(os.fstat(fd).st_mode) and holds(fd, data)
        finally:
            os.close(fd)
    if not good and not (
        source is not None and atomic_link(source, target, data, root=directory.parent)
    ):
        atomic_write(
            target, data, mode=0o644 if mode is None else mode & 0o666, root=directory.parent
        )
    return digest


def _source_mode(source: Path, root: Path, data: bytes) -> int:
    """The mode of the checkpoint file ``source`` if it still holds ``data``, opened the one
    way a checkpoint file is; else 0600: a kept copy is never more readable than its original,
    even if the file was swapped since it was read."""
    try:
        fd = open_beneath(root, source.relative_to(root).as_posix())
    except (OSError, ValueError, UnsafePathError):
        return 0o600
    try:
        return stat.S_IMODE(os.fstat(fd).st_mode) if holds(fd, data) else 0o600
    finally:
        os.close(fd)


def load_object(
    directory: Path,
    digest: str,
    journal: Journal | None = None,
    rebuilt: RebuiltBytes | None = None,
) -> bytes:
    """The bytes stored under ``digest``, checked against it; bytes that were not kept (the
    start of a stacked entry) are rebuilt from ``journal`` (read from ``directory`` when not
    given; see ``rebuild_object``)."""
    path = directory / "objects" / digest
    try:
        data = read_regular(path)
    except FileNotFoundError:
        return rebuild_object(directory, digest, journal, rebuilt)
    except OSError:
        raise _missing(path) from None
    if sha256(data) != digest:
        raise JournalError(
            "original bytes in the journal are corrupted",
            file=path,
            hint="use 'patcher revert --force' to undo with the inverse patch instead",
        )
    return data


def _missing(path: Path) -> JournalError:
    return JournalError(
        "original bytes are missing from the journal",
        file=path,
        hint="use 'patcher revert --force' to undo with the inverse patch instead",
    )


def _kept(directory: Path, digest: str) -> bool:
    return (directory / "objects" / digest).is_file()


class RebuiltBytes:
    """Bytes rebuilt during one command, by their sha256 (so never stale), the latest first
    kept up to ``limit`` bytes: reverting a stack rebuilds each entry's start from the steps
    already replayed for the entry above it, instead of replaying from the kept copy again."""

    def __init__(self, limit: int = 64 << 20) -> None:
        self._bytes: dict[str, bytes] = {}
        self._limit = limit

    def get(self, digest: str) -> bytes | None:
        """The bytes that hash to ``digest``, if rebuilt and still held."""
        return self._bytes.get(digest)

    def keep(self, digest: str, data: bytes) -> None:
        """Hold ``data`` (which hashes to ``digest``), dropping the oldest beyond the limit."""
        self._bytes.pop(digest, None)
        self._bytes[digest] = data
        total = sum(len(held) for held in self._bytes.values())
        while total > self._limit and len(self._bytes) > 1:
            total -= len(self._bytes.pop(next(iter(self._bytes))))


def _leading(entries: tuple[Entry, ...] | list[Entry]) -> dict[str, list[FileRecord]]:
    """The JSON file records of ``entries`` by the hash each leaves."""
    found: dict[str, list[FileRecord]] = {}
    for entry in entries:
        for record in entry.files:
            if record.kind == "json":
                found.setdefault(record.after, []).append(record)
    return found


def _chain(
    directory: Path,
    leading: dict[str, list[FileRecord]],
    digest: str,
    limit: int,
    *,
    rebuilt: RebuiltBytes | None = None,
) -> list[FileRecord] | None:
    """The shortest run of records (last first) from kept bytes (or bytes held in
    ``rebuilt``) to ``digest``, at most ``limit`` long; None when there is none."""
    paths: dict[str, list[FileRecord]] = {digest: []}
    frontier = [digest]
    while frontier:
        following: list[str] = []
        for current in frontier:
            held = rebuilt is not None and rebuilt.get(current) is not None
            if held or _kept(directory, current):
                return paths[current]
            if len(paths[current]) >= limit:
                continue
            for record in leading.get(current, []):
                if record.before not in paths:
                    paths[record.before] = [*paths[current], record]
                    following.append(record.before)
        frontier = following
    return None


def rebuild_object(
    directory: Path,
    digest: str,
    journal: Journal | None = None,
    rebuilt: RebuiltBytes | None = None,
) -> bytes:
    """Bytes that were not kept: replayed forward from the nearest kept bytes through the
    forward patches of the entries that led to them, each step checked against its hash.
    ``journal`` is the one in hand (else it is read from ``directory``); ``rebuilt`` holds
    what earlier rebuilds of the same command replayed, and gets what this one replays."""
    held = None if rebuilt is None else rebuilt.get(digest)
    if held is not None:
        return held
    path = directory / "objects" / digest
    try:
        entries = (load_journal(directory) if journal is None else journal).entries
    except JournalError:
        raise _missing(path) from None
    steps = _chain(directory, _leading(entries), digest, len(entries), rebuilt=rebuilt)
    if steps is None:  # no way back to kept bytes
        raise _missing(path)
    if not steps:  # kept after all: another process stored it since it was looked for
        return load_object(directory, digest)
    # Deferred: a revert of a stacked entry only; saves `patcher status` ~8 ms (the editor).
    from patcher.text import jsontext

    start = None if rebuilt is None else rebuilt.get(steps[-1].before)
    data = load_object(directory, steps[-1].before) if start is None else start
    for record in reversed(steps):
        data = jsontext.apply_ops(data, record.forward)
        if sha256(data) != record.after:
            raise JournalError(
                "the bytes before this entry cannot be rebuilt from the journal exactly",
                file=path,
                hint="use 'patcher revert --force' to undo with the inverse patch instead",
            )
        if rebuilt is not None:
            rebuilt.keep(record.after, data)
    return data


def must_keep(directory: Path, journal: Journal, before: str, kind: str, version: str) -> bool:
    """Whether the bytes ``before`` must be kept in ``objects/``: always, unless applied
    entries of this patcher version lead there from kept bytes in fewer than KEYFRAME steps.
    Bytes already kept are stored again (store_object checks them, and mends them if bad)."""
    if kind != "json" or _kept(directory, before):
        return True
    mine = [e for e in journal.applied if e.tool_version == version]
    return _chain(directory, _leading(mine), before, KEYFRAME - 1) is None
