"""Temporary work folders (a Hub download, an installed engine's question) and what a
rebuild refuses: nothing is left behind, and messages name the user's checkpoint."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from patcher.store.checkpoint import open_checkpoint


def _everything(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "lock"
    }


def test_a_refusal_in_a_rebuild_names_the_checkpoint(kimi: Path) -> None:
    """A rebuild compiles in memory: its refusal names the user's checkpoint file (issue 28
    item 11), and nothing is written."""
    from patcher.errors import DoesNotApplyError
    from patcher.ops.rebuilding import Step, rebuild, upstream_bytes
    from patcher.store.session import write_session
    from patcher.store.snapshot import Snapshot
    from patcher.transforms.definition import parse_transform

    ckpt = open_checkpoint(kimi)
    failing = parse_transform(
        'name = "t"\nsummary = "s"\nwhy = "w"\nundo_when = "u"\n[[edits]]\nfile = "config.json"\n'
        'ops = [{ op = "test", path = "/architectures", value = "nope" }]\n',
        "t.toml",
    )
    before = _everything(kimi)
    with pytest.raises(DoesNotApplyError) as raised, write_session(ckpt) as session:
        snapshot = Snapshot.of(session)
        rebuild(session, snapshot, upstream_bytes(snapshot), [Step(failing, {})], ())
    assert str(raised.value).startswith(f"{kimi / 'config.json'}")
    assert _everything(kimi) == before


def test_work_folders_a_killed_patcher_left_are_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kill skips the clean-up of $TMPDIR/patcher-*: the next command removes those of
    processes that are gone, and never a running one's, a link, or another name."""
    import subprocess
    import sys

    from patcher.store import work_folder

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = int(gone.stdout)
    left = [tmp_path / f"patcher-{kind}-{dead}-abc" for kind in ("scratch", "rebuild", "upstream")]
    for folder in left:
        (folder / "checkpoint").mkdir(parents=True)
        (folder / "checkpoint" / "config.json").write_text("{}")
    mine = tmp_path / f"patcher-scratch-{os.getpid()}-xyz"
    mine.mkdir()
    other = tmp_path / f"patcher-notes-{dead}-x"
    other.mkdir()
    link = tmp_path / f"patcher-rebuild-{dead}-link"
    link.symlink_to(other)
    with work_folder.work_folder("scratch") as made:
        assert Path(made).name.startswith(f"patcher-scratch-{os.getpid()}-")
    assert not any(folder.exists() for folder in left)
    assert mine.is_dir() and other.is_dir() and link.is_symlink()
