"""A real full filesystem under sync (issue 28): a small tmpfs holds the checkpoint, a filler
file leaves it a few KiB free, and sync must refuse in one line with the checkpoint either
before or after it, then finish once space is freed. Needs root (a mount), as CI runs."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from patcher import api
from tests.conftest import SNAPSHOTS, Cli, tree_bytes

EXAMPLE = SNAPSHOTS / "example" / "kimi-k2.5-nvfp4"
SYNC = ("--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--tp", "8")


@contextlib.contextmanager
def _tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()})")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_sync_on_a_really_full_filesystem(cli: Cli, tmp_path: Path) -> None:
    reference = shutil.copytree(EXAMPLE, tmp_path / "reference")
    assert cli("sync", reference, *SYNC)[0] == 0
    after = tree_bytes(reference)
    before = tree_bytes(EXAMPLE)
    outcomes = set()
    with _tmpfs(tmp_path / "disk", "2m") as disk:
        for free_kib in (0, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128):
            root = shutil.copytree(EXAMPLE, disk / "kimi")
            stats = os.statvfs(disk)
            room = stats.f_bavail * stats.f_frsize - free_kib * 1024
            filler = disk / "filler"
            with filler.open("wb") as out:
                with contextlib.suppress(OSError):
                    out.write(b"\0" * max(room, 0))
            code, _, err = cli("sync", root, *SYNC)
            where = (free_kib, code, err)
            assert code in (0, 1), where
            if code == 1:
                assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, where
                assert "space" in err or "write" in err, where
            filler.unlink()
            # The next command, with room again, settles what the full disk left: wholly
            # before or wholly after; and a sync then finishes as the unfaulted one did.
            api.status(root)
            assert tree_bytes(root) in (before, after), where
            assert cli("sync", root, *SYNC)[0] == 0, where
            assert tree_bytes(root) == after, where
            outcomes.add(code)
            shutil.rmtree(root)
    assert outcomes == {0, 1}  # some fills refused the sync, the roomier ones let it through
