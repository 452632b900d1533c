"""patcher forget: the journal removed when nothing is applied."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import EXAMPLE, Cli, tree_bytes


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
