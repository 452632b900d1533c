"""Opening a file beneath a folder without ever leaving it: the one way patcher reads a
checkpoint's files.

Checking a path and then opening it is a race: between the two, another process that can write
the folder swaps the file for a link to a private file elsewhere (``renameat2`` with
``RENAME_EXCHANGE`` in a loop), and the open follows it. Here nothing is checked before the
open. Each folder is opened from its parent's descriptor with ``O_NOFOLLOW``, and so is the
file. A file that is a link is followed only as the layout allows: its target is read from the
link itself (``readlinkat``), must lie inside one of the allowed bases (the checkpoint, a Hugging
Face cache snapshot's ``blobs``, an overlay's source) and is then opened the same way from that
base, so a link swapped after it was read leads nowhere. What was opened is then checked: a
regular file, and, for root, one owned by the folder's owner (another user's hard link to
root's private file is refused, not read).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from patcher.errors import UnsafePathError
from patcher.store.fsio import NotRegularFileError

_HOPS = 2  # an overlay's link to its source, whose file links to its cache blob
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
# Called just before a file is opened (tests make the swap race deterministic with it).
before_open_hook: Callable[[Path], None] | None = None


def allowed_bases(bases: tuple[Path, ...]) -> tuple[Path, ...]:
    """``bases`` and, for each that is a Hugging Face cache snapshot, the cache's real
    ``blobs`` folder its files link to."""
    found = list(bases)
    for base in bases:
        blobs = base.parent.parent / "blobs"
        if base.parent.name == "snapshots" and blobs.is_dir() and not blobs.is_symlink():
            found.append(blobs)
    return tuple(dict.fromkeys(found))


def open_beneath(root: Path, relative: str, bases: tuple[Path, ...] = ()) -> int:
    """A read-only descriptor of the regular file ``relative`` under ``root``, reached without
    following any link but a file's link into ``bases`` (by default ``root`` alone).

    Raises FileNotFoundError when it is absent, :class:`NotRegularFileError` for anything but a
    regular file, UnsafePathError for a link leading out, a linked folder, or (as root) a file
    owned by another user than its folder's owner."""
    top = root.resolve()
    return _open(top, PurePosixPath(relative), allowed_bases(bases or (top,)), _HOPS, root)


def _open(base: Path, rel: PurePosixPath, bases: tuple[Path, ...], hops: int, shown: Path) -> int:
    if not rel.parts:
        raise NotRegularFileError(errno.EISDIR, "a folder, not a file")
    dir_fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in rel.parts[:-1]:
            try:
                inner = os.open(part, _FOLDER, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(part, dir_fd):
                    raise UnsafePathError(
                        "a folder on the way is a symlink; patcher never reads through a linked "
                        "folder",
                        file=shown / rel,
                        hint="put the real folder back, then run the command again",
                    ) from None
                raise
            os.close(dir_fd)
            dir_fd = inner
        if before_open_hook is not None:
            before_open_hook(base / rel)
        try:
            fd = os.open(rel.name, _FILE, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno != errno.ELOOP or hops == 0:
                raise
            return _follow(base, rel, dir_fd, bases, hops, shown)
        try:
            _check_opened(fd, dir_fd, shown / rel)
        except BaseException:
            os.close(fd)
            raise
        return fd
    finally:
        os.close(dir_fd)


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _follow(
    base: Path, rel: PurePosixPath, dir_fd: int, bases: tuple[Path, ...], hops: int, shown: Path
) -> int:
    """Open what the link ``rel`` (read from the link itself, once) names, from the base it
    lies in; anything outside every base is refused."""
    try:
        text = os.readlink(rel.name, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.EINVAL:  # swapped back for a file: the caller may read again
            raise FileNotFoundError(errno.ENOENT, "changed while being opened") from None
        raise
    return _open_inside(base / rel.parent / text, bases, hops - 1, shown / rel)


def open_link_target(folder: Path, link: str, bases: tuple[Path, ...]) -> int:
    """A descriptor of what a link ``link`` in ``folder`` (a resolved path) leads to, as the
    journal recorded it: only inside ``bases``, opened as :func:`open_beneath` does."""
    return _open_inside(folder / link, allowed_bases(bases), _HOPS - 1, folder / link)


def _open_inside(path: Path, bases: tuple[Path, ...], hops: int, shown: Path) -> int:
    target = Path(os.path.normpath(path))
    inside = next((b for b in bases if target == b or b in target.parents), None)
    if inside is None or target == inside:
        raise UnsafePathError(
            f"symlink leads outside the checkpoint (to {target})",
            file=shown,
            hint="copy the file into the checkpoint, or use an overlay",
        )
    return _open(inside, PurePosixPath(target.relative_to(inside)), bases, hops, inside)


def _check_opened(fd: int, dir_fd: int, path: Path) -> None:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise NotRegularFileError(errno.EINVAL, "not a regular file")
    if os.geteuid() != 0:
        return
    folder = os.fstat(dir_fd)
    # Only a folder's owner (or root) can put a file in it; a file of a third user there is
    # a hard link to that user's file, made to have root read it (fs.protected_hardlinks off).
    if folder.st_uid not in (0, info.st_uid):
        raise UnsafePathError(
            f"owned by uid {info.st_uid}, not by the folder's owner (uid {folder.st_uid}); "
            "patcher running as root does not read a file another user may have linked in",
            file=path,
            hint=f"if it is yours, give it to the folder's owner: chown {folder.st_uid} {path}",
        )
