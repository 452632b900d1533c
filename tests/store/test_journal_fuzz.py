"""A hand-edited journal: every field given hostile values gets "journal is damaged" (or a
refusal naming the problem), exit 1, never a wrong action, never exit 3. A bounded fuzzer: each
field of an entry and of a file record, times a set of values each field must not hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Cli, tree_bytes

SHARD = "model-00001-of-00001.safetensors"

# (where, value): where is a path into the journal's JSON; "entries" the whole list.
MUTATIONS: list[tuple[tuple[Any, ...], Any]] = [
    (("entries",), ""),
    (("entries",), {}),
    (("entries",), None),
    (("entries", 0, "state"), "done"),
    (("entries", 0, "id"), "1"),
    (("entries", 0, "id"), True),
    (("entries", 0, "transform"), 7),
    (("entries", 0, "source"), None),
    (("entries", 0, "time"), []),
    (("entries", 0, "params"), []),
    (("entries", 0, "files"), {}),
    (("entries", 0, "targets"), {"config.json": 5}),
    (("entries", 0, "target"), "vllm"),
    (("entries", 0, "files", 0, "path"), "/etc/passwd"),
    (("entries", 0, "files", 0, "path"), "../outside.json"),
    (("entries", 0, "files", 0, "path"), "a" * 300),
    (("entries", 0, "files", 0, "path"), SHARD),
    (("entries", 0, "files", 0, "path"), ".patcher/journal.json"),
    (("entries", 0, "files", 0, "path"), "config.json\n"),
    (("entries", 0, "files", 0, "link"), SHARD),
    (("entries", 0, "files", 0, "link"), "config.json"),
    (("entries", 0, "files", 0, "link"), "../../../../etc/passwd"),
    (("entries", 0, "files", 0, "link"), 5),
    (("entries", 0, "files", 0, "before"), "zz"),
    (("entries", 0, "files", 0, "kind"), "binary"),
    (("entries", 0, "files", 0, "forward"), [{"op": "replace", "path": "no-slash"}]),
    (("entries", 0, "files", 0, "forward"), [{"op": "bogus", "path": "/a"}]),
    (("entries", 0, "files", 0, "inverse"), [{"op": "add", "path": "/a~9"}]),
    (("entries", 0, "files", 0, "inverse"), "x"),
    (("entries", 0, "files", 0, "before_size"), "9530"),
]
COMMANDS = [
    ("status", "--check"),
    ("diff",),
    ("revert", "--all"),
    ("restore",),
    ("restore", "--upstream"),
    ("apply", "set-torch-dtype", "--set", "dtype=float16"),
]


def _mutate(journal: dict[str, Any], where: tuple[Any, ...], value: Any) -> None:
    node: Any = journal
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value


@pytest.mark.parametrize(("where", "value"), MUTATIONS, ids=lambda v: repr(v)[:40])
def test_a_hand_edited_journal_is_damage_never_an_action(
    cli: Cli, kimi: Path, where: tuple[Any, ...], value: Any
) -> None:
    assert cli("apply", kimi, "strip-fp8-kv-cache")[0] == 0
    path = kimi / ".patcher" / "journal.json"
    journal = json.loads(path.read_bytes())
    # The record under test is config.json's (the one with a hand-editable link).
    journal["entries"][0]["files"].sort(key=lambda f: f["path"] != "config.json")
    _mutate(journal, where, value)
    path.write_text(json.dumps(journal))
    files = {k: v for k, v in tree_bytes(kimi).items() if not k.startswith(".patcher")}
    said: list[str] = []
    for command in COMMANDS:
        code, out, err = cli(command[0], kimi, *command[1:])
        said.append(err)
        assert code in (0, 1), (command, code, out, err)
        assert "Traceback" not in out + err and "unexpected error" not in err
        if code == 1:
            assert len(err.strip().splitlines()) == 1, err
        # No link made to a weight shard or a file elsewhere, no file outside read.
        for name in ("config.json", "hf_quant_config.json"):
            target = kimi / name
            assert not target.is_symlink(), (command, out, err)
        if code == 1:
            now = {k: v for k, v in tree_bytes(kimi).items() if not k.startswith(".patcher")}
            assert now == files, command
        else:
            files = {k: v for k, v in tree_bytes(kimi).items() if not k.startswith(".patcher")}
    # Each is named as damage by the first command that needs the field (the loader for
    # most; a revert for a link, which is checked against the bytes it stands for).
    assert any("journal is damaged" in e or "leads outside" in e for e in said), said
