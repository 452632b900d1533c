"""The per-checkpoint lock: one writer at a time, with a timeout that names the holder.

Correctness never depends on the lock alone (it may silently not work on NFS): every write
also checks the hash it expects. The lock is taken on the journal folder, so deleting the lock
file (a tmp cleaner, a person) lets no second writer in; a folder replaced while held (or,
where folders cannot be locked, the lock file) is noticed by ``Held.check`` before each write.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import math
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from patcher import progress
from patcher.errors import ConflictError, LockTimeoutError
from patcher.store.fsio import give_folder_owner, write_error

DEFAULT_TIMEOUT_S = 30.0
# What flock says on a filesystem without locks: NFS with no lock service (ENOLCK), some FUSE
# and network filesystems (EOPNOTSUPP, EINVAL).
_NO_LOCKS = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL})


def lock_timeout() -> float:
    """The lock timeout in seconds, from ``PATCHER_LOCK_TIMEOUT`` (default 30)."""
    try:
        value = float(os.environ.get("PATCHER_LOCK_TIMEOUT", DEFAULT_TIMEOUT_S))
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return value if math.isfinite(value) and value >= 0 else DEFAULT_TIMEOUT_S


class Held:
    """The lock as held: ``check`` refuses to go on once it no longer excludes others."""

    __slots__ = ("folder_fd", "fd", "path")

    def __init__(self, folder_fd: int | None, fd: int, path: Path) -> None:
        self.folder_fd, self.fd, self.path = folder_fd, fd, path

    def is_ours(self) -> bool:
        """Whether the locked object is still the one its path names: the journal folder
        (deleting the lock file does not matter then), else the lock file itself."""
        fd, path = (
            (self.fd, self.path) if self.folder_fd is None else (self.folder_fd, self.path.parent)
        )
        try:
            now = os.lstat(path)
        except OSError:
            return False
        mine = os.fstat(fd)
        return (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino)

    def check(self) -> None:
        """Raise unless the lock still excludes other patchers (see the module)."""
        if not self.is_ours():
            raise ConflictError(
                "the lock was removed or replaced while patcher held it, so another process "
                "may be writing; nothing more was written",
                file=self.path,
                hint=f"patcher status {self.path.parent.parent}, then run the command again",
            )


def _open(lock_path: Path) -> int:
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        raise write_error(exc, lock_path) from exc
    give_folder_owner(fd, lock_path.parent)
    return fd


def _wait(
    fd: int,
    holder_fd: int,
    lock_path: Path,
    start: float,
    limit: float,
    operation: int = fcntl.LOCK_EX,
) -> bool:
    """Take a flock on ``fd`` (exclusive, or ``operation``), reporting the holder (from
    ``holder_fd``) while waiting; False where the filesystem has no locks."""
    reported = 0
    while True:
        try:
            fcntl.flock(fd, operation | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            waited = time.monotonic() - start
            report = progress.wait_reporter
            if report is not None and int(waited) > reported:
                reported = int(waited)
                holder = os.pread(holder_fd, 512, 0).decode("utf-8", "replace").strip()
                report(holder or "another patcher", waited)
            if waited >= limit:
                holder = os.pread(holder_fd, 512, 0).decode("utf-8", "replace").strip()
                raise LockTimeoutError(
                    f"locked by another patcher ({holder or 'holder unknown'}) for more "
                    f"than {limit:g}s",
                    file=lock_path,
                    hint="wait for it to finish and run the command again, or raise "
                    "PATCHER_LOCK_TIMEOUT",
                ) from None
            time.sleep(0.02)
        except OSError as exc:
            if exc.errno not in _NO_LOCKS and exc.errno != errno.EBADF:
                raise write_error(exc, lock_path) from exc
            return False
    if reported and progress.wait_done is not None:
        progress.wait_done()
    return True


@contextlib.contextmanager
def locked(lock_path: Path, timeout: float | None = None) -> Iterator[Held]:
    """Hold an exclusive lock on the journal folder (``lock_path``'s) and on ``lock_path``
    while the block runs. The folder's lock is the one that counts: a tmp cleaner or a person
    deleting the lock file cannot let a second writer in. The file's lock excludes older
    patchers, and the file names the holder."""
    limit = lock_timeout() if timeout is None else timeout
    start = time.monotonic()
    try:
        folder_fd: int | None = os.open(
            lock_path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
        )
    except OSError as exc:
        raise write_error(exc, lock_path.parent) from exc
    fd = _open(lock_path)
    try:
        assert folder_fd is not None
        if not _wait(folder_fd, fd, lock_path, start, limit):
            os.close(folder_fd)  # NFS: a folder cannot be flocked there; the file is tried
            folder_fd = None
        if not _wait(fd, fd, lock_path, start, limit) and folder_fd is None:
            # As on an NFS mount whose locks are local only: every write still checks the
            # bytes it expects, so going on unlocked loses nothing but the waiting.
            if progress.unlocked_reporter is not None:
                progress.unlocked_reporter(str(lock_path), os.strerror(errno.ENOLCK))
        info = f"pid {os.getpid()}: {' '.join(Path(a).name for a in sys.argv[:2])}"
        with contextlib.suppress(OSError):  # who holds it is a courtesy (full disk: skip it)
            os.ftruncate(fd, 0)
            os.pwrite(fd, info.encode("utf-8", "replace"), 0)
        yield Held(folder_fd, fd, lock_path)
    finally:
        os.close(fd)
        if folder_fd is not None:
            os.close(folder_fd)


class Shared:
    """A shared hold on a checkpoint's lock (``hold_shared``): writers wait while it lasts."""

    __slots__ = ("fd", "folder_fd")

    def __init__(self, folder_fd: int, fd: int) -> None:
        self.folder_fd, self.fd = folder_fd, fd

    def release(self) -> None:
        """Let writers in (idempotent)."""
        for fd in (self.fd, self.folder_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.fd = self.folder_fd = -1


def hold_shared(lock_path: Path, why: str, timeout: float | None = None) -> Shared | None:
    """Hold the journal folder's lock shared, so that no patcher writes the checkpoint while
    it lasts (a writer waits, naming ``why``, then times out); None where there is no journal
    folder or the filesystem has no locks. Waits for a writer in progress."""
    limit = lock_timeout() if timeout is None else timeout
    try:
        folder_fd = os.open(lock_path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        fd = _open(lock_path)
        if not _wait(folder_fd, fd, lock_path, time.monotonic(), limit, fcntl.LOCK_SH):
            os.close(fd)
            os.close(folder_fd)
            return None
    except BaseException:
        os.close(folder_fd)
        raise
    with contextlib.suppress(OSError):  # who holds it is a courtesy for the writer that waits
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}: {why}".encode("utf-8", "replace"), 0)
    return Shared(folder_fd, fd)
