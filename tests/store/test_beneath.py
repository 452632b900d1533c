"""No file outside the checkpoint is read, printed or copied, whatever another process does to
the folder meanwhile: every read opens beneath the checkpoint (``patcher.store.beneath``)."""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from patcher import api
from patcher.errors import PatcherError
from patcher.ops.one_off import set_member
from patcher.store import beneath
from tests.conftest import Cli

SECRET = b'{"secret": "ROOT-ONLY-TOKEN-4f1d"}'


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "private.json"
    path.write_bytes(SECRET)
    path.chmod(0o600)
    return path


def _nothing_leaked(kimi: Path, *texts: str) -> None:
    assert all("ROOT-ONLY-TOKEN" not in text for text in texts)
    objects = kimi / ".patcher" / "objects"
    kept = [p.read_bytes() for p in objects.iterdir()] if objects.is_dir() else []
    assert all(b"ROOT-ONLY-TOKEN" not in data for data in kept)


@pytest.fixture
def swap_on_open(kimi: Path, secret: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    """Between patcher's check of config.json and its open, config.json becomes a link to a
    private file outside: the race, made deterministic."""
    swapped: list[Path] = []

    def swap(path: Path) -> None:
        if path.name == "config.json" and not swapped:
            config = kimi / "config.json"
            config.rename(kimi / "config.json.aside")
            config.symlink_to(secret)
            swapped.append(path)

    monkeypatch.setattr(beneath, "before_open_hook", swap)
    yield swapped


@pytest.mark.parametrize(
    "command",
    [
        ("diff",),
        ("restore", "--dry-run"),
        ("status",),
        ("check", "--engine", "vllm==0.16.0", "--gpu", "B200"),
        ("set", "config.json", "/max_position_embeddings", "8"),
        ("apply", "set-torch-dtype", "--set", "dtype=float16"),
        ("revert", "--all"),
    ],
)
def test_a_link_swapped_in_after_the_check_is_refused_not_followed(
    cli: Cli, kimi: Path, swap_on_open: list[Path], command: tuple[str, ...]
) -> None:
    beneath.before_open_hook, hook = None, beneath.before_open_hook
    assert cli("apply", kimi, "strip-fp8-kv-cache")[0] == 0
    beneath.before_open_hook = hook
    code, out, err = cli(command[0], kimi, *command[1:])
    assert swap_on_open, "the swap happened"
    assert code in (0, 1), out + err
    assert "Traceback" not in err
    _nothing_leaked(kimi, out, err)
    if code == 1:
        assert "symlink leads outside the checkpoint" in err and len(err.splitlines()) == 1


def _exchange() -> ctypes.CDLL | None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    return libc if hasattr(libc, "renameat2") else None


@pytest.mark.skipif(_exchange() is None, reason="needs renameat2 (Linux, glibc 2.28+)")
def test_an_exchange_loop_never_gets_a_private_file_read(kimi: Path, secret: Path) -> None:
    """Another process exchanges config.json with a link to a private file outside, in a loop
    (renameat2 RENAME_EXCHANGE): diff, status and set never read it, and never crash."""
    libc = _exchange()
    assert libc is not None
    api.apply(kimi, "strip-fp8-kv-cache")
    bait = kimi / "bait"
    bait.symlink_to(secret)
    stop = threading.Event()
    a, b = bytes(kimi / "config.json"), bytes(bait)

    config = kimi / "config.json"

    def exchange() -> None:
        while not stop.is_set():
            if not bait.is_symlink() and not config.is_symlink():
                # A write that passed its check renamed its file over the link while the link
                # stood as config.json (the window between a check and a rename): the link is
                # gone, never followed. Lay it again, or no later turn could meet the race.
                fresh = kimi / "bait.new"
                fresh.unlink(missing_ok=True)
                fresh.symlink_to(secret)
                fresh.replace(bait)
            libc.renameat2(-100, a, -100, b, 2)  # AT_FDCWD, RENAME_EXCHANGE

    racer = threading.Thread(target=exchange, daemon=True)
    racer.start()
    seen: list[str] = []
    try:
        # Until the race is met (usually within 150 turns; on a loaded machine the racer can
        # be scheduled late: 3,000 turns once missed it in CI), at least 150 turns and for at
        # most 2 minutes.
        deadline = time.monotonic() + 120
        met = False
        for turn in itertools.count():
            if (turn >= 150 and met) or time.monotonic() > deadline:
                break
            try:
                if turn % 3 == 0:
                    text = str(api.diff(kimi).to_json())
                elif turn % 3 == 1:
                    text = str(api.status(kimi).to_json())
                else:
                    set_member(kimi, "config.json", "/max_position_embeddings", turn, parse=False)
                    continue
            except PatcherError as exc:
                text = str(exc)
            seen.append(text)
            met = met or "symlink leads outside" in text
    finally:
        stop.set()
        racer.join()
    assert any("symlink leads outside" in text for text in seen), "the race was met"
    _nothing_leaked(kimi, *seen)


@pytest.mark.skipif(os.geteuid() != 0, reason="the owner check is root's")
def test_root_does_not_read_another_users_hard_link(cli: Cli, kimi: Path, secret: Path) -> None:
    """As root, in a folder owned by another user, a file owned by a third (a hard link to
    root's private file, made by the folder's owner) is refused, not read or copied."""
    nobody = 65534
    (kimi / "config.json").unlink()
    os.link(secret, kimi / "config.json")
    os.chown(kimi, nobody, nobody)
    for command in (("set", "config.json", "/a", "1"), ("check",), ("kv-budget", "--gpu", "B200")):
        code, out, err = cli(command[0], kimi, *command[1:])
        assert code == 1 and "not by the folder's owner" in err, out + err
        _nothing_leaked(kimi, out, err)
    assert not (kimi / ".patcher" / "objects").exists()


def test_a_hugging_face_snapshot_link_into_blobs_is_read(tmp_path: Path) -> None:
    """The layout's own links are followed (snapshots/REV/config.json -> ../../blobs/HASH),
    and a link from a snapshot to elsewhere in the cache is not."""
    repo = tmp_path / "models--org--name"
    snapshot = repo / "snapshots" / "abc"
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    (repo / "blobs" / "h1").write_bytes(b'{"model_type": "llama"}')
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc")
    (snapshot / "config.json").symlink_to("../../blobs/h1")
    (snapshot / "generation_config.json").symlink_to("../../refs/main")
    fd = beneath.open_beneath(snapshot, "config.json", (snapshot.resolve(),))
    with os.fdopen(fd, "rb") as handle:
        assert handle.read() == b'{"model_type": "llama"}'
    with pytest.raises(PatcherError, match="leads outside"):
        beneath.open_beneath(snapshot, "generation_config.json", (snapshot.resolve(),))
