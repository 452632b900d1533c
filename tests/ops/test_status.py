"""patcher status: the state of every journalled file."""

from __future__ import annotations

from pathlib import Path

from patcher import api
from tests.conftest import EXAMPLE, Cli


def test_file_states(kimi: Path) -> None:
    original_config = (kimi / "config.json").read_bytes()
    api.apply(kimi, "strip-fp8-kv-cache")
    (kimi / "config.json").write_bytes(original_config)  # as a re-download would
    (kimi / "hf_quant_config.json").unlink()
    states = {f.path: f.state for f in api.status(kimi).files}
    assert states == {"config.json": "original", "hf_quant_config.json": "missing"}
    (kimi / "config.json").write_text("{}")
    assert {f.path: f.state for f in api.status(kimi).files}["config.json"] == "changed"


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
