"""patcher rebase: the applied transforms carried onto a new upstream revision."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from patcher import api
from tests.conftest import EXAMPLE, SNAPSHOTS, Cli, tree_bytes


def _new_upstream(root: Path, edit: Callable[[str], str]) -> bytes:
    """What a new upstream revision of config.json looks like: the original, edited."""
    pristine = (EXAMPLE / "config.json").read_text()
    data = edit(pristine).encode()
    (root / "config.json").write_bytes(data)
    return data


def test_rebase_onto_an_unrelated_upstream_change(cli: Cli, kimi: Path) -> None:
    cli("apply", kimi, "strip-fp8-kv-cache")
    cli("apply", kimi, "set-architectures", "--set", "architecture=DeepseekV3ForCausalLM")
    new = _new_upstream(
        kimi,
        lambda t: t.replace('"transformers_version": "4.57.1"', '"transformers_version": "4.58.0"'),
    )
    assert new != (SNAPSHOTS / "example" / "kimi-k2.5-nvfp4" / "config.json").read_bytes()
    assert {f.path: f.state for f in api.status(kimi).files}["config.json"] == "changed"
    code, out, err = cli("rebase", kimi)
    assert code == 0, err
    assert "strip-fp8-kv-cache: re-applied" in out and "set-architectures: re-applied" in out
    config = json.loads((kimi / "config.json").read_text())
    assert config["transformers_version"] == "4.58.0"
    assert "kv_cache_scheme" not in config["quantization_config"]
    assert config["architectures"] == ["DeepseekV3ForCausalLM"]
    assert {f.path: f.state for f in api.status(kimi).files}["config.json"] == "patched"
    code, _, _ = cli("revert", kimi, "--all")
    assert code == 0 and (kimi / "config.json").read_bytes() == new


def test_rebase_with_no_new_upstream_changes_nothing(cli: Cli, kimi: Path) -> None:
    """Every file as patched: rebase used to revert and re-apply every entry all the same,
    saying it had rebased onto 'new upstream files'."""
    cli("apply", kimi, "strip-fp8-kv-cache")
    before = tree_bytes(kimi)
    journal = (kimi / ".patcher" / "journal.json").read_bytes()
    code, out, err = cli("rebase", kimi)
    assert code == 0, err
    assert out.strip() == (
        f"nothing to do: every journalled file of {kimi} is as patched (no new upstream "
        "version to rebase onto)"
    )
    assert tree_bytes(kimi) == before
    assert (kimi / ".patcher" / "journal.json").read_bytes() == journal
    assert json.loads(cli("rebase", kimi, "--json")[1])["up_to_date"] is True


def test_rebase_conflict_shows_three_values_and_changes_nothing(cli: Cli, kimi: Path) -> None:
    cli("apply", kimi, "set-architectures", "--set", "architecture=DeepseekV3ForCausalLM")
    _new_upstream(
        kimi,
        lambda t: t.replace(
            '"KimiK25ForConditionalGeneration"', '"KimiK26ForConditionalGeneration"'
        ),
    )
    before = tree_bytes(kimi)
    journal = (kimi / ".patcher" / "journal.json").read_bytes()
    code, _, err = cli("rebase", kimi)
    assert code == 1 and "at /architectures (JSON pointer)" in err
    assert 'original ["KimiK25ForConditionalGeneration"]' in err
    assert 'patched ["DeepseekV3ForCausalLM"]' in err
    assert 'new upstream ["KimiK26ForConditionalGeneration"]' in err
    assert len(err.strip().splitlines()) == 1
    assert tree_bytes(kimi) == before
    assert (kimi / ".patcher" / "journal.json").read_bytes() == journal


def test_rebase_drops_a_transform_upstream_made_itself(cli: Cli, kimi: Path) -> None:
    cli("apply", kimi, "strip-fp8-kv-cache")
    cli("apply", kimi, "set-architectures", "--set", "architecture=DeepseekV3ForCausalLM")
    new = _new_upstream(
        kimi,
        lambda t: t.replace('"KimiK25ForConditionalGeneration"', '"DeepseekV3ForCausalLM"', 1),
    )
    code, out, err = cli("rebase", kimi)
    assert code == 0, err
    assert "set-architectures: no longer needed (dropped)" in out
    assert "strip-fp8-kv-cache: re-applied" in out
    assert [e.transform for e in api.status(kimi).applied] == ["strip-fp8-kv-cache"]
    cli("revert", kimi, "--all")
    assert (kimi / "config.json").read_bytes() == new
    hf_quant = SNAPSHOTS / "example" / "kimi-k2.5-nvfp4" / "hf_quant_config.json"
    assert (kimi / "hf_quant_config.json").read_bytes() == hf_quant.read_bytes()
