"""A UTF-8 byte-order mark in the JSON files vLLM reads: found by check, refused by the engine
model where vLLM refuses it, removed (and put back byte for byte) by strip-bom."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patcher import api
from tests.conftest import CONFIGS, Cli, build_tree, tree_bytes
from tests.strategies import documents, render

BOM = b"\xef\xbb\xbf"


def _with_bom(root: Path, *names: str) -> None:
    for name in names:
        (root / name).write_bytes(BOM + (root / name).read_bytes())


def test_check_finds_each_mark_and_strip_bom_removes_only_those_bytes(
    cli: Cli, model_checkpoint: object
) -> None:
    root: Path = model_checkpoint("deepseek-r1-distill-qwen-32b")  # type: ignore[operator]
    _with_bom(root, "config.json", "generation_config.json")
    before = tree_bytes(root)
    code, out, _ = cli("check", root)
    assert code == 1
    assert (
        "[bom] config.json: starts with a UTF-8 byte-order mark: transformers refuses it, so "
        "vLLM and SGLang do not start" in out
    )
    assert (
        "[bom] generation_config.json: starts with a UTF-8 byte-order mark: transformers refuses "
        "it and vLLM takes that for a missing file: its sampling defaults are silently not used, "
        "and eos_token_id is config.json's" in out
    )
    assert out.count(f"fix: patcher apply {root} strip-bom") == 2
    code, out, err = cli("apply", root, "strip-bom")
    assert code == 0, err
    assert "  config.json: byte-order mark removed (3 bytes)\n" in out
    assert "  generation_config.json: byte-order mark removed (3 bytes)\n" in out
    after = tree_bytes(root)
    for name in ("config.json", "generation_config.json"):
        assert BOM + after[name] == before[name]  # type: ignore[operator]
    assert {k: v for k, v in after.items() if not k.endswith("config.json")} == {
        k: v for k, v in before.items() if not k.endswith("config.json")
    }
    code, out, _ = cli("check", root)
    assert code == 0 and "[bom]" not in out
    code, out, _ = cli("apply", root, "strip-bom")
    assert code == 0 and "already applied" in out
    code, _, err = cli("revert", root, "strip-bom")
    assert code == 0, err
    assert tree_bytes(root) == before


def test_vllm_refuses_a_marked_config_and_the_plan_strips_it(cli: Cli, kimi: Path) -> None:
    """Recorded: vLLM 0.16 and 0.33 stop at the mark. The engine model says so, and still
    derives the rest, so one plan names both fixes and a second sync has nothing to do."""
    _with_bom(kimi, "config.json")
    code, out, _ = cli("check", kimi, "--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000")
    assert code == 1
    assert (
        f"[engine-startup-error] config.json: vllm==0.16.0 refuses to start: It looks like the "
        f"config file at '{kimi}/config.json' is not a valid JSON file." in out
    )
    assert "[bom]" not in out  # the engine's own error, not the generic finding as well
    target = ("--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--tp", "8")
    code, out, _ = cli("plan", kimi, *target, "--json")
    assert code == 4
    assert [a["name"] for a in json.loads(out)["actions"]] == [
        "strip-bom",
        "strip-fp8-kv-cache",
    ]
    code, _, err = cli("sync", kimi, *target)
    assert code == 0, err
    assert not (kimi / "config.json").read_bytes().startswith(BOM)
    code, out, _ = cli("plan", kimi, *target)
    assert code == 0 and "nothing to do" in out
    code, out, _ = cli("check", kimi, "--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000")
    assert code == 0 and "starts          yes" in out


def test_a_mark_in_hf_quant_config_counts_only_where_vllm_reads_it(tmp_path: Path) -> None:
    root = tmp_path / "qwen"
    build_tree(
        root,
        {
            name: (CONFIGS / "qwen3-30b-a3b-nvfp4" / name).read_bytes()
            for name in ("config.json", "hf_quant_config.json")
        },
    )
    _with_bom(root, "hf_quant_config.json")
    view = api.check(root, engine="vllm==0.33.0").engine
    assert view is not None
    assert [e.message for e in view.startup_errors] == [
        "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)"
    ]
    # With a quantization_config in config.json, vLLM does not open hf_quant_config.json.
    config = json.loads((root / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4"}
    (root / "config.json").write_text(json.dumps(config))
    view = api.check(root, engine="vllm==0.33.0").engine
    assert view is not None
    assert "BOM" not in " ".join(e.message for e in view.startup_errors)


def test_strip_bom_stands_alone_in_its_edit(cli: Cli, tmp_path: Path) -> None:
    build_tree(tmp_path / "m", {"config.json": "{}"})
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'name = "bad"\nsummary = "s"\nwhy = "w"\nundo_when = "u"\n'
        '[[edits]]\nfile = "config.json"\n'
        'ops = [{ op = "strip-bom" }, { op = "set", path = "/a", value = 1 }]\n'
    )
    code, _, err = cli("apply", tmp_path / "m", bad)
    assert code == 1
    assert (
        "bad.toml at /edits/0/ops (JSON pointer): 'strip-bom' edits the whole file and must "
        "stand alone" in err
    )
    code, out, _ = cli("apply", tmp_path / "m", "strip-bom")
    assert code == 0 and "nothing to do" in out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents, st.data())
def test_strip_bom_round_trips_any_document(document: object, data: st.DataObject) -> None:
    import tempfile

    text = render(data, document).encode("utf-8")
    with tempfile.TemporaryDirectory() as holder:
        root = build_tree(Path(holder), {"config.json": BOM + text})
        api.apply(root, "strip-bom")
        assert (root / "config.json").read_bytes() == text
        api.revert(root, "strip-bom")
        assert (root / "config.json").read_bytes() == BOM + text


def test_the_engine_error_names_a_folder_with_parentheses_whole(cli: Cli, kimi: Path) -> None:
    root = kimi.rename(kimi.with_name("Kimi (copy)"))
    _with_bom(root, "config.json")
    code, out, _ = cli("check", root, "--engine", "vllm==0.33.0")
    assert code == 1 and f"the config file at '{root}/config.json' is not a valid JSON" in out


def test_an_eos_fix_in_a_marked_generation_config_is_refused_until_stripped(
    cli: Cli, model_checkpoint: object
) -> None:
    """vLLM takes eos_token_id from config.json when generation_config.json carries a mark
    (recorded), so fix-generation-eos-token-id would change nothing there: refused under
    --engine, warned about without; after strip-bom it applies and holds."""
    root: Path = model_checkpoint("deepseek-r1-distill-qwen-32b")  # type: ignore[operator]
    _with_bom(root, "generation_config.json")
    before = tree_bytes(root)
    fix = ("apply", root, "fix-generation-eos-token-id", "--set", "eos=[151643, 151645]")
    code, _, err = cli(*fix, "--engine", "vllm==0.16.0")
    assert code == 1 and tree_bytes(root) == before
    assert (
        "fix-generation-eos-token-id has no effect on vllm==0.16.0: eos_token_id stays 151643 "
        "there (generation_config.json starts with a byte-order mark, which transformers "
        "refuses: config.json /eos_token_id), not [151643, 151645]; nothing changed" in err
    )
    code, out, _ = cli("check", root, "--engine", "vllm==0.16.0")
    assert "  eos_token_id    151643  (generation_config.json starts with a byte-order mark" in out
    assert cli("apply", root, "strip-bom")[0] == 0
    code, _, err = cli(*fix, "--engine", "vllm==0.16.0")
    assert code == 0, err
    code, out, _ = cli("check", root, "--engine", "vllm==0.33.0", "--json")
    assert json.loads(out)["engine"]["eos_token_id"] == [151643, 151645]


def test_a_marked_tokenizer_config_is_found_stripped_and_put_back(
    cli: Cli, model_checkpoint: object
) -> None:
    """tokenizer_config.json is the file edited by hand most (its chat_template). With a mark,
    loading the tokenizer fails in vLLM 0.16.0 and 0.33.0 and SGLang 0.5.23 (recorded), so
    neither server starts: check says so, the plan strips it, revert puts it back."""
    root: Path = model_checkpoint("deepseek-r1-distill-qwen-32b")  # type: ignore[operator]
    _with_bom(root, "tokenizer_config.json")
    before = tree_bytes(root)
    code, out, _ = cli("check", root)
    assert code == 1
    assert (
        "[bom] tokenizer_config.json: starts with a UTF-8 byte-order mark: transformers' "
        "tokenizer loading refuses it, so vLLM and SGLang do not start" in out
    )
    code, out, _ = cli("check", root, "--engine", "vllm==0.33.0")
    assert code == 1 and "[bom]" not in out and "starts          no" in out
    assert (
        "[engine-startup-error] tokenizer_config.json: vllm==0.33.0 refuses to start: Unexpected "
        "UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)" in out
    )
    target = ("--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--tp", "8")
    code, out, _ = cli("plan", root, *target, "--json")
    assert code == 4 and [a["name"] for a in json.loads(out)["actions"]] == ["strip-bom"]
    assert tree_bytes(root) == before
    code, out, err = cli("sync", root, *target)
    assert code == 0, err
    after = tree_bytes(root)
    assert BOM + after["tokenizer_config.json"] == before["tokenizer_config.json"]  # type: ignore[operator]
    assert {k: v for k, v in after.items() if k != "tokenizer_config.json"} == {
        k: v for k, v in before.items() if k != "tokenizer_config.json"
    }
    code, out, _ = cli("plan", root, *target)
    assert code == 0 and "nothing to do" in out
    code, _, err = cli("revert", root, "strip-bom")
    assert code == 0, err
    assert tree_bytes(root) == before
