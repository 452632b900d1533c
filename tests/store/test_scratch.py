"""A scratch copy predicts a command by running it for real on copies: the checkpoint, its
journal and its stored originals stay exactly as they were."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from patcher import api
from patcher.store.checkpoint import open_checkpoint
from patcher.store.scratch import scratch_copy


def _everything(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "lock"
    }


def test_a_run_in_the_scratch_copy_leaves_the_checkpoint_and_its_objects_alone(
    kimi: Path,
) -> None:
    api.apply(kimi, "strip-fp8-kv-cache")
    before = _everything(kimi)
    objects = kimi / ".patcher" / "objects"
    with scratch_copy(open_checkpoint(kimi)) as copy:
        copied = copy / ".patcher" / "objects"
        assert {p.name: p.read_bytes() for p in copied.iterdir()} == {
            p.name: p.read_bytes() for p in objects.iterdir()
        }
        api.revert(copy, every=True)
        api.apply(copy, "set-torch-dtype", {"dtype": "float16"})
        api.apply(copy, "strip-fp8-kv-cache")
    assert _everything(kimi) == before


def test_a_refusal_in_a_scratch_copy_names_the_checkpoint_not_the_copy(kimi: Path) -> None:
    """A message names the user's checkpoint, never an internal folder that is gone once the
    message is out (issue 28 item 11): in a scratch copy, and in a rebuild's scratch folder."""
    from patcher.errors import DoesNotApplyError
    from patcher.ops.rebuilding import Step, rebuild, upstream_bytes
    from patcher.store.checkpoint import open_checkpoint
    from patcher.store.scratch import scratch_copy
    from patcher.store.session import write_session
    from patcher.transforms.definition import parse_transform

    ckpt = open_checkpoint(kimi)
    with pytest.raises(DoesNotApplyError) as raised, scratch_copy(ckpt) as copy:
        raise DoesNotApplyError("no", file=copy / "config.json", hint=f"patcher status {copy}")
    assert "patcher-scratch" not in str(raised.value)
    assert f"{kimi / 'config.json'}: no; next: patcher status {kimi}" == str(raised.value)

    failing = parse_transform(
        'name = "t"\nsummary = "s"\nwhy = "w"\nundo_when = "u"\n[[edits]]\nfile = "config.json"\n'
        'ops = [{ op = "test", path = "/architectures", value = "nope" }]\n',
        "t.toml",
    )
    with pytest.raises(DoesNotApplyError) as raised, write_session(ckpt) as session:
        rebuild(session, upstream_bytes(session), [Step(failing, {})], ())
    assert "patcher-rebuild" not in str(raised.value) and str(kimi) in str(raised.value)


def test_work_folders_a_killed_patcher_left_are_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kill skips the clean-up of $TMPDIR/patcher-*: the next command removes those of
    processes that are gone, and never a running one's, a link, or another name."""
    import subprocess
    import sys

    from patcher.store import scratch

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
    with scratch.work_folder("scratch") as made:
        assert Path(made).name.startswith(f"patcher-scratch-{os.getpid()}-")
    assert not any(folder.exists() for folder in left)
    assert mine.is_dir() and other.is_dir() and link.is_symlink()
