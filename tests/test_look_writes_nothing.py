"""A look or a plan writes nothing, anywhere: ``plan``, every ``--dry-run``, status, diff,
show, check and kv-budget make no file-changing system call (``strace -f``), the lock file
aside. A dry run is the change planned in memory by the code the real run commits."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SNAPSHOTS

TARGET = ("--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--tp", "8")
# Every system call that changes a file or folder, or makes one.
CHANGING = (
    "creat,rename,renameat,renameat2,unlink,unlinkat,mkdir,mkdirat,rmdir,symlink,symlinkat,"
    "link,linkat,truncate,ftruncate,utimensat,chmod,fchmod,fchmodat,fsync,fdatasync"
)
LOOKS = {
    "plan": ("plan", "{ckpt}", *TARGET),
    "plan --prune": ("plan", "{ckpt}", *TARGET, "--prune"),
    "sync --dry-run": ("sync", "{ckpt}", *TARGET, "--dry-run"),
    "apply --dry-run (a new entry)": ("apply", "{ckpt}", "drop-auto-map", "--dry-run"),
    "apply --dry-run (a replacement)": (
        "apply",
        "{ckpt}",
        "set-torch-dtype",
        "--set",
        "dtype=bfloat16",
        "--dry-run",
    ),
    "revert --dry-run": ("revert", "{ckpt}", "--all", "--dry-run"),
    "set --dry-run": (
        "set",
        "{ckpt}",
        "config.json",
        "/max_position_embeddings",
        "4096",
        "--dry-run",
    ),
    "restore --dry-run": ("restore", "{ckpt}", "--upstream", "--dry-run"),
    "forget --dry-run": ("forget", "{ckpt}", "--dry-run"),
    "status": ("status", "{ckpt}"),
    "diff": ("diff", "{ckpt}"),
    "show": ("show", "set-torch-dtype"),
    "check": ("check", "{ckpt}", *TARGET),
    "kv-budget": ("kv-budget", "{ckpt}", *TARGET),
}


def _changes(trace: str, ckpt: Path) -> list[str]:
    """The file-changing calls in an ``strace -f`` log, the checkpoint's lock file aside."""
    found = []
    for line in trace.splitlines():
        call = re.match(r"\d+\s+(\w+)\(", line)
        if call is None or "= -1" in line:
            continue
        name = call.group(1)
        if name in ("openat", "open"):
            if not re.search(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC", line):
                continue
            if f'"{ckpt}/.patcher/lock"' in line or '"/dev/null"' in line:
                continue
        found.append(line)
    return found


@pytest.fixture(scope="module")
def patched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example with one entry applied, so a dry run can replace, revert and restore."""
    ckpt = tmp_path_factory.mktemp("look") / "kimi"
    shutil.copytree(SNAPSHOTS / "example" / "kimi-k2.5-nvfp4", ckpt)
    from patcher import api

    api.apply(ckpt, "set-torch-dtype", {"dtype": "float16"})
    return ckpt


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
@pytest.mark.parametrize("look", sorted(LOOKS))
def test_a_look_or_a_plan_makes_no_file_changing_call(
    look: str, patched: Path, tmp_path: Path
) -> None:
    before = {p: p.read_bytes() for p in sorted(patched.rglob("*")) if p.is_file()}
    args = [a.replace("{ckpt}", str(patched)) for a in LOOKS[look]]
    log = tmp_path / "trace"
    env = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",  # Python's own .pyc cache is not patcher's doing
        "NO_COLOR": "1",
    }
    done = subprocess.run(
        ["strace", "-f", "-qq", "-o", str(log), "-e", f"trace=openat,open,{CHANGING}"]
        + [sys.executable, "-m", "patcher", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    # 1: check's findings or a refusal (forget while entries are applied); 4: plan's actions
    assert done.returncode in (0, 1, 4) and "Traceback" not in done.stderr, done.stderr
    assert _changes(log.read_text(), patched) == []
    assert {p: p.read_bytes() for p in sorted(patched.rglob("*")) if p.is_file()} == before
