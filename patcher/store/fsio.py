"""Atomic file IO: every write goes to a temp file in the same directory, is fsynced, and
replaces its target with ``os.replace``. A symlink target is replaced as a link, never
written through."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shlex
import stat
from collections.abc import Iterator
from pathlib import Path

from patcher.errors import PatcherError, UnsafePathError, WriteError


def sha256(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


class Digest:
    """The sha256 of a buffer, computed beside other work: a large buffer is hashed on a
    thread (hashlib lets go of the GIL while it hashes), so hashing a file overlaps with
    validating it."""

    _THREADED = 1 << 20  # below this a thread costs more than it saves

    def __init__(self, data: bytes) -> None:
        self._hex: str | None = None
        self._thread = None
        if len(data) < self._THREADED:
            self._hex = sha256(data)
            return
        import threading

        self._thread = threading.Thread(target=self._run, args=(data,), daemon=True)
        self._thread.start()

    def _run(self, data: bytes) -> None:
        self._hex = sha256(data)

    def result(self) -> str:
        """The hex digest (waits for the thread)."""
        if self._thread is not None:
            self._thread.join()
        assert self._hex is not None
        return self._hex


def file_sha256(path: Path | int) -> str:
    """Hex sha256 of a file's bytes (a path or an open fd), read in pieces, never whole."""
    if isinstance(path, int):
        with os.fdopen(os.dup(path), "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


_PIECE = 1 << 20


def holds(fd: int, data: bytes) -> bool:
    """Whether the open file ``fd`` holds exactly ``data``. Compared in place, 1 MiB at a
    time (``startswith`` is a memcmp), so it costs a read and no hash, and no second copy of a
    large file is held."""
    if os.fstat(fd).st_size != len(data):
        return False
    piece = bytearray(min(_PIECE, max(len(data), 1)))
    at = 0
    with memoryview(piece) as view:
        while True:
            if at == len(data):
                return os.pread(fd, 1, at) == b""  # and nothing was added since the stat
            count = os.preadv(fd, [view], at)
            if count == 0:
                return False
            if not data.startswith(view[:count], at):
                return False
            at += count


TMP_SUFFIX = ".patcher-tmp"


def _tmp_name(target: Path) -> Path:
    return target.with_name(f".{target.name}.{os.urandom(4).hex()}{TMP_SUFFIX}")


def stale_temp_files(directories: list[Path]) -> list[Path]:
    """Temp files a killed write left in ``directories`` (names only; nothing is read)."""
    found: list[Path] = []
    for directory in dict.fromkeys(directories):
        try:
            with os.scandir(directory) as entries:
                found += [
                    Path(e.path)
                    for e in entries
                    if e.name.startswith(".") and e.name.endswith(TMP_SUFFIX)
                ]
        except OSError:
            continue
    return found


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _user_name(uid: int) -> str:
    import pwd  # only on this refusal path

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _owned_by_another(target: Path) -> Path | None:
    """``target``'s folder (where the temp file is made), else ``target``, when it belongs to
    another user."""
    for path in (target.parent, target):
        with contextlib.suppress(OSError):
            if os.lstat(path).st_uid != os.geteuid():
                return path
    return None


def write_error(exc: OSError, target: Path) -> WriteError:
    """Turn an OSError from a write into a one-line refusal."""
    foreign = _owned_by_another(target) if exc.errno in (errno.EACCES, errno.EPERM) else None
    if exc.errno == errno.ENOSPC:
        problem = "no space left on the device"
        hint = "free some space, then run the same command again (nothing was changed)"
    elif foreign is not None:
        owner = _user_name(os.lstat(foreign).st_uid)
        folder = foreign if foreign.is_dir() else foreign.parent
        problem = f"cannot write here ({exc.strerror}; {foreign} belongs to {owner})"
        hint = (
            f"run the command as {owner}, or take the folder over: "
            f"sudo chown -R {_user_name(os.geteuid())} {shlex.quote(str(folder))}"
        )
    elif exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        problem = f"cannot write here ({os.strerror(exc.errno)})"
        hint = "make the checkpoint writable, or use 'patcher apply CKPT NAME --overlay OUT'"
    else:
        problem = f"write failed ({exc.strerror or exc})"
        hint = "fix the filesystem problem, then run the same command again"
    return WriteError(problem, file=target, hint=hint)


def _open_dir(root: Path | None, directory: Path) -> int:
    """An fd of ``directory``. Under ``root`` (the checkpoint) it is reached one component at
    a time with O_NOFOLLOW from ``root``'s own fd, so a folder swapped for a symlink after the
    path was checked is refused, not followed (no check-then-use race)."""
    if root is None or directory == root or root not in directory.parents:
        return os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in directory.relative_to(root).parts:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
    except OSError:
        os.close(fd)
        raise
    return fd


def _take_owner(fd: int, like: os.stat_result) -> None:
    """Give the open file ``fd`` the owner of ``like`` if it differs (called as root only)."""
    mine = os.fstat(fd)
    if (mine.st_uid, mine.st_gid) != (like.st_uid, like.st_gid):
        os.fchown(fd, like.st_uid, like.st_gid)


def _same_owner(dir_fd: int, name: str, fd: int) -> None:
    """As root, give the new file the owner of the one it replaces, or of its folder when there
    is none: a user's checkpoint, and the journal in it, must not become root's."""
    if os.geteuid() != 0:
        return
    with contextlib.suppress(OSError):
        try:
            like = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            like = os.fstat(dir_fd)
        _take_owner(fd, like)


def give_folder_owner(fd: int, folder: Path) -> None:
    """As root, give the open file ``fd`` the owner of ``folder``, the one it was made in."""
    if os.geteuid() != 0:
        return
    with contextlib.suppress(OSError):
        _take_owner(fd, os.stat(folder))


# A folder on CIFS, Ceph or a FUSE mount (gcsfuse, s3fs) may have no fsync at all: Linux then
# says EINVAL or ENOTSUP, never for a failed write-back (that is EIO or ENOSPC). The rename has
# happened and is as durable as that filesystem makes it; refusing would fail every command
# there after changing the file. Borg, MongoDB and Syncthing skip it the same way.
_NO_FOLDER_SYNC = frozenset({errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP})


def _sync_folder(dir_fd: int) -> None:
    """fsync a folder, so that a rename in it survives a power cut, where the filesystem can."""
    try:
        os.fsync(dir_fd)
    except OSError as exc:
        if exc.errno not in _NO_FOLDER_SYNC:
            raise


def atomic_write(
    target: Path, data: bytes, *, mode: int | None = None, root: Path | None = None
) -> None:
    """Write ``data`` to ``target`` atomically; a symlink there is replaced, not followed.
    ``root`` (the checkpoint) makes every folder below it opened without following links."""
    tmp = _tmp_name(target).name
    try:
        dir_fd = _open_dir(root, target.parent)
    except OSError as exc:
        raise _folder_error(exc, target) from exc
    try:
        with _temp_for(target, tmp, dir_fd):
            fd = os.open(
                tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd
            )
            try:
                _write_all(fd, data)
                if mode is not None:
                    os.fchmod(fd, mode)
                _same_owner(dir_fd, target.name, fd)
                os.fsync(fd)
            finally:
                os.close(fd)
            _rename_over(target, tmp, dir_fd)
    finally:
        os.close(dir_fd)


@contextlib.contextmanager
def _temp_for(target: Path, tmp: str, dir_fd: int) -> Iterator[None]:
    """Around making the temp file ``tmp`` for ``target``: a failure removes it and is named
    for ``target``."""
    try:
        yield
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise write_error(exc, target) from exc


def _rename_over(target: Path, tmp: str, dir_fd: int) -> None:
    """Put the finished ``tmp`` in ``target``'s place, durably where the filesystem can."""
    os.replace(tmp, target.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    _sync_folder(dir_fd)


def atomic_link(source: Path, target: Path, data: bytes, *, root: Path) -> bool:
    """Make ``target`` a second name of ``source``'s file, atomically, when that file holds
    exactly ``data`` and has no other name; False, with nothing changed, where it cannot be
    (a symlink, a file with other hard links, another filesystem, no hard links there).

    Keeping an original this way costs no copy: once the checkpoint's name is replaced by the
    edited file, the original's inode is reachable only from ``target``. A file with another
    name elsewhere is never linked, as an edit in place there would change the kept bytes;
    nor is one whose owner or mode a copy would not keep (the journal's files belong to the
    journal folder's owner, see ``_same_owner``)."""
    if root not in source.parents or root not in target.parents:
        return False  # only ever a file of the checkpoint, into its own journal
    try:
        src_fd = _open_dir(root, source.parent)
    except OSError:
        return False
    try:
        dst_fd = _open_dir(root, target.parent)
    except OSError:
        os.close(src_fd)
        return False
    tmp = _tmp_name(target).name
    try:
        try:
            before = os.stat(source.name, dir_fd=src_fd, follow_symlinks=False)
            folder = os.fstat(dst_fd)
            if (
                not stat.S_ISREG(before.st_mode)
                or before.st_nlink != 1
                or stat.S_IMODE(before.st_mode) & ~0o666  # a copy would drop those bits
                or (before.st_uid, before.st_gid) != (folder.st_uid, folder.st_gid)
            ):
                return False
            os.link(source.name, tmp, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)
        except OSError:
            return False
        with _temp_for(target, tmp, dst_fd):
            if not _synced_if_same(tmp, dst_fd, before, data):
                os.unlink(tmp, dir_fd=dst_fd)
                return False
            _rename_over(target, tmp, dst_fd)
        return True
    finally:
        os.close(src_fd)
        os.close(dst_fd)


def _synced_if_same(name: str, dir_fd: int, like: os.stat_result, data: bytes) -> bool:
    """Whether the new link ``name`` is the file ``like`` (now with exactly two names) and
    holds ``data``; if so it is fsynced, as the original may never have been synced by its
    writer. A name swapped meanwhile (for a symlink, for another file) is simply not it."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return False
    try:
        linked = os.fstat(fd)
        identity = (linked.st_dev, linked.st_ino, linked.st_nlink)
        if identity != (like.st_dev, like.st_ino, 2) or not holds(fd, data):
            return False
        os.fsync(fd)
        return True
    finally:
        os.close(fd)


def atomic_symlink(target: Path, link_to: str, *, root: Path | None = None) -> None:
    """Make ``target`` a symlink to ``link_to``, atomically replacing whatever is there."""
    tmp = _tmp_name(target).name
    try:
        dir_fd = _open_dir(root, target.parent)
    except OSError as exc:
        raise _folder_error(exc, target) from exc
    try:
        with _temp_for(target, tmp, dir_fd):
            os.symlink(link_to, tmp, dir_fd=dir_fd)
            _rename_over(target, tmp, dir_fd)
    finally:
        os.close(dir_fd)


def _folder_error(exc: OSError, target: Path) -> PatcherError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return UnsafePathError(
            "a folder on the way is a symlink (or not a folder); patcher never writes through "
            "a link",
            file=target,
            hint="put the real folder back, then run the command again",
        )
    return write_error(exc, target)


def check_real_dir(directory: Path) -> None:
    """Refuse a ``directory`` that is a symlink or not a directory: patcher's own folders must
    not send its writes elsewhere."""
    try:
        info = os.lstat(directory)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise write_error(exc, directory) from exc
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePathError(
            "is a symlink or not a folder; patcher will not write its journal through it",
            file=directory,
            hint=f"remove it (rm {directory}) if you did not make it, then run the command again",
        )


def _adopt_parent_owner(directory: Path) -> None:
    """As root, give a folder just made the owner of the folder it was made in."""
    if os.geteuid() != 0:
        return
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            give_folder_owner(fd, directory.parent)
        finally:
            os.close(fd)


def ensure_dir(directory: Path, *, private: bool = False) -> None:
    """Create ``directory`` (one level) if missing, as a refusal on failure; never through a
    symlink. ``private`` makes it 0700 (it will hold copies of a private file)."""
    check_real_dir(directory)
    try:
        try:
            directory.mkdir()
        except FileExistsError:
            pass
        else:
            _adopt_parent_owner(directory)
        check_real_dir(directory)
        if private:
            os.chmod(directory, 0o700, follow_symlinks=False)
    except OSError as exc:
        raise write_error(exc, directory) from exc


def file_mode(path: Path) -> int | None:
    """Permission bits of the file ``path`` points to, or None when it does not exist."""
    try:
        return os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        return None


def mtime_ns(path: Path) -> int | None:
    """The modification time of the file ``path`` points to (None when missing)."""
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def set_mtime_ns(path: Path, value: int | None) -> None:
    """Give a restored original its own modification time back (best effort, never a link)."""
    if value is None:
        return
    with contextlib.suppress(OSError, NotImplementedError):
        os.utime(path, ns=(value, value), follow_symlinks=False)


class NotRegularFileError(OSError):
    """What :func:`open_regular` raises for a folder, a pipe or a device."""


def open_regular(path: Path) -> int:
    """A read-only fd of the regular file at ``path``. A pipe is refused, not waited on: it is
    opened without blocking and checked before anything is read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotRegularFileError(errno.EINVAL, "not a regular file")
    return fd


def read_regular(path: Path, limit: int | None = None) -> bytes:
    """The bytes of a regular file (of at most ``limit`` bytes); see :func:`open_regular`."""
    with os.fdopen(open_regular(path), "rb") as handle:
        if limit is None:
            return handle.read()
        if os.fstat(handle.fileno()).st_size > limit:
            raise NotRegularFileError(errno.EFBIG, f"larger than {limit // 2**20} MiB")
        return handle.read(limit + 1)
