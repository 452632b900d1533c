"""The per-checkpoint lock: one writer at a time, with a timeout that names the holder.

Correctness never depends on the lock alone (it may silently not work on NFS): every write
also checks the hash it expects.
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
from patcher.errors import LockTimeoutError
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


@contextlib.contextmanager
def locked(lock_path: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` while the block runs."""
    limit = lock_timeout() if timeout is None else timeout
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        raise write_error(exc, lock_path) from exc
    give_folder_owner(fd, lock_path.parent)
    try:
        start = time.monotonic()
        deadline = start + limit
        reported = 0
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - start
                report = progress.wait_reporter
                if report is not None and int(waited) > reported:
                    reported = int(waited)
                    holder = os.pread(fd, 512, 0).decode("utf-8", "replace").strip()
                    report(holder or "another patcher", waited)
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 512, 0).decode("utf-8", "replace").strip()
                    raise LockTimeoutError(
                        f"locked by another patcher ({holder or 'holder unknown'}) for more "
                        f"than {limit:g}s",
                        file=lock_path,
                        hint="wait for it to finish and run the command again, or raise "
                        "PATCHER_LOCK_TIMEOUT",
                    ) from None
                time.sleep(0.02)
            except OSError as exc:
                if exc.errno not in _NO_LOCKS:
                    raise write_error(exc, lock_path) from exc
                # As on an NFS mount whose locks are local only: every write still checks the
                # bytes it expects, so going on unlocked loses nothing but the waiting.
                if progress.unlocked_reporter is not None:
                    progress.unlocked_reporter(str(lock_path), os.strerror(exc.errno))
                break
        if reported and progress.wait_done is not None:
            progress.wait_done()
        info = f"pid {os.getpid()}: {' '.join(Path(a).name for a in sys.argv[:2])}"
        with contextlib.suppress(OSError):  # who holds it is a courtesy (full disk: skip it)
            os.ftruncate(fd, 0)
            os.pwrite(fd, info.encode("utf-8", "replace"), 0)
        yield
    finally:
        os.close(fd)
