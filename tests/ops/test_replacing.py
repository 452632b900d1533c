"""Applying a transform again with new parameters replaces its entry; --stack adds one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patcher import api
from patcher.errors import ConflictError
from tests.conftest import Cli, tree_bytes


def _length(ckpt: Path) -> int:
    config = json.loads((ckpt / "config.json").read_bytes())
    return int(config.get("text_config", config)["max_position_embeddings"])


def test_new_parameters_replace_the_entry_and_keep_its_history(cli: Cli, kimi: Path) -> None:
    upstream = tree_bytes(kimi)
    api.apply(kimi, "strip-fp8-kv-cache")
    first = api.apply(kimi, "set-context-length", {"length": 131072})
    code, out, err = cli("apply", kimi, "set-context-length", "--set", "length=65536")
    assert code == 0, err
    assert f"replacing entry {first.entry_id}) to {kimi}" in out
    assert _length(kimi) == 65536
    status = api.status(kimi)
    assert [e.transform for e in status.applied] == ["strip-fp8-kv-cache", "set-context-length"]
    assert [dict(e.params) for e in status.applied if e.transform == "set-context-length"] == [
        {"length": 65536}
    ]
    assert first.entry_id in {e.id for e in status.reverted}  # the history is kept
    assert {f.state for f in status.files} == {"patched"}
    api.revert(kimi, every=True)
    assert tree_bytes(kimi) == upstream


def test_a_dry_run_of_a_replacement_writes_nothing(cli: Cli, kimi: Path) -> None:
    api.apply(kimi, "set-context-length", {"length": 131072})
    before = tree_bytes(kimi)
    code, out, _ = cli("apply", kimi, "set-context-length", "--set", "length=65536", "--dry-run")
    assert code == 0 and "set-context-length (replacing entry 1) would change 1 file" in out
    assert '+        "max_position_embeddings": 65536,' in out
    assert tree_bytes(kimi) == before
    assert (
        json.loads(
            cli(
                "apply", kimi, "set-context-length", "--set", "length=65536", "--dry-run", "--json"
            )[1]
        )["replaced"]
        == 1
    )


def test_stack_adds_an_entry_and_refusals_name_entry_numbers(kimi: Path) -> None:
    api.apply(kimi, "set-context-length", {"length": 131072})
    api.apply(kimi, "set-context-length", {"length": 65536}, stack=True)
    assert [e.id for e in api.status(kimi).applied] == [1, 2]
    with pytest.raises(ConflictError) as caught:
        api.revert(kimi, "#1")
    message = str(caught.value)
    assert "#1 set-context-length and the later #2 set-context-length both edit" in message
    assert message.endswith(f"next: revert #2 first: patcher revert {kimi} 2")


def test_a_hand_edit_stops_a_replacement(kimi: Path) -> None:
    api.apply(kimi, "set-context-length", {"length": 131072})
    config = kimi / "config.json"
    config.write_bytes(config.read_bytes().replace(b'"vocab_size"', b'"vocab_size" ', 1))
    before = tree_bytes(kimi)
    with pytest.raises(ConflictError) as caught:
        api.apply(kimi, "set-context-length", {"length": 65536})
    assert "changed since patched" in str(caught.value) and "--stack" in str(caught.value)
    assert tree_bytes(kimi) == before
