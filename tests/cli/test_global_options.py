"""--no-color and --json are taken wherever they are typed (issue 32 item 9)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from patcher.cli.app import global_options_anywhere
from tests.conftest import ROOT

EXAMPLE = ROOT / "snapshots" / "example" / "kimi-k2.5-nvfp4"


def _patcher(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "patcher", *args], capture_output=True, text=True, cwd=ROOT
    )


def test_no_color_after_the_command_and_json_before_it() -> None:
    done = _patcher("status", str(EXAMPLE), "--no-color")
    assert done.returncode == 0, done.stderr
    done = _patcher("--json", "status", str(EXAMPLE))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["applied"] == []


def test_the_engine_command_line_after_the_double_dash_is_left_alone() -> None:
    args = ["run", "--", "vllm", "serve", "X", "--json", "--no-color"]
    assert global_options_anywhere(args) == args
    assert global_options_anywhere(["--json", "plan", "X", "--no-color"]) == [
        "--no-color",
        "plan",
        "X",
        "--json",
    ]


def test_exit_codes_are_consistent(tmp_path: Path) -> None:
    """revert --last and --all with nothing applied both exit 0; diff --exit-code exits 1 on a
    difference and 0 without, as git diff."""
    kimi = tmp_path / "kimi"
    shutil.copytree(EXAMPLE, kimi)
    assert _patcher("revert", str(kimi), "--last").returncode == 0
    assert _patcher("revert", str(kimi), "--all").returncode == 0
    assert _patcher("revert", str(kimi), "strip-fp8-kv-cache").returncode == 1  # not applied
    assert _patcher("diff", str(kimi), "--exit-code").returncode == 0
    assert _patcher("apply", str(kimi), "strip-fp8-kv-cache").returncode == 0
    assert _patcher("diff", str(kimi)).returncode == 0
    assert _patcher("diff", str(kimi), "--exit-code").returncode == 1


def test_every_option_names_its_value_in_one_style() -> None:
    """Issue 32 item 11: metavars are words (FILE, NAME, N, SIZE), never click's <path>,
    <str> or <int range>."""
    from patcher.cli.app import COMMANDS

    for name in COMMANDS:
        done = _patcher(name, "--help")
        assert done.returncode == 0, name
        assert not re.search(r"<[a-z ]+>", done.stdout), (
            name,
            re.findall(r"<[a-z ]+>", done.stdout),
        )
