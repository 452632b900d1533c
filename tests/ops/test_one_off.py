"""patcher set / unset (a one-off edit, journalled) and patcher forget."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT, Cli, tree_bytes

EXAMPLE = ROOT / "snapshots" / "example" / "kimi-k2.5-nvfp4"


@pytest.fixture
def kimi(tmp_path: Path) -> Path:
    copy = tmp_path / "kimi"
    shutil.copytree(EXAMPLE, copy)
    return copy


def test_set_is_an_entry_of_its_own_and_reverts_byte_for_byte(cli: Cli, kimi: Path) -> None:
    before = tree_bytes(kimi)
    code, out, err = cli(
        "set", kimi, "config.json", "/text_config/max_position_embeddings", "131072"
    )
    assert code == 0, err
    config = json.loads((kimi / "config.json").read_bytes())
    assert config["text_config"]["max_position_embeddings"] == 131072
    name = "set-config-json-text-config-max-position-embeddings"
    assert f"undo with: patcher revert {kimi} {name}" in out
    # The same member again replaces the entry; another member is an entry of its own.
    assert cli("set", kimi, "config.json", "/text_config/max_position_embeddings", "65536")[0] == 0
    assert cli("set", kimi, "config.json", "/text_config/model_type", "llama")[0] == 0
    code, out, _ = cli("status", kimi, "--json")
    applied = json.loads(out)["applied"]
    assert [a["name"] for a in applied] == [name, "set-config-json-text-config-model-type"]
    assert json.loads((kimi / "config.json").read_bytes())["text_config"]["model_type"] == "llama"
    assert cli("revert", kimi, "--all")[0] == 0
    assert tree_bytes(kimi) == before


def test_unset_removes_a_member_and_revert_puts_it_back(cli: Cli, kimi: Path) -> None:
    before = (kimi / "config.json").read_bytes()
    code, _, err = cli("unset", kimi, "config.json", "/text_config/rope_scaling")
    assert code == 0, err
    assert "rope_scaling" not in json.loads((kimi / "config.json").read_bytes())["text_config"]
    assert cli("revert", kimi, "--last")[0] == 0
    assert (kimi / "config.json").read_bytes() == before


def test_set_takes_json_values_and_plain_strings(cli: Cli, kimi: Path) -> None:
    cli("set", kimi, "config.json", "/a", '{"b": [1, null, true]}')
    cli("set", kimi, "config.json", "/c", "plain text")
    config = json.loads((kimi / "config.json").read_bytes())
    assert config["a"] == {"b": [1, None, True]} and config["c"] == "plain text"


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (("config.json", "no-slash", "1"), "is not a JSON pointer"),
        (("config.json", "", "1"), "names the whole document"),
        (("../x.json", "/a", "1"), "is not a file name"),
        (("missing.json", "/a", "1"), "missing.json"),
    ],
)
def test_a_bad_one_off_edit_is_one_line_and_writes_nothing(
    cli: Cli, kimi: Path, args: tuple[str, ...], problem: str
) -> None:
    before = tree_bytes(kimi)
    code, _, err = cli("set", kimi, *args)
    assert code == 1 and problem in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert tree_bytes(kimi) == before


def test_forget_removes_the_journal_only_when_nothing_is_applied(cli: Cli, kimi: Path) -> None:
    assert cli("apply", kimi, "strip-fp8-kv-cache")[0] == 0
    code, _, err = cli("forget", kimi)
    assert code == 1 and "still applied: strip-fp8-kv-cache (entry 1)" in err
    assert f"patcher revert {kimi} --all" in err
    assert (kimi / ".patcher").is_dir()
    assert cli("revert", kimi, "--all")[0] == 0
    code, out, _ = cli("forget", kimi, "--dry-run")
    assert code == 0 and "would remove" in out and (kimi / ".patcher").is_dir()
    code, out, _ = cli("forget", kimi)
    assert code == 0 and not (kimi / ".patcher").exists()
    assert {p.name for p in kimi.iterdir()} == {p.name for p in EXAMPLE.iterdir()}
    code, out, _ = cli("forget", kimi)
    assert code == 0 and "nothing to forget" in out


def test_forget_refuses_a_linked_journal_folder(cli: Cli, kimi: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("x")
    (kimi / ".patcher").symlink_to(elsewhere)
    code, _, err = cli("forget", kimi)
    assert code == 1 and (elsewhere / "keep").exists()
