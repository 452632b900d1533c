"""patcher set / unset: a one-off edit, journalled as an entry of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Cli, tree_bytes


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
    code, out, _ = cli("set", kimi, "config.json", "/text_config/max_position_embeddings", "65536")
    assert code == 0 and "replacing entry 1" in out
    config = json.loads((kimi / "config.json").read_bytes())
    assert config["text_config"]["max_position_embeddings"] == 65536
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


@pytest.mark.parametrize("value", ["1e999", "NaN", "Infinity", "[1, -Infinity]"])
def test_set_refuses_what_would_not_be_json_in_the_file(cli: Cli, kimi: Path, value: str) -> None:
    """Python reads NaN and 1e999; a config.json holding them is not JSON: refused, one line,
    nothing written (a quoted string is taken)."""
    before = tree_bytes(kimi)
    code, _, err = cli("set", kimi, "config.json", "/x", value)
    assert code == 1 and "cannot be written as JSON" in err and len(err.strip().splitlines()) == 1
    assert tree_bytes(kimi) == before
    assert cli("set", kimi, "config.json", "/x", f'"{value}"')[0] == 0
