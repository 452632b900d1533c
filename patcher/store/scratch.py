"""A scratch copy of a checkpoint's config files and journal, to predict what a command
would do by running it for real where nothing matters (the checkpoint is neither written nor
locked). Weights are never read: only the config files are copied."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from patcher.errors import PatcherError, WriteError
from patcher.store.checkpoint import Checkpoint
from patcher.store.files import read_current
from patcher.store.journal import originals
from patcher.store.session import read_journal

SCRATCH_SUFFIXES = (".json", ".jinja")


def config_bytes(ckpt: Checkpoint) -> dict[str, bytes | None]:
    """The checkpoint's config files as they are now (through links; weights never read)."""
    return {
        child.name: read_current(ckpt, child.name)
        for child in sorted(ckpt.root.iterdir())
        if child.name.endswith(SCRATCH_SUFFIXES)
    }


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


@contextlib.contextmanager
def scratch_copy(ckpt: Checkpoint) -> Iterator[Path]:
    """A temporary folder holding a copy of ``ckpt``'s config files and journal."""
    with work_folder("scratch") as scratch:
        copy = Path(scratch) / "checkpoint"
        try:
            copy.mkdir()
            for name, data in config_bytes(ckpt).items():
                if data is not None:
                    (copy / name).write_bytes(data)
            journal = ckpt.journal_dir / "journal.json"
            if journal.is_file():
                (copy / ".patcher").mkdir()
                shutil.copyfile(journal, copy / ".patcher" / "journal.json")
                if (ckpt.journal_dir / "objects").is_dir():
                    shutil.copytree(
                        ckpt.journal_dir / "objects",
                        copy / ".patcher" / "objects",
                        copy_function=_link_or_copy,
                    )
        except OSError as exc:
            raise scratch_error(exc) from None
        try:
            yield copy
        except PatcherError as exc:  # a message names the user's checkpoint, never the copy
            raise exc.relocated(copy, ckpt.root) from None


def scratch_error(exc: OSError) -> WriteError:
    """The refusal when patcher's scratch copy cannot be written: the temp folder is the
    problem (full, failing), not the checkpoint, which was not touched."""
    return WriteError(
        f"cannot write patcher's scratch copy ({exc.strerror or exc})",
        file=tempfile.gettempdir(),
        hint="free space in the temp folder (or point TMPDIR elsewhere), then run the same "
        "command again (nothing was changed)",
    )


def _link_or_copy(source: str, target: str) -> None:
    """A hard link where the filesystem allows one, else a copy: objects are never written in
    place (a store replaces a file by renaming over it), so the scratch run cannot change the
    checkpoint's own through a link."""
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError:
        shutil.copy2(source, target, follow_symlinks=False)


def copy_bytes(
    ckpt: Checkpoint, copy: Path, names: Mapping[str, object]
) -> dict[str, bytes | None]:
    """The bytes of ``names`` (and any new config file) in the scratch ``copy``; a file put
    back there as its Hugging Face cache link holds its original bytes."""
    found: dict[str, bytes | None] = {}
    kept: dict[str, bytes] | None = None  # the journal's originals, read only if needed
    for name in {*names, *(p.name for p in copy.iterdir() if p.name.endswith(SCRATCH_SUFFIXES))}:
        path = copy / name
        if path.is_symlink():
            kept = originals(ckpt, read_journal(ckpt)) if kept is None else kept
            found[name] = kept.get(name)
        else:
            found[name] = path.read_bytes() if path.is_file() else None
    return found
