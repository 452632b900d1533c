"""``Snapshot``: the checkpoint as one plan reads it, each file once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from patcher.ops.rebuilding import Step, plan_rebuild, upstream_bytes
from patcher.store.checkpoint import Checkpoint, open_checkpoint
from patcher.store.session import write_session
from patcher.store.snapshot import Snapshot
from patcher.transforms.catalog import find_transform


def test_a_file_is_read_once_and_the_plan_sees_those_bytes(kimi: Path) -> None:
    """Two looks at one file in one plan see the same bytes, even if it changed between."""
    snapshot = Snapshot(open_checkpoint(kimi))
    first = snapshot.read("config.json")
    (kimi / "config.json").write_bytes(b"{}")
    assert snapshot.read("config.json") == first != b"{}"
    assert Snapshot(open_checkpoint(kimi)).read("config.json") == b"{}"  # a new plan reads anew
    assert snapshot.read("no-such.json") is None


def test_held_bytes_stand_for_the_checkpoints_plain_files(kimi: Path) -> None:
    snapshot = Snapshot(open_checkpoint(kimi)).holding({"config.json": b"{}"})
    assert snapshot.read("config.json") == b"{}"
    assert snapshot.read("generation_config.json") is None
    assert snapshot.link("config.json") is None and snapshot.mtime_ns("config.json") is None
    assert snapshot.path("config.json") == kimi / "config.json"


def test_a_rebuild_reads_each_config_file_once(kimi: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """upstream_bytes and plan_rebuild on one snapshot open each file once (they read the
    same files: the upstream bytes, then what each file holds now)."""
    opened: Counter[str] = Counter()
    real_open = Checkpoint.open

    def counting(self: Checkpoint, relative: str) -> int:
        opened[relative] += 1
        return real_open(self, relative)

    monkeypatch.setattr(Checkpoint, "open", counting)
    ckpt = open_checkpoint(kimi)
    with write_session(ckpt) as session:
        snapshot = Snapshot.of(session)
        steps = [Step(find_transform("strip-fp8-kv-cache"), {})]
        rebuild = plan_rebuild(snapshot, upstream_bytes(snapshot), steps, ())
    assert rebuild.final  # it changes files
    assert opened["config.json"] == 1 and opened["hf_quant_config.json"] == 1, opened
