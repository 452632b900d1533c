"""``Snapshot``: the checkpoint as one plan reads it, each file once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from patcher.engines.engine import parse_engine
from patcher.ops.rebuilding import Step, plan_rebuild, upstream_bytes
from patcher.store.checkpoint import Checkpoint, open_checkpoint
from patcher.store.session import write_session
from patcher.store.snapshot import Snapshot
from patcher.transforms.catalog import find_transform
from tests.conftest import Cli


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


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each checkpoint file is opened (``Checkpoint.open``) from here on."""
    counts: Counter[str] = Counter()
    real_open = Checkpoint.open

    def counting(self: Checkpoint, relative: str) -> int:
        counts[relative] += 1
        return real_open(self, relative)

    monkeypatch.setattr(Checkpoint, "open", counting)
    return counts


@pytest.mark.parametrize("judged", [False, True], ids=["plain", "judged"])
def test_a_rebuild_reads_each_config_file_once(
    kimi: Path, opened: Counter[str], judged: bool
) -> None:
    """upstream_bytes and plan_rebuild on one snapshot open each file once (they read the
    same files: the upstream bytes, then what each file holds now). A step judged by an
    engine (as sync's are) is judged on those bytes too, not on a second read of the disk."""
    ckpt = open_checkpoint(kimi)
    with write_session(ckpt) as session:
        snapshot = Snapshot.of(session)
        judge = parse_engine("vllm==0.16.0") if judged else None
        steps = [Step(find_transform("strip-fp8-kv-cache"), {}, judge=judge)]
        rebuild = plan_rebuild(snapshot, upstream_bytes(snapshot), steps, ())
    assert rebuild.final  # it changes files
    assert opened["config.json"] == 1 and opened["hf_quant_config.json"] == 1, opened


def test_a_sync_judges_and_launches_on_the_files_it_read_under_the_lock(
    kimi: Path, cli: Cli, opened: Counter[str]
) -> None:
    """sync plans, judges its steps and works out the launch on one snapshot taken under the
    lock: each config file it edits is opened three times in all (a look without the lock,
    which finds work to do; the plan under the lock; commit's check that the file still holds
    the bytes planned on), where it was opened ten times before. The dry run opens it once."""
    target = ("--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--tp", "8")
    code, out, err = cli("sync", kimi, *target, "--dry-run")
    assert code == 0, err
    assert opened["config.json"] == 1 and opened["hf_quant_config.json"] == 1, opened
    (kimi / ".patcher").mkdir()  # a checkpoint patcher wrote to: sync plans once, locked
    opened.clear()
    code, out, err = cli("sync", kimi, *target)
    assert code == 0 and "strip-fp8-kv-cache" in out, err
    assert opened["config.json"] == 3 and opened["hf_quant_config.json"] == 3, opened
