"""Golden tests: every built-in transform on every real config in snapshots/configs.

The expected patched bytes and RFC 6902 patch are stored in snapshots/expected/. Rewrite them
with PATCHER_UPDATE_SNAPSHOTS=1 and review the diff.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from patcher import api
from patcher.advice.check import FP8_KV_POINTERS, dig, kv_label
from patcher.errors import DoesNotApplyError
from patcher.text import jsontext
from patcher.transforms.catalog import builtin_transforms
from tests.conftest import CONFIGS, MODELS, SNAPSHOTS, tree_bytes
from tests.text.test_jsontext import pointers, unaffected

EXPECTED = SNAPSHOTS / "expected"
UPDATE = bool(os.environ.get("PATCHER_UPDATE_SNAPSHOTS"))

# Parameters for transforms that need them, as a user would pass them with --set.
GOLDEN_PARAMS: dict[str, dict[str, Any]] = {
    "add-quant-exclude-modules": {"pattern": "model.layers.61*"},
    "remove-quant-exclude-modules": {"pattern": "lm_head"},
    "set-context-length": {"length": "65536"},
    "set-torch-dtype": {"dtype": "float16"},
    "fix-generation-eos-token-id": {"eos": "[128001, 128008, 128009]"},
    "set-tokenizer-eos-token": {"token": "<|eot_id|>"},
    "set-generation-defaults": {"values": '{"temperature": 0.7, "top_p": 0.8}'},
    "set-chat-template": {
        "template": "file:{% for m in messages %}{{ m['content'] }}{% endfor %}\n"
    },
    "set-architectures": {"architecture": "LlamaForCausalLM"},
    "set-tokenizer-class": {"class": "PreTrainedTokenizerFast"},
    # Given, not defaulted: a default never rewrites DeepSeek-V3's own YaRN (factor 40).
    "set-rope-scaling-yarn": {"factor": "4.0", "original": "32768"},
}
TRANSFORMS = [t.name for t in builtin_transforms()]


def params_for(name: str, tmp_path: Path) -> dict[str, Any]:
    params = dict(GOLDEN_PARAMS.get(name, {}))
    for key, value in params.items():
        if isinstance(value, str) and value.startswith("file:"):
            path = tmp_path / key
            path.write_text(value[5:], encoding="utf-8")
            params[key] = str(path)
    return params


def assert_only_edited_members_changed(before: str, after: str, forward: list[Any]) -> None:
    edited = [op["path"] for op in forward if op["op"] != "test"]
    old = json.loads(before)
    for pointer, kind in pointers(old):
        if all(unaffected(pointer, e, kind) for e in edited):
            assert jsontext.raw_value(after, pointer) == jsontext.raw_value(before, pointer)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("name", TRANSFORMS)
def test_transform_on_real_config(name: str, model: str, tmp_path: Path) -> None:
    root = tmp_path / model
    shutil.copytree(CONFIGS / model, root)
    original = tree_bytes(root)
    expected_dir = EXPECTED / name / model
    try:
        result = api.apply(root, name, params_for(name, tmp_path))
    except DoesNotApplyError:
        assert tree_bytes(root) == original
        assert not (root / ".patcher" / "journal.json").exists() or not api.status(root).applied
        assert not expected_dir.exists(), "expected output exists but the transform refused"
        return
    if result.outcome == "nothing-to-do":
        assert tree_bytes(root) == original
        assert not expected_dir.exists(), "expected output exists but nothing changed"
        return
    assert result.outcome == "applied"
    if UPDATE:
        shutil.rmtree(expected_dir, ignore_errors=True)
        expected_dir.mkdir(parents=True)
    for plan in result.files:
        after = (root / plan.path).read_bytes()
        assert after == plan.after
        patch = json.dumps(list(plan.forward), indent=2, ensure_ascii=False) + "\n"
        if UPDATE:
            (expected_dir / plan.path).write_bytes(after)
            (expected_dir / f"{plan.path}.patch.json").write_text(patch, encoding="utf-8")
        assert after == (expected_dir / plan.path).read_bytes()
        assert patch == (expected_dir / f"{plan.path}.patch.json").read_text(encoding="utf-8")
        if plan.kind == "json":
            assert_only_edited_members_changed(
                plan.before.decode(), after.decode(), list(plan.forward)
            )
    assert sorted(
        p.name for p in expected_dir.iterdir() if not p.name.endswith(".patch.json")
    ) == sorted(p.path for p in result.files)
    api.revert(root, name)
    assert tree_bytes(root) == original


def test_strip_fp8_removes_every_kv_directive_of_kimi(kimi: Path) -> None:
    result = api.apply(kimi, "strip-fp8-kv-cache")
    edits = {
        (f.path, op["op"], op["path"], json.dumps(op.get("value")))
        for f in result.files
        for op in f.forward
        if op["op"] != "test"
    }
    # The nested ModelOpt key is nulled, not removed: vLLM's NVFP4 config requires it.
    assert edits == {
        ("config.json", "remove", "/quantization_config/kv_cache_scheme", "null"),
        ("hf_quant_config.json", "replace", "/quantization/kv_cache_quant_algo", "null"),
    }


@pytest.mark.parametrize(
    "config",
    [
        {"quantization_config": {"quant_method": "modelopt", "kv_cache_quant_algo": "FP8"}},
        {"quantization_config": {"quantization": {"kv_cache_quant_algo": "FP8"}}},
        {"text_config": {"quantization_config": {"kv_cache_scheme": {"num_bits": 8}}}},
        {
            "quantization_config": {
                "quant_method": "compressed-tensors",
                "kv_cache_scheme": {"num_bits": 8, "type": "float"},
            }
        },
    ],
    ids=["flat-modelopt", "nested", "text-config", "compressed-tensors"],
)
def test_strip_fp8_covers_every_layout(config: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(config, indent=2))
    result = api.apply(tmp_path, "strip-fp8-kv-cache")
    assert result.outcome == "applied"
    patched = json.loads((tmp_path / "config.json").read_text())
    # No directive is left: removed, or (nested ModelOpt layout) null, which vLLM requires.
    assert all(kv_label(dig(patched, keys)) == "none" for _, keys in FP8_KV_POINTERS)


def test_strip_fp8_leaves_null_alone(tmp_path: Path) -> None:
    text = '{"quantization_config": {"kv_cache_scheme": null}}'
    (tmp_path / "config.json").write_text(text)
    assert api.apply(tmp_path, "strip-fp8-kv-cache").outcome == "nothing-to-do"
    assert (tmp_path / "config.json").read_text() == text
    assert not (tmp_path / ".patcher" / "journal.json").exists()
