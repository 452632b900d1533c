"""patcher apply: a new entry, or the replacement of an entry applied otherwise."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Cli, tree_bytes


def test_an_edited_transform_file_replaces_its_entry(cli: Cli, kimi: Path, tmp_path: Path) -> None:
    """An entry is matched by its definition, not its name: a transform file edited between
    two applies is applied again (replacing its entry), never "already applied"."""
    before = tree_bytes(kimi)
    own = tmp_path / "cap.toml"
    text = (
        'name = "cap"\nsummary = "Cap the context."\nwhy = "Memory."\nundo_when = "Never."\n'
        '[[edits]]\nfile = "config.json"\n'
        'ops = [{ op = "set", path = "/text_config/max_position_embeddings", value_json = "%d" }]\n'
    )
    own.write_text(text % 131072)
    assert cli("apply", kimi, own)[0] == 0
    own.write_text(text % 65536)
    code, out, err = cli("apply", kimi, own)
    assert code == 0 and "replacing entry 1" in out, out + err
    config = json.loads((kimi / "config.json").read_bytes())
    assert config["text_config"]["max_position_embeddings"] == 65536
    code, out, _ = cli("apply", kimi, own)
    assert code == 0 and "already applied" in out
    assert cli("revert", kimi, "--all")[0] == 0
    assert tree_bytes(kimi) == before
