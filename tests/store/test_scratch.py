"""A scratch copy predicts a command by running it for real on copies: the checkpoint, its
journal and its stored originals stay exactly as they were."""

from __future__ import annotations

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
