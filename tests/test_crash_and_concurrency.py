"""Promises 3 and 4: a kill mid-write is settled by the next command; concurrent processes
serialise through the lock and lose nothing."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT, tree_bytes

KILLER = textwrap.dedent(
    """
    import os, signal, sys
    import patcher.store.files as files
    import patcher.store.session as session
    real = files.replace_file
    count = 0
    def killing(*args, **kwargs):
        global count
        real(*args, **kwargs)
        count += 1
        if count == int(os.environ["KILL_AFTER"]):
            os.kill(os.getpid(), signal.SIGKILL)
    session.replace_file = killing  # every write-ahead step writes through it
    from patcher.cli.app import app
    app(sys.argv[1:], prog_name="patcher")
    """
)


def run(*args: str | Path, kill_after: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if kill_after is None:
        command = [sys.executable, "-m", "patcher", *map(str, args)]
    else:
        env["KILL_AFTER"] = str(kill_after)
        command = [sys.executable, "-c", KILLER, *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def journal_states(root: Path) -> list[str]:
    data = json.loads((root / ".patcher" / "journal.json").read_text())
    return [e["state"] for e in data["entries"]]


@pytest.mark.parametrize("kill_after", [1, 2])
def test_killed_apply_is_rolled_back_by_the_next_command(kimi: Path, kill_after: int) -> None:
    original = tree_bytes(kimi)
    killed = run("apply", kimi, "strip-fp8-kv-cache", kill_after=kill_after)
    assert killed.returncode == -signal.SIGKILL
    assert journal_states(kimi) == ["pending"]
    assert tree_bytes(kimi) != original
    status = run("status", kimi, "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["applied"] == []
    assert tree_bytes(kimi) == original
    assert journal_states(kimi) == []
    applied = run("apply", kimi, "strip-fp8-kv-cache")
    assert applied.returncode == 0 and "applied strip-fp8-kv-cache" in applied.stdout


def test_killed_revert_is_finished_by_the_next_command(kimi: Path) -> None:
    original = tree_bytes(kimi)
    assert run("apply", kimi, "strip-fp8-kv-cache").returncode == 0
    killed = run("revert", kimi, "--all", kill_after=1)
    assert killed.returncode == -signal.SIGKILL
    assert journal_states(kimi) == ["reverting"]
    diff = run("diff", kimi)
    assert diff.returncode == 0, diff.stderr
    assert journal_states(kimi) == ["reverted"]
    assert tree_bytes(kimi) == original


def make_setter(directory: Path, index: int) -> Path:
    path = directory / f"set-{index}.toml"
    path.write_text(
        f'name = "set-{index}"\nsummary = "s"\nwhy = "w"\nundo_when = "u"\n'
        f'[[edits]]\nfile = "config.json"\n'
        f'ops = [{{ op = "set", path = "/patcher_test_{index}", value = {index} }}]\n'
    )
    return path


def test_concurrent_applies_and_reverts_stay_consistent(kimi: Path, tmp_path: Path) -> None:
    original = tree_bytes(kimi)
    workers = 4
    setters = [make_setter(tmp_path, i) for i in range(workers)]
    script = tmp_path / "worker.sh"
    script.write_text(
        "set -e\n"
        "for round in 1 2 3; do\n"
        f'  "{sys.executable}" -m patcher apply "$1" "$2"\n'
        f'  "{sys.executable}" -m patcher revert "$1" "$3"\n'
        "done\n"
        f'"{sys.executable}" -m patcher apply "$1" "$2"\n'
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATCHER_LOCK_TIMEOUT": "60"}
    procs = [
        subprocess.Popen(
            ["bash", str(script), str(kimi), str(s), f"set-{i}"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, s in enumerate(setters)
    ]
    procs.append(
        subprocess.Popen(
            [sys.executable, "-m", "patcher", "apply", str(kimi), "strip-fp8-kv-cache"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    )
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    status = json.loads(run("status", kimi, "--json").stdout)
    assert sorted(e["name"] for e in status["applied"]) == sorted(
        [f"set-{i}" for i in range(workers)] + ["strip-fp8-kv-cache"]
    )
    assert {f["state"] for f in status["files"]} == {"patched"}
    config = json.loads((kimi / "config.json").read_text())
    assert all(config[f"patcher_test_{i}"] == i for i in range(workers))
    reverted = run("revert", kimi, "--all")
    assert reverted.returncode == 0, reverted.stderr
    assert tree_bytes(kimi) == original


AUDIT = ROOT / "tests" / "audit_open.py"


def test_weight_shards_are_never_opened(kimi: Path) -> None:
    for index in range(20):
        shard = kimi / f"model-{index:05d}-of-00020.safetensors"
        with shard.open("wb") as handle:
            handle.truncate(5 * 1024**3)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for command in (
        ["apply", str(kimi), "strip-fp8-kv-cache"],
        ["status", str(kimi)],
        ["diff", str(kimi), "--json"],
        ["revert", str(kimi), "--all"],
    ):
        done = subprocess.run(
            [sys.executable, str(AUDIT), *command],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert "SHARDS-OPENED:0 CONFIGS-OPENED:" in done.stderr, (command, done.stderr)
        assert "CONFIGS-OPENED:0" not in done.stderr  # the hook does see the files it reads


def test_a_transform_naming_a_shard_does_not_open_it(kimi: Path, tmp_path: Path) -> None:
    shard = kimi / "model-00001-of-00001.safetensors"
    fix = tmp_path / "fix.toml"
    fix.write_text(
        'name = "my-fix"\nsummary = "s"\nwhy = "w"\nundo_when = "u"\n[[edits]]\n'
        f'file = "{shard.name}"\nops = [{{ op = "remove", path = "/a" }}]\n'
    )
    done = subprocess.run(
        [sys.executable, str(AUDIT), "apply", str(kimi), str(fix)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 1 and "is a weight file" in done.stderr, done.stderr
    assert "SHARDS-OPENED:0 " in done.stderr


LOOPER = textwrap.dedent(
    """
    import sys
    from patcher import api
    ckpt, setter, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    for i in range(rounds):
        for step in (
            lambda: api.apply(ckpt, setter),
            lambda: api.apply(ckpt, "strip-fp8-kv-cache"),
            lambda: api.revert(ckpt, last=True),
            lambda: api.revert(ckpt, every=True),
        ):
            try:
                step()
            except api.PatcherError:
                pass  # refused (a lost lock, a compare-and-swap, nothing to do): never a loss
    """
)


def test_safe_together_when_the_lock_file_is_deleted(kimi: Path, tmp_path: Path) -> None:
    """Six processes run mixed applies and reverts while the lock file is deleted every 5 ms
    (tmp cleaners do): whatever each was refused, at the end the journal and the files agree:
    every journalled file is as patched or reverted, and revert --all gives the originals."""
    import threading
    import time

    original = tree_bytes(kimi)
    lock = kimi / ".patcher" / "lock"
    stop = threading.Event()

    def delete_the_lock() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                lock.unlink()
            time.sleep(0.005)

    deleter = threading.Thread(target=delete_the_lock, daemon=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATCHER_LOCK_TIMEOUT": "60"}
    setters = [make_setter(tmp_path, i) for i in range(6)]
    deleter.start()
    try:
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", LOOPER, str(kimi), str(s), "5"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for s in setters
        ]
        for proc in procs:
            _, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err  # refusals are caught; a crash is not
    finally:
        stop.set()
        deleter.join()
    status = json.loads(run("status", kimi, "--json").stdout)
    assert {f["state"] for f in status["files"]} <= {"patched", "reverted"}, status["files"]
    reverted = run("revert", kimi, "--all")
    assert reverted.returncode == 0, reverted.stderr
    assert tree_bytes(kimi) == original
