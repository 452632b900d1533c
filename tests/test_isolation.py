"""The suite never reads or writes the user's home: the Hub tests, which download through
huggingface_hub, run with HOME pointing at an empty folder, and it stays empty."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def test_the_hub_tests_write_nothing_under_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "XDG_"))}
    env |= {"HOME": str(home), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-o",
            "addopts=",
            "-p",
            "no:cacheprovider",
            "tests/ops/test_upstream.py",
            "-k",
            "local_dir or cache or offline",
            "--basetemp",
            str(tmp_path / "base"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert " passed" in done.stdout
    written = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    assert written == [], written
