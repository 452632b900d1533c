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


def test_forget_keeps_the_only_copy_of_the_upstream_bytes(cli: Cli, kimi: Path) -> None:
    """After a forced revert kept a hand edit, .patcher/objects holds the only upstream copy:
    forget refuses (naming the file), restore --upstream puts it back, then forget goes."""
    upstream = tree_bytes(kimi)
    assert cli("apply", kimi, "strip-fp8-kv-cache")[0] == 0
    config = kimi / "config.json"
    config.write_bytes(config.read_bytes().replace(b'"kimi_k25"', b'"HAND"'))
    assert cli("revert", kimi, "--all", "--force")[0] == 0
    code, _, err = cli("forget", kimi)
    assert code == 1 and "config.json (edited)" in err and "--force" in err
    assert len(err.strip().splitlines()) == 1 and (kimi / ".patcher").is_dir()
    code, out, _ = cli("restore", kimi, "--upstream", "--dry-run")
    assert code == 0 and '-    "model_type": "HAND"' in out and b"HAND" in config.read_bytes()
    code, out, err = cli("restore", kimi, "--upstream")
    assert code == 0, err
    assert cli("status", kimi, "--check")[0] == 0
    assert cli("forget", kimi)[0] == 0
    assert tree_bytes(kimi) == upstream


def test_forget_force_drops_the_kept_bytes(cli: Cli, kimi: Path) -> None:
    assert cli("apply", kimi, "strip-fp8-kv-cache")[0] == 0
    assert cli("revert", kimi, "--all")[0] == 0
    (kimi / "config.json").unlink()
    code, _, err = cli("forget", kimi)
    assert code == 1 and "config.json (missing)" in err
    code, out, err = cli("forget", kimi, "--force")
    assert code == 0 and not (kimi / ".patcher").exists(), err


