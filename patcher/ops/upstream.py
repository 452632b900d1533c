"""``diff --upstream``: the checkpoint against its repository on the Hugging Face Hub.

The upstream versions of the checkpoint's JSON and template files (never weights) are fetched
through ``huggingface_hub`` into a temporary cache (so a patched cache snapshot is never
mistaken for upstream), or, with ``HF_HUB_OFFLINE=1``, read from the local cache. They are
compared with ``deepdiff``, and every difference is attributed to the applied transform that
explains it, or to nothing (a hand edit, or upstream having moved since the download).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from patcher import progress
from patcher.errors import UpstreamError
from patcher.results import JsonResult
from patcher.store.change import Change, commit
from patcher.store.checkpoint import JOURNAL_DIR, Checkpoint, open_checkpoint
from patcher.store.files import read_current
from patcher.store.hfcache import RepoRef, local_dir_commit, parse_repo_ref, snapshot_repo
from patcher.store.journal import Entry, Journal, load_object
from patcher.store.session import read_journal, write_session
from patcher.store.work_folder import work_folder
from patcher.text import jsontext, pointers, scanner
from patcher.text.document import MISSING, Op, canonical, get
from patcher.text.structdiff import compare_json

COMPARED_SUFFIXES = (".json", ".jinja")
UNEXPLAINED = "not explained by any applied transform: a hand edit, or upstream moved"


@dataclass(frozen=True, slots=True)
class UpstreamDifference:
    """One difference from upstream and what explains it (``transform`` None: nothing)."""

    pointer: str
    kind: str
    upstream: Any
    current: Any
    transform: str | None
    entry: int | None
    reason: str | None


@dataclass(frozen=True, slots=True)
class UpstreamFileDiff:
    """The differences of one file."""

    path: str
    differences: tuple[UpstreamDifference, ...]


@dataclass(frozen=True, slots=True, repr=False)
class UpstreamDiff(JsonResult):
    """The checkpoint against ``repo`` at ``commit``."""

    checkpoint: Path
    repo: RepoRef
    commit: str | None
    offline: bool
    files: tuple[UpstreamFileDiff, ...]

    @property
    def unexplained(self) -> int:
        """How many differences no applied transform explains."""
        return sum(d.transform is None for f in self.files for d in f.differences)

    def to_json(self) -> dict[str, Any]:
        """An upstream diff as JSON: per file, each difference with its pointer and explanation."""
        return {
            "checkpoint": str(self.checkpoint),
            "repo": self.repo.repo_id,
            "revision": self.repo.revision,
            "commit": self.commit,
            "offline": self.offline,
            "unexplained": self.unexplained,
            "files": [
                {
                    "path": f.path,
                    "differences": [
                        {
                            "pointer": x.pointer,
                            "kind": x.kind,
                            "upstream": x.upstream,
                            "current": x.current,
                            "transform": x.transform,
                            "entry": x.entry,
                            "reason": x.reason,
                        }
                        for x in f.differences
                    ],
                }
                for f in self.files
            ],
        }


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _compared_files(root: Path) -> list[str]:
    found = []
    for directory, folders, names in os.walk(root):
        folders[:] = sorted(f for f in folders if not f.startswith(".") and f != JOURNAL_DIR)
        for name in sorted(names):
            if name.endswith(COMPARED_SUFFIXES) and not name.startswith("."):
                found.append((Path(directory) / name).relative_to(root).as_posix())
    return found


def _repo_ref(ckpt: Checkpoint, journal: Journal, given: str | None) -> RepoRef:
    inferred = snapshot_repo(ckpt.root)
    if given:
        ref = parse_repo_ref(given)
        if ref is None:
            raise UpstreamError(
                f"{given!r} is not a repository id",
                file=ckpt.root,
                hint=f"patcher diff {ckpt.arg} --upstream ORG/NAME[@REVISION]",
            )
        if "@" not in given:
            commit = (inferred.revision if inferred else None) or local_dir_commit(ckpt.root)
            ref = RepoRef(ref.repo_id, commit or "main")
        return ref
    if inferred is not None:
        return inferred
    if journal.upstream is not None:
        commit = local_dir_commit(ckpt.root)
        return RepoRef(journal.upstream.repo_id, commit or journal.upstream.revision)
    raise UpstreamError(
        "the upstream repository is not known for this folder",
        file=ckpt.root,
        hint=f"patcher diff {ckpt.arg} --upstream ORG/NAME[@REVISION] (it is then remembered)",
    )


def _remember(ckpt: Checkpoint, ref: RepoRef) -> None:
    """Record the repository in the journal (only where a journal already exists)."""
    if not (ckpt.journal_dir / "journal.json").is_file() or snapshot_repo(ckpt.root):
        return
    try:
        with write_session(ckpt) as session:
            if session.journal.upstream != ref:
                remembered = replace(session.journal, upstream=ref)
                commit(session, Change(session.journal, remembered, (), remembered))
    except OSError:
        pass  # a read-only checkpoint simply does not remember


def _network_problem(exc: BaseException) -> str | None:
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & {"ConnectError", "ConnectionError", "ConnectionRefusedError"}:
        return "cannot connect to the Hub"
    if names & {"TimeoutException", "TimeoutError", "ReadTimeout", "ConnectTimeout"}:
        return "the Hub did not answer in time"
    return None


def _fail(exc: BaseException, ref: RepoRef, file: str) -> UpstreamError:
    from huggingface_hub import errors

    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    offline_hint = "or compare against the local cache with HF_HUB_OFFLINE=1"
    if isinstance(exc, errors.GatedRepoError):
        return UpstreamError(
            f"{ref.repo_id} is gated: access needs a token that was granted it",
            file=ref.repo_id,
            hint="hf auth login (or set HF_TOKEN), then retry",
        )
    if isinstance(exc, errors.RepositoryNotFoundError):
        return UpstreamError(
            f"repository {ref.repo_id} not found on {endpoint} (or private without a token)",
            file=ref.repo_id,
            hint="check the id, or hf auth login / HF_TOKEN for a private repo",
        )
    if isinstance(exc, errors.RevisionNotFoundError):
        return UpstreamError(
            f"revision {ref.revision!r} not found in {ref.repo_id}",
            file=ref.repo_id,
            hint="pass --upstream ORG/NAME@REVISION",
        )
    if isinstance(exc, errors.RemoteEntryNotFoundError):
        return UpstreamError(
            f"{file} not found in {ref}",
            file=ref.repo_id,
            hint="check that this is the right repository and revision",
        )
    problem = _network_problem(exc) or _network_problem(exc.__cause__ or exc)
    if problem:
        return UpstreamError(
            f"{problem} at {endpoint} ({exc})",
            file=ref.repo_id,
            hint=f"check the network and retry, {offline_hint}",
        )
    if isinstance(exc, errors.LocalEntryNotFoundError):
        # Online, this means the answer lacked the Hub's headers: a proxy, a captive portal
        # or an HF_ENDPOINT that is not a Hub answered instead.
        return UpstreamError(
            f"{endpoint} did not answer {file} of {ref} as a Hugging Face Hub does (no "
            "X-Repo-Commit header), and the local cache does not have it",
            file=ref.repo_id,
            hint=f"check HF_ENDPOINT and any proxy, then retry, {offline_hint}",
        )
    return UpstreamError(
        f"could not fetch {file} of {ref} ({type(exc).__name__}: {exc})",
        file=ref.repo_id,
        hint=f"retry, {offline_hint}",
    )


class _Fetcher:
    """Upstream bytes of one file at a time, online (temporary cache) or offline (local cache)."""

    def __init__(self, ckpt: Checkpoint, journal: Journal, ref: RepoRef, workdir: str):
        self.ckpt, self.journal, self.ref, self.workdir = ckpt, journal, ref, workdir
        self.offline = _offline()
        self.commit: str | None = None

    def probe(self, first: str) -> None:
        """Resolve the revision and fail fast (no retries) when the Hub is unreachable."""
        if self.offline:
            return
        from huggingface_hub import get_hf_file_metadata, hf_hub_url

        timeout = float(os.environ.get("HF_HUB_ETAG_TIMEOUT") or 10)
        try:
            meta = get_hf_file_metadata(
                hf_hub_url(self.ref.repo_id, first, revision=self.ref.revision), timeout=timeout
            )
        except Exception as exc:
            raise _fail(exc, self.ref, first) from None
        self.commit = meta.commit_hash

    def fetch(self, path: str) -> bytes | None:
        """The upstream bytes of ``path``, or None when upstream has no such file."""
        from huggingface_hub import errors, hf_hub_download

        try:
            if self.offline:
                located = Path(
                    hf_hub_download(
                        self.ref.repo_id, path, revision=self.ref.revision, local_files_only=True
                    )
                )
                return self._cached_bytes(located, path)
            located = Path(
                hf_hub_download(
                    self.ref.repo_id,
                    path,
                    revision=self.commit or self.ref.revision,
                    cache_dir=self.workdir,
                )
            )
            return located.read_bytes()
        except errors.RemoteEntryNotFoundError:
            return None
        except errors.LocalEntryNotFoundError as exc:
            if self.offline:
                raise UpstreamError(
                    f"{path} of {self.ref} is not in the local cache and HF_HUB_OFFLINE=1",
                    file=self.ref.repo_id,
                    hint=f"unset HF_HUB_OFFLINE, or fetch it: hf download {self.ref.repo_id} "
                    f"--revision {self.ref.revision} --include '*.json'",
                ) from None
            raise _fail(exc, self.ref, path) from None
        except UpstreamError:
            raise
        except Exception as exc:
            raise _fail(exc, self.ref, path) from None

    def _cached_bytes(self, located: Path, path: str) -> bytes:
        # The cached snapshot may be this very checkpoint: a file patcher de-linked is not
        # upstream any more, but the blob its link pointed to still is.
        if located.absolute() != (self.ckpt.root / path).absolute():
            return located.read_bytes()
        # This checkpoint's own file: read the one way a checkpoint file is (no link out).
        if not located.is_symlink():
            for entry in self.journal.entries:
                record = entry.file(path)
                if record is not None and record.link:
                    with os.fdopen(self.ckpt.open_link(path, record.link), "rb") as kept:
                        return kept.read()
        return read_current(self.ckpt, path) or b""


def _steps(entry: Entry, path: str) -> Iterator[tuple[Op, Any]]:
    """Each edit of ``path`` in ``entry`` with the value it found (MISSING for a new member).
    A whole-text edit of a JSON file (strip-bom) changes no value: it explains none."""
    record = entry.file(path)
    if record is None or record.kind == "text":
        return
    found: dict[str, Any] = {}
    for op in record.forward:
        if op["op"] == "test":
            found[op["path"]] = op["value"]
        else:
            yield op, found.pop(op["path"], MISSING)


def _same(a: Any, b: Any) -> bool:
    if a is MISSING or b is MISSING:
        return a is b
    return canonical(a) == canonical(b)


class _Values:
    """The values of a JSON text by pointer, each parsed from its own bytes; the whole text is
    parsed (once) only where the way to one cannot be followed in the bytes (a duplicate key)."""

    def __init__(self, text: jsontext.JsonText) -> None:
        self.text = text
        self.whole: Any = MISSING

    def get(self, pointer: str) -> Any:
        if self.whole is MISSING:
            with contextlib.suppress(
                jsontext.DuplicateKeyError, scanner.JsonSyntaxError, ValueError
            ):
                return self.text.get(pointer)
            self.whole = json.loads(self.text.data)
        return get(self.whole, pointer)


def _attribute(
    pointer: str, path: str, upstream: _Values, current: _Values, applied: tuple[Entry, ...]
) -> tuple[str | None, int | None, str | None]:
    touching = [
        (e, op, before)
        for e in applied
        for op, before in _steps(e, path)
        if pointers.related(op["path"], pointer)
    ]
    if not touching:
        return None, None, UNEXPLAINED
    first_entry, first_op, found = touching[0]
    last_entry, last_op, _ = touching[-1]
    if not _same(upstream.get(first_op["path"]), found):
        return (
            None,
            None,
            (
                f"upstream changed at {first_op['path']} since the download "
                f"({first_entry.transform} found {json.dumps(found)[:40]} there)"
            ),
        )
    written = MISSING if last_op["op"] == "remove" else last_op["value"]
    if not _same(current.get(last_op["path"]), written):
        return None, None, f"changed by hand after {last_entry.transform} was applied"
    return last_entry.transform, last_entry.id, None


def _text_attribution(
    path: str, upstream: bytes, current: bytes, ckpt: Checkpoint, applied: tuple[Entry, ...]
) -> tuple[str | None, int | None, str | None]:
    touching = [e for e in applied if e.file(path)]
    if not touching:
        return None, None, UNEXPLAINED
    first, last = touching[0].file(path), touching[-1].file(path)
    assert first is not None and last is not None
    if load_object(ckpt.journal_dir, first.before) != upstream:
        return None, None, "upstream changed since the download"
    if str(last.forward[-1]["value"]).encode("utf-8") != current:
        return None, None, f"changed by hand after {touching[-1].transform} was applied"
    return touching[-1].transform, touching[-1].id, None


def _file_diff(
    path: str, upstream: bytes | None, current: bytes, ckpt: Checkpoint, applied: tuple[Entry, ...]
) -> UpstreamFileDiff | None:
    if upstream is None:
        return UpstreamFileDiff(
            path,
            (
                UpstreamDifference(
                    "",
                    "local-only",
                    None,
                    None,
                    None,
                    None,
                    "the file is not in the upstream revision",
                ),
            ),
        )
    if upstream == current:
        return None
    if not path.endswith(".json"):
        transform, entry, reason = _text_attribution(path, upstream, current, ckpt, applied)
        return UpstreamFileDiff(
            path, (UpstreamDifference("", "changed", None, None, transform, entry, reason),)
        )
    # One scan of each text serves the comparison and then the attribution's lookups.
    old, new = _Values(jsontext.JsonText(upstream)), _Values(jsontext.JsonText(current))
    try:
        changes = compare_json(old.text, new.text)  # the walk recurses: a deep file can stop it
        attributed = [_attribute(c.pointer, path, old, new, applied) for c in changes]
    except (ValueError, RecursionError) as exc:
        why = (
            "nested too deeply to compare" if isinstance(exc, RecursionError) else "not valid JSON"
        )
        return UpstreamFileDiff(
            path,
            (UpstreamDifference("", "changed", None, None, None, None, f"{why} on one side"),),
        )
    differences = [
        UpstreamDifference(c.pointer, c.kind, c.old, c.new, transform, entry, reason)
        for c, (transform, entry, reason) in zip(changes, attributed, strict=True)
    ]
    return UpstreamFileDiff(path, tuple(differences)) if differences else None


def diff_upstream(
    checkpoint: Path | str, upstream: str | None = None, *, revision: str | None = None
) -> UpstreamDiff:
    """Compare the checkpoint's JSON and template files with ``upstream`` (``ORG/NAME[@REV]``;
    inferred for cache snapshots and remembered ``--local-dir`` folders)."""
    ckpt = open_checkpoint(checkpoint, revision)
    journal = read_journal(ckpt)
    ref = _repo_ref(ckpt, journal, upstream)
    paths = _compared_files(ckpt.root)
    with work_folder("upstream") as workdir:
        fetcher = _Fetcher(ckpt, journal, ref, workdir)
        first = "config.json" if "config.json" in paths else (paths[0] if paths else "config.json")
        report = progress.fetch_reporter
        if report is not None:
            report(ref.repo_id, first, 0, len(paths))
        fetcher.probe(first)
        files = []
        for index, path in enumerate(paths, start=1):
            if report is not None:
                report(ref.repo_id, path, index, len(paths))
            current = read_current(ckpt, path)  # a pipe is refused, not waited on
            if current is None:
                continue
            found = _file_diff(path, fetcher.fetch(path), current, ckpt, journal.applied)
            if found is not None:
                files.append(found)
        if report is not None:
            report(ref.repo_id, "", 0, 0)
    if upstream:
        _remember(ckpt, RepoRef(ref.repo_id, ref.revision))
    return UpstreamDiff(ckpt.root, ref, fetcher.commit, fetcher.offline, tuple(files))
