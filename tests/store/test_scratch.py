"""A scratch copy predicts a command by running it for real on copies: the checkpoint, its
journal and its stored originals stay exactly as they were."""

from __future__ import annotations

from pathlib import Path

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
