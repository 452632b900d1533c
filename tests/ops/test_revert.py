"""patcher revert: byte for byte alone, under later entries, forced, through links."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patcher import api
from patcher.errors import ConflictError
from tests.conftest import EXAMPLE, Cli, build_tree, tree_bytes


def setter(tmp_path: Path, name: str, pointer: str, value: object) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\nsummary = "s"\nwhy = "w"\nundo_when = "u"\n'
        f'[[edits]]\nfile = "config.json"\n'
        f'ops = [{{ op = "set", path = "{pointer}", value = {json.dumps(value)} }}]\n'
    )
    return path


def test_overlapping_later_transform_blocks_reverting_the_earlier(
    kimi: Path, tmp_path: Path
) -> None:
    cap = setter(tmp_path, "cap", "/text_config/max_position_embeddings", 131072)
    smaller = setter(tmp_path, "smaller", "/text_config/max_position_embeddings", 65536)
    api.apply(kimi, cap)
    api.apply(kimi, smaller)
    before = tree_bytes(kimi)
    with pytest.raises(ConflictError) as caught:
        api.revert(kimi, "cap")
    message = str(caught.value)
    assert (
        "#1 cap and the later #2 smaller both edit /text_config/max_position_embeddings" in message
    )
    assert f"next: revert #2 first: patcher revert {kimi} 2" in message
    assert tree_bytes(kimi) == before


def test_revert_earlier_keeps_later_and_both_end_byte_identical(kimi: Path, tmp_path: Path) -> None:
    original = tree_bytes(kimi)
    cap = setter(tmp_path, "cap", "/text_config/max_position_embeddings", 131072)
    api.apply(kimi, "strip-fp8-kv-cache")
    api.apply(kimi, cap)
    result = api.revert(kimi, "strip-fp8-kv-cache")
    assert {f.path: f.how for f in result.entries[0].files} == {
        "config.json": "inverse",
        "hf_quant_config.json": "original",
    }
    config = json.loads((kimi / "config.json").read_text())
    assert config["quantization_config"]["kv_cache_scheme"]["num_bits"] == 8
    assert config["text_config"]["max_position_embeddings"] == 131072
    status = api.status(kimi)
    assert [e.transform for e in status.applied] == ["cap"]
    assert {f.path: f.state for f in status.files}["config.json"] == "patched"
    api.revert(kimi, "cap")
    assert tree_bytes(kimi) == original


def test_reverting_under_later_entries_leaves_them_as_recorded(
    cli: Cli, kimi: Path, tmp_path: Path
) -> None:
    """The later entries' records follow the revert underneath them (their bytes before and
    after, sizes included): no hand edit is reported, status --check passes, sync is not
    blocked, and reverting the rest ends on the upstream bytes."""
    original = tree_bytes(kimi)
    assert cli("apply", kimi, "strip-fp8-kv-cache")[0] == 0
    assert (
        cli("apply", kimi, setter(tmp_path, "short", "/text_config/max_position_embeddings", 8))[0]
        == 0
    )
    assert cli("apply", kimi, setter(tmp_path, "dtype", "/dtype", "float16"))[0] == 0
    code, out, _ = cli("revert", kimi, "strip-fp8-kv-cache")
    assert code == 0 and "later transforms kept" in out
    code, out, _ = cli("status", kimi, "--check", "--json")
    assert code == 0, out
    assert {f["path"]: f["state"] for f in json.loads(out)["files"]}["config.json"] == "patched"
    assert cli("revert", kimi, "short")[0] == 0
    assert cli("status", kimi, "--check")[0] == 0
    assert cli("revert", kimi, "--all")[0] == 0
    assert tree_bytes(kimi) == original


def test_force_reports_what_it_could_not_restore(cli: Cli, kimi: Path) -> None:
    cli("apply", kimi, "strip-fp8-kv-cache")
    config = kimi / "config.json"
    data = json.loads(config.read_text())
    data["quantization_config"]["kv_cache_scheme"] = "mine"
    config.write_text(json.dumps(data, indent=4))
    code, out, _ = cli("revert", kimi, "--all", "--force", "--json")
    assert code == 0
    files = {f["path"]: f for f in json.loads(out)["reverted"][0]["files"]}
    assert files["config.json"]["how"] == "forced"
    assert files["config.json"]["not_restored"] == [
        {
            "op": "add",
            "path": "/quantization_config/kv_cache_scheme",
            "value": {"dynamic": False, "num_bits": 8, "type": "float"},
            "x-raw": '{\n            "dynamic": false,\n            "num_bits": 8,\n'
            '            "type": "float"\n        }',
        }
    ]
    assert files["hf_quant_config.json"]["how"] == "original"
    assert json.loads(config.read_text())["quantization_config"]["kv_cache_scheme"] == "mine"


def test_symlinked_file_is_replaced_not_written_through(tmp_path: Path) -> None:
    blob_text = '{\n  "quantization": {"kv_cache_quant_algo": "FP8", "quant_algo": "NVFP4"}\n}'
    repo = tmp_path / "models--org--name"
    build_tree(repo, {"blobs/abc123": blob_text, "snapshots/rev1/config.json": "{}"})
    snapshot = repo / "snapshots" / "rev1"
    (snapshot / "hf_quant_config.json").symlink_to("../../blobs/abc123")
    api.apply(snapshot, "strip-fp8-kv-cache")
    link = snapshot / "hf_quant_config.json"
    assert not link.is_symlink() and '"kv_cache_quant_algo": null' in link.read_text()
    assert (repo / "blobs" / "abc123").read_text() == blob_text
    api.revert(snapshot, "strip-fp8-kv-cache")
    assert link.is_symlink() and str(link.readlink()) == "../../blobs/abc123"


def test_deeply_nested_edit_round_trips(tmp_path: Path) -> None:
    depth = 60
    text = '{"a": ' * depth + '{"kv_cache_quant_algo": "FP8", "x": 1e30}' + "}" * depth
    (tmp_path / "config.json").write_text(text)
    pointer = "/a" * depth + "/kv_cache_quant_algo"
    fix = tmp_path / "deep.toml"
    fix.write_text(
        'name = "deep"\nsummary = "s"\nwhy = "w"\nundo_when = "u"\n'
        f'[[edits]]\nfile = "config.json"\nops = [{{ op = "remove", path = "{pointer}" }}]\n'
    )
    api.apply(tmp_path, fix)
    assert (tmp_path / "config.json").read_text() == text.replace(
        '"kv_cache_quant_algo": "FP8", ', ""
    )
    api.revert(tmp_path, "deep")
    assert (tmp_path / "config.json").read_text() == text


def test_reverting_a_stacked_entry_says_the_earlier_edit_stays(cli: Cli, kimi: Path) -> None:
    """Issue 32 item 9: not 'original bytes restored' when an earlier entry's edit stays."""
    assert cli("apply", kimi, "set-context-length", "--set", "length=65536")[0] == 0
    assert cli("apply", kimi, "set-context-length", "--set", "length=32768", "--stack")[0] == 0
    code, out, _ = cli("revert", kimi, "--last")
    assert code == 0 and "an earlier entry's edit stays" in out and "original bytes" not in out
    code, out, _ = cli("revert", kimi, "--last")
    assert code == 0 and "original bytes restored" in out
    assert tree_bytes(kimi) == tree_bytes(EXAMPLE)
