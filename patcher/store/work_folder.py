"""Temporary work folders: a Hub download for ``diff --upstream``, the files an installed
engine is asked about. A kill skips their clean-up, so each new one first removes those of
patcher processes that are gone."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

# "scratch" and "rebuild": older patchers' copies, removed like the others when left behind.
_KINDS = ("scratch", "rebuild", "upstream", "ask")


def work_folder(kind: str) -> tempfile.TemporaryDirectory[str]:
    """A temporary folder ``$TMPDIR/patcher-KIND-PID-XXXX``, removed when done. Those a killed
    patcher left (named with a process id that no longer runs, and ours) are removed first:
    a kill skips the clean-up, and nothing else would ever remove them."""
    remove_left_behind()
    return tempfile.TemporaryDirectory(
        prefix=f"patcher-{kind}-{os.getpid()}-", ignore_cleanup_errors=True
    )


def remove_left_behind(folder: Path | None = None) -> list[Path]:
    """Remove the work folders of patcher processes that are gone (in ``folder``, by
    default the temp folder); returns what was removed."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder or tempfile.gettempdir()))
    except OSError:
        return removed
    for entry in entries:
        kind, _, rest = entry.name.removeprefix("patcher-").partition("-")
        pid = rest.partition("-")[0]
        if not entry.name.startswith("patcher-") or kind not in _KINDS or not pid.isdigit():
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or _runs(int(pid)):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(Path(entry.path))
    return removed


def _runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process, or no such number: leave it
    return True
