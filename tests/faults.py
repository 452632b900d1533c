"""Run a patcher command with a fault at the N-th filesystem call (for the fault sweep).

    python tests/faults.py MODE N patcher-args...

MODE is ``kill-before`` (SIGKILL just before the N-th call), ``kill-after`` (SIGKILL just
after it took effect), ``interrupt`` (KeyboardInterrupt just after it took effect, as a
Ctrl-C between a rename and the bookkeeping), or ``eio`` and ``enospc`` (the N-th call fails
with that error and does nothing, as a failing disk or a full one). The calls counted are
every write, fsync, rename, unlink, symlink, hard link and truncate patcher makes while the
command runs (not at import).
Exit code 99 means the command finished before the N-th call: the sweep is complete. With
``PATCHER_FAULT_SCOPE=commit`` only the calls inside ``commit()`` count (the direct sweep).
"""

from __future__ import annotations

import errno
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

ERRORS = {"eio": errno.EIO, "enospc": errno.ENOSPC}
CALLS = (
    "write",
    "pwrite",
    "fsync",
    "replace",
    "rename",
    "unlink",
    "symlink",
    "link",
    "ftruncate",
)


def main() -> None:
    mode, target = sys.argv[1], int(sys.argv[2])
    # PATCHER_FAULT_SCOPE=commit: count only the calls made inside store.change.commit (the
    # one write path), patched before any command module binds it by name.
    inside = [os.environ.get("PATCHER_FAULT_SCOPE") != "commit"]
    if not inside[0]:
        from patcher.store import change

        real_commit = change.commit

        def scoped(*args: Any, **kwargs: Any) -> Any:
            inside[0] = True
            try:
                return real_commit(*args, **kwargs)
            finally:
                inside[0] = False

        change.commit = scoped  # type: ignore[assignment]
    from patcher.cli.app import app

    count = 0

    def wrap(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def faulty(*args: Any, **kwargs: Any) -> Any:
            nonlocal count
            if not inside[0]:
                return real(*args, **kwargs)
            count += 1
            if count == target and mode == "kill-before":
                os.kill(os.getpid(), signal.SIGKILL)
            if count == target and mode in ERRORS:
                raise OSError(ERRORS[mode], os.strerror(ERRORS[mode]))
            result = real(*args, **kwargs)
            if count == target:
                if mode == "kill-after":
                    os.kill(os.getpid(), signal.SIGKILL)
                raise KeyboardInterrupt(f"fault at {name} #{target}")
            return result

        return faulty

    for name in CALLS:
        setattr(os, name, wrap(name, getattr(os, name)))
    try:
        code = app(sys.argv[3:], prog_name="patcher", standalone_mode=False)
    except KeyboardInterrupt:
        code = 130
    sys.exit(99 if count < target else (code if isinstance(code, int) else 0))


if __name__ == "__main__":
    main()
