"""patcher restore: a file put back as patcher left it, or as upstream shipped it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import EXAMPLE, Cli, tree_bytes


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
