"""Reading and writing the journalled files of a checkpoint, with hash checks."""

from __future__ import annotations

import os
from pathlib import Path

from patcher.errors import ConflictError, InputFileError, JournalError, UnsafePathError
from patcher.store.checkpoint import Checkpoint
from patcher.store.fsio import (
    NotRegularFileError,
    atomic_symlink,
    atomic_write,
    file_mode,
    file_sha256,
    holds,
)
from patcher.store.jsonfile import not_a_file

CONFIG_SUFFIXES = (".json", ".jinja")  # the files a rebuild starts from; weights never read


def read_current(checkpoint: Checkpoint, relative: str) -> bytes | None:
    """The current bytes of ``relative`` (through a link), or None when it is missing.
    Anything but a regular file (a folder, a FIFO that would block) is refused."""
    fd = open_current(checkpoint, relative)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def open_current(checkpoint: Checkpoint, relative: str) -> int | None:
    """A descriptor of ``relative`` (see ``Checkpoint.open``), None when it is missing; a
    refusal naming it when it is not a readable regular file."""
    path = checkpoint.root / relative  # named in a refusal; open() checks the name itself
    try:
        return checkpoint.open(relative)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (IsADirectoryError, NotRegularFileError):
        raise not_a_file(path, f"then run patcher status {checkpoint.arg}") from None
    except OSError as exc:
        raise InputFileError(
            f"cannot read ({exc.strerror})", file=path, hint="fix the file's permissions"
        ) from None


def holds_bytes(checkpoint: Checkpoint, relative: str, data: bytes | None) -> bool:
    """Whether ``relative`` holds exactly ``data`` (None: whether it is missing); compared in
    place, which is cheaper than hashing it."""
    fd = open_current(checkpoint, relative)
    if fd is None:
        return data is None
    try:
        return data is not None and holds(fd, data)
    finally:
        os.close(fd)


def current_hash(checkpoint: Checkpoint, relative: str) -> str | None:
    """sha256 of the current bytes, or None when the file is missing (read in pieces)."""
    fd = open_current(checkpoint, relative)
    if fd is None:
        return None
    try:
        return file_sha256(fd)
    finally:
        os.close(fd)


def replace_file(
    checkpoint: Checkpoint,
    relative: str,
    data: bytes,
    *,
    expect: str | bytes | None,
    link: str | None = None,
) -> None:
    """Replace ``relative`` with ``data`` (or with a symlink to ``link``) if it still hashes to
    ``expect`` (or, given bytes, still holds them): a compare-and-swap, so a lock that silently
    failed loses nothing."""
    path: Path = checkpoint.path(relative)
    if isinstance(expect, bytes):
        unchanged = holds_bytes(checkpoint, relative, expect)
    else:
        unchanged = expect is None or current_hash(checkpoint, relative) == expect
    if not unchanged:
        raise ConflictError(
            "changed by another process while patcher was working; nothing more was written",
            file=path,
            hint=f"patcher status {checkpoint.arg}",
        )
    if link is not None:
        link = checkpoint.restored_link(relative, link)
        _refuse_link_elsewhere(checkpoint, relative, link, data)
        atomic_symlink(path, link, root=checkpoint.root)
    else:
        atomic_write(path, data, mode=file_mode(path), root=checkpoint.root)


def _refuse_link_elsewhere(checkpoint: Checkpoint, relative: str, link: str, data: bytes) -> None:
    """A link the journal records is put back only where it leads to a file holding the
    bytes it stands for: an edited journal's link to a weight shard, or to any other file of
    the checkpoint, is damage, never followed."""
    try:
        fd = checkpoint.open_link(relative, link)
    except (OSError, UnsafePathError):
        fd = None
    try:
        if fd is not None and holds(fd, data):
            return
    finally:
        if fd is not None:
            os.close(fd)
    raise JournalError(
        f"journal is damaged (the link it records, {link}, does not lead to the file's "
        "original bytes); nothing more was written",
        file=checkpoint.path(relative),
        hint=f"inspect {checkpoint.journal_dir / 'journal.json'} (edited by hand?)",
    )
