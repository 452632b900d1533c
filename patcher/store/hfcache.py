"""The Hugging Face cache layout, read without importing ``huggingface_hub`` (offline, fast).

``<HF_HUB_CACHE or $HF_HOME/hub or ~/.cache/huggingface/hub>/models--ORG--NAME/`` holds
``refs/<revision>`` (a commit id), ``snapshots/<commit>/`` (relative symlinks into ``blobs/``)
and ``blobs/``. A ``hf download --local-dir`` folder keeps per-file metadata in
``.cache/huggingface/download/<file>.metadata`` (commit, etag, timestamp).
"""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass
from pathlib import Path

from patcher.errors import CheckpointError
from patcher.store.fsio import NotRegularFileError, read_regular

_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
_COMMIT = re.compile(r"[0-9a-f]{40}")


@dataclass(frozen=True, slots=True)
class RepoRef:
    """A Hub repository and a revision (branch, tag or commit)."""

    repo_id: str
    revision: str

    def __str__(self) -> str:
        return f"{self.repo_id}@{self.revision}"


def hub_cache_dir() -> Path:
    """The cache folder, honouring ``HF_HUB_CACHE`` and ``HF_HOME`` as huggingface_hub does."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(xdg).expanduser() / "huggingface" / "hub"


def parse_repo_ref(text: str) -> RepoRef | None:
    """``ORG/NAME`` or ``ORG/NAME@REVISION``; None when ``text`` is not shaped like one."""
    repo_id, _, revision = text.partition("@")
    if not _REPO_ID.fullmatch(repo_id) or "--" in repo_id or repo_id.startswith("."):
        return None
    return RepoRef(repo_id, revision or "main")


def repo_folder(repo_id: str, cache: Path | None = None) -> Path:
    """``models--ORG--NAME`` in the cache."""
    return (cache or hub_cache_dir()) / ("models--" + repo_id.replace("/", "--"))


def resolve_snapshot(ref: RepoRef) -> Path:
    """The snapshot folder of ``ref`` in the local cache (no network)."""
    cache = hub_cache_dir()
    folder = repo_folder(ref.repo_id, cache)
    download = f"hf download {ref.repo_id}" + (
        "" if ref.revision == "main" else f" --revision {ref.revision}"
    )
    if not folder.is_dir():
        near = _nearest_cached(ref.repo_id, cache)
        raise CheckpointError(
            f"{ref.repo_id} is not in the Hugging Face cache ({cache})"
            + (f"; did you mean {near}?" if near else ""),
            file=folder,
            # A near name that is cached is what the user meant: the hint names it, not a
            # download of the typo.
            hint=f"use {near}, which is in the cache; or, if {ref.repo_id} is right, {download}"
            if near
            else f"download it: {download} (or pass a folder path)",
        )
    commit = ref.revision
    if not _COMMIT.fullmatch(commit):
        ref_file = folder / "refs" / _ref_name(ref)
        try:
            # A ref is a regular file of the cache holding one commit id: never a link
            # followed out of the cache, a pipe waited on, or a path taken from its text.
            if ref_file.is_symlink():
                raise NotRegularFileError(errno.ELOOP, "a symlink")
            text = read_regular(ref_file, limit=4096).decode("ascii", "replace").strip()
        except (OSError, NotRegularFileError) as exc:
            missing = isinstance(exc, FileNotFoundError | NotADirectoryError)
            raise CheckpointError(
                f"revision {ref.revision!r} of {ref.repo_id} is not in the cache"
                if missing
                else f"refs/{ref.revision} of {ref.repo_id} is not a regular file of the cache",
                file=ref_file,
                hint=f"download it again: {download}",
            ) from None
        if not _COMMIT.fullmatch(text):
            raise CheckpointError(
                f"refs/{ref.revision} of {ref.repo_id} does not hold a commit id",
                file=ref_file,
                hint=f"download it again: {download}",
            )
        commit = text
    snapshot = folder / "snapshots" / commit
    if not snapshot.is_dir():
        raise CheckpointError(
            f"snapshot {commit} of {ref.repo_id} is not in the cache",
            file=snapshot,
            hint=f"download it: {download}",
        )
    return snapshot


def _ref_name(ref: RepoRef) -> str:
    """``ref.revision`` as a ref file's name under ``refs/``: a branch or tag name, never a
    path that leads out of the repository's folder."""
    parts = ref.revision.split("/")
    if (
        ref.revision.startswith("/")
        or any(p in ("", ".", "..") for p in parts)
        or "\\" in ref.revision
    ):
        raise CheckpointError(
            f"revision {ref.revision!r} is not a branch, tag or commit name",
            file=ref.repo_id,
            hint=f"name a branch or a commit, e.g. {ref.repo_id}@main",
        )
    return ref.revision


def _nearest_cached(repo_id: str, cache: Path) -> str | None:
    """The cached repository whose id is closest to ``repo_id`` (a typo, another case)."""
    import difflib

    try:
        cached = [
            p.name[len("models--") :].replace("--", "/", 1)
            for p in cache.iterdir()
            if p.name.startswith("models--")
        ]
    except OSError:
        return None
    lowered = {c.lower(): c for c in cached}
    if repo_id.lower() in lowered:
        return lowered[repo_id.lower()]
    found = difflib.get_close_matches(repo_id.lower(), list(lowered), n=1, cutoff=0.75)
    return lowered[found[0]] if found else None


def snapshot_repo(root: Path) -> RepoRef | None:
    """The repository and commit of a cache snapshot folder, inferred from its path."""
    if root.parent.name != "snapshots" or not root.parent.parent.name.startswith("models--"):
        return None
    repo_id = root.parent.parent.name[len("models--") :].replace("--", "/", 1)
    return RepoRef(repo_id, root.name)


def local_dir_commit(root: Path) -> str | None:
    """The commit a ``--local-dir`` download came from, from its metadata (if any)."""
    folder = root / ".cache" / "huggingface" / "download"
    for name in ("config.json.metadata", *sorted(p.name for p in folder.glob("*.metadata"))):
        try:
            commit = (folder / name).read_text().splitlines()[0].strip()
        except (OSError, IndexError):
            continue
        if _COMMIT.fullmatch(commit):
            return commit
    return None


def patched_siblings(root: Path) -> list[Path]:
    """Other snapshots of the same cached repository whose journal has transforms applied,
    most recently changed first (the revision a ``rebase`` carries the journal from)."""
    if snapshot_repo(root) is None:
        return []
    found = []
    for sibling in root.parent.iterdir():
        journal = sibling / ".patcher" / "journal.json"
        if sibling == root or not journal.is_file():
            continue
        import json

        try:
            entries = json.loads(journal.read_bytes()).get("entries", [])
        except (OSError, ValueError, AttributeError, RecursionError):
            continue
        if any(isinstance(e, dict) and e.get("state") == "applied" for e in entries):
            found.append((journal.stat().st_mtime_ns, sibling))
    return [path for _, path in sorted(found, reverse=True)]


def git_blob_sha1(data: bytes) -> str:
    """The Hub's etag of a small (non-LFS) file: the git blob id of its bytes."""
    import hashlib  # only when a --local-dir file is checked: keep it off status's start-up

    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def downloaded_etag(root: Path, relative: str) -> str | None:
    """The etag ``hf download --local-dir`` recorded for ``relative``, if any."""
    metadata = root / ".cache" / "huggingface" / "download" / f"{relative}.metadata"
    try:
        lines = metadata.read_text().splitlines()
    except OSError:
        return None
    return lines[1].strip().strip('"') if len(lines) > 1 else None