def test_forget_refuses_a_linked_journal_folder(cli: Cli, kimi: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("x")
    (kimi / ".patcher").symlink_to(elsewhere)
    code, _, err = cli("forget", kimi)
    assert code == 1 and (elsewhere / "keep").exists()


def test_restore_puts_back_what_patcher_left_over_a_hand_edit(cli: Cli, kimi: Path) -> None:
    """After a hand edit, revert and sync refuse; restore puts back the patched bytes (the
    dry run shows what it discards), and then revert returns the upstream bytes."""
    assert cli("apply", kimi, "strip-fp8-kv-cache")[0] == 0
    patched = (kimi / "config.json").read_bytes()
    (kimi / "config.json").write_bytes(patched.replace(b'"kimi_k25"', b'"HAND"'))
    code, _, err = cli("revert", kimi, "strip-fp8-kv-cache")
    assert code == 1 and f"patcher restore {kimi} config.json" in err
    code, out, _ = cli("restore", kimi, "--dry-run")
    assert code == 0 and '-    "model_type": "HAND",' in out
    assert b'"HAND"' in (kimi / "config.json").read_bytes()
    code, out, err = cli("restore", kimi)
    assert code == 0, err
    assert (kimi / "config.json").read_bytes() == patched
    assert cli("revert", kimi, "--all")[0] == 0
    assert tree_bytes(kimi) == tree_bytes(EXAMPLE)


def test_restore_brings_back_a_deleted_patched_file(cli: Cli, kimi: Path) -> None:
    assert cli("apply", kimi, "strip-fp8-kv-cache")[0] == 0
    patched = (kimi / "hf_quant_config.json").read_bytes()
    (kimi / "hf_quant_config.json").unlink()
    code, _, err = cli("restore", kimi, "hf_quant_config.json")
    assert code == 0, err
    assert (kimi / "hf_quant_config.json").read_bytes() == patched


def test_restore_refuses_a_file_patcher_never_patched(cli: Cli, kimi: Path) -> None:
    assert cli("apply", kimi, "strip-fp8-kv-cache")[0] == 0
    code, _, err = cli("restore", kimi, "tokenizer_config.json")
    assert code == 1 and "no applied transform patched this file" in err


def test_diff_and_status_see_a_hand_edit_that_revert_force_kept(cli: Cli, kimi: Path) -> None:
    assert cli("apply", kimi, "strip-fp8-kv-cache")[0] == 0
    patched = (kimi / "config.json").read_bytes()
    (kimi / "config.json").write_bytes(patched.replace(b'"kimi_k25"', b'"HAND"'))
    assert cli("revert", kimi, "strip-fp8-kv-cache", "--force")[0] == 0
    code, out, _ = cli("diff", kimi)
    assert '+    "model_type": "HAND",' in out
    code, out, _ = cli("status", kimi, "--check")
    assert code == 1 and "differs from its original" in out
    (kimi / "config.json").write_bytes((EXAMPLE / "config.json").read_bytes())
    code, out, _ = cli("status", kimi, "--check")
    assert code == 0
    assert "no differences from the upstream originals" in cli("diff", kimi)[1]


def test_diff_on_a_folder_patcher_never_touched_says_nothing_is_applied(
    cli: Cli, kimi: Path
) -> None:
    code, out, _ = cli("diff", kimi)
    assert code == 0 and out.startswith("nothing applied: patcher has no journal")
    assert f"patcher diff {kimi} --upstream" in out


def test_the_upstream_diff_suggested_pastes_for_a_path_with_a_space(cli: Cli, kimi: Path) -> None:
    spaced = kimi.parent / "my models" / "kimi"
    spaced.parent.mkdir()
    kimi.rename(spaced)
    out = cli("diff", spaced)[1]
    assert f"patcher diff '{spaced}' --upstream" in out


def test_reverting_a_stacked_entry_says_the_earlier_edit_stays(cli: Cli, kimi: Path) -> None:
    """Issue 32 item 9: not 'original bytes restored' when an earlier entry's edit stays."""
    assert cli("apply", kimi, "set-context-length", "--set", "length=65536")[0] == 0
    assert cli("apply", kimi, "set-context-length", "--set", "length=32768", "--stack")[0] == 0
    code, out, _ = cli("revert", kimi, "--last")
    assert code == 0 and "an earlier entry's edit stays" in out and "original bytes" not in out
    code, out, _ = cli("revert", kimi, "--last")
    assert code == 0 and "original bytes restored" in out
    assert tree_bytes(kimi) == tree_bytes(EXAMPLE)


@pytest.mark.parametrize("value", ["1e999", "NaN", "Infinity", "[1, -Infinity]"])
def test_set_refuses_what_would_not_be_json_in_the_file(cli: Cli, kimi: Path, value: str) -> None:
    """Python reads NaN and 1e999; a config.json holding them is not JSON: refused, one line,
    nothing written (a quoted string is taken)."""
    before = tree_bytes(kimi)
    code, _, err = cli("set", kimi, "config.json", "/x", value)
    assert code == 1 and "cannot be written as JSON" in err and len(err.strip().splitlines()) == 1
    assert tree_bytes(kimi) == before
    assert cli("set", kimi, "config.json", "/x", f'"{value}"')[0] == 0


def test_restore_upstream_puts_back_the_upstream_bytes_over_a_hand_edit(
    cli: Cli, kimi: Path
) -> None:
    """The other way out: `restore --upstream` discards the hand edit and the patch, reverting
    every entry that patched the file (the dry run names them and writes nothing)."""
    assert cli("apply", kimi, "strip-fp8-kv-cache")[0] == 0
    assert cli("apply", kimi, "set-torch-dtype", "--set", "dtype=float16")[0] == 0
    patched = (kimi / "config.json").read_bytes()
    (kimi / "config.json").write_bytes(patched.replace(b'"kimi_k25"', b'"HAND"'))
    code, out, err = cli("restore", kimi, "--upstream", "--dry-run")
    assert code == 0, err
    assert "strip-fp8-kv-cache" in out and "set-torch-dtype" in out
    assert "config.json: the bytes before this entry restored, the hand edit discarded" in out
    assert '-    "model_type": "HAND",' in out  # the diff shows what it discards
    assert b'"HAND"' in (kimi / "config.json").read_bytes()
    code, out, err = cli("restore", kimi, "--upstream", "--json")
    assert code == 0, err
    assert tree_bytes(kimi) == tree_bytes(EXAMPLE) | {
        k: v for k, v in tree_bytes(kimi).items() if k.startswith(".patcher")
    }
    code, out, _ = cli("status", kimi, "--check")
    assert code == 0, out
    assert cli("restore", kimi, "--upstream")[0] == 0  # nothing left: nothing to do


@pytest.mark.parametrize(
    "command",
    [("restore", "--dry-run"), ("restore", "--upstream", "--dry-run"), ("forget", "--dry-run")],
)
def test_a_dry_run_takes_no_lock_and_writes_nothing(
    cli: Cli, kimi: Path, command: tuple[str, ...]
) -> None:
    """A what-if writes nothing anywhere: not even the lock file and its holder note."""
    assert cli("apply", kimi, "strip-fp8-kv-cache")[0] == 0
    config = kimi / "config.json"
    config.write_bytes(config.read_bytes().replace(b'"kimi_k25"', b'"HAND"'))
    if command[0] == "forget" or "--upstream" in command:
        assert cli("revert", kimi, "--all", "--force")[0] == 0
    (kimi / ".patcher" / "lock").unlink()
    before = tree_bytes(kimi)
    code, out, err = cli(command[0], kimi, *command[1:])
    assert code in (0, 1), out + err
    assert tree_bytes(kimi) == before and not (kimi / ".patcher" / "lock").exists()
