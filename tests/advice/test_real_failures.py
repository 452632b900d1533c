"""doctor on real failures users reported: the train half of the corpus, verbatim.

``snapshots/logs/real-errors-train.json`` is a copy, byte for byte, of the research notes'
``turn3/real-errors-train.json`` (2026-12): 47 reports from the vLLM, SGLang, TensorRT-LLM and
transformers trackers, each with its source, the engine and version, the excerpt as posted, the
cause and the fix. The other half was kept aside to measure the result and is not here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patcher.advice.doctor import diagnose_text

CORPUS = json.loads(
    (
        Path(__file__).resolve().parents[2] / "snapshots" / "logs" / "real-errors-train.json"
    ).read_text()
)
REPORTS = {entry["index"]: entry for entry in CORPUS}
# What doctor recognises, and the fix (a substring of one of its fixes) that the report's own
# cause and fix name.
EXPECTED = {
    2: ("forced-attention-backend", "strip-fp8-kv-cache"),
    6: ("fp8-kv-required", "--kv-cache-dtype fp8"),
    8: ("fp8-kv-backend", "--kv-cache-dtype float16"),
    12: ("fp8e4nv", "fp8_e5m2"),
    14: ("fp8-kv-unit-scales", "strip-fp8-kv-cache"),
    16: ("kv-cache-memory", "--max-model-len"),
    18: ("kv-cache-memory", "--max-model-len"),
    22: ("negative-kv-memory", "--gpu-memory-utilization 0.95"),
    24: ("kv-cache-memory", "--max-model-len 23552"),
    30: ("no-kv-cache-memory", "more GPUs"),
    32: ("max-model-len-too-long", "set-rope-scaling-yarn --set factor=4 --set original=32768"),
    34: ("max-model-len-too-long", "--max-model-len 512"),
    36: ("max-model-len-too-long", "--max-model-len 2048"),
    38: ("request-too-long", "--context-length 61709"),
    40: ("rope-scaling-fields", "transformers>=4.43"),
    42: ("rope-type-key", "upgrade TensorRT-LLM"),
    44: ("rope-type-key", '"rope_type"'),
    50: ("rope-theta-layout", "rope_theta"),
    62: ("no-chat-template", "set-chat-template"),
    64: ("tokenizer-class", '"tokenizer_class": "LlamaTokenizer"'),
    68: ("unknown-quantization", "quant_method"),
    70: ("excluded-quantized-module", "exclude_modules"),
    74: ("unsupported-quantization-format", "ModelOpt-format"),
    78: ("unsupported-architecture", "set-architectures"),
    82: ("unsupported-architecture", "set-architectures"),
    84: ("transformers-too-old", "upgrade transformers"),
    88: ("float16-refused", "--dtype bfloat16"),
    90: ("quantized-dtype", "--dtype auto"),
}
# Lines that name no failure: a success path and a warning that is not the root cause.
NOT_FAILURES = {20: "auto-fit succeeded", 46: "a transformers warning vLLM does not act on"}


def test_the_copy_is_the_corpus() -> None:
    assert len(CORPUS) == 47 and all(e["source"].startswith("https://") for e in CORPUS)


@pytest.mark.parametrize("index", sorted(EXPECTED))
def test_doctor_names_the_reported_fix_on_the_real_excerpt(index: int) -> None:
    code, fix = EXPECTED[index]
    found = diagnose_text(REPORTS[index]["error_excerpt"], checkpoint="CKPT")
    assert found.code == code
    assert any(fix in f.text for f in found.fixes), [f.text for f in found.fixes]


@pytest.mark.parametrize("index", sorted(NOT_FAILURES))
def test_doctor_does_not_call_a_warning_or_a_success_the_root_error(index: int) -> None:
    assert not diagnose_text(REPORTS[index]["error_excerpt"]).recognised


def test_a_yarn_factor_is_filled_in_from_the_log() -> None:
    found = diagnose_text(REPORTS[32]["error_excerpt"], checkpoint="CKPT")
    assert not any("=F" in f.text or "VLLM_ALLOW_LONG" in f.text for f in found.fixes)


def test_fp8e4nv_says_what_it_cannot_tell_and_gives_both_fixes() -> None:
    """The same fp8e4nv error comes from an FP8 KV cache or a block-FP8 weight kernel."""
    found = diagnose_text(REPORTS[12]["error_excerpt"])
    assert "cannot tell" in found.cause
    kinds = " ".join(f.text for f in found.fixes)
    assert "strip-fp8-kv-cache" in kinds and "weights" in kinds


def test_an_fp8_layout_that_needs_fp8_is_never_told_to_strip_it() -> None:
    found = diagnose_text(REPORTS[6]["error_excerpt"])
    assert not any("strip-fp8" in f.text for f in found.fixes)


def test_sglang_unsupported_architecture_after_an_import_error_is_not_a_config_fix() -> None:
    """The decoy: a gcc/Triton import failure hides the model class; no rename helps."""
    log = (
        "[2025-05-01 10:00:00] Ignore import error when loading sglang.srt.models.qwen3: "
        "gcc: error: unrecognized command-line option\n"
        "ValueError: Unsupported architectures: Qwen3ForCausalLM. Supported list: ['LlamaForCausalLM']\n"
    )
    found = diagnose_text(log)
    assert found.code == "unsupported-architecture" and "not a config problem" in found.cause
    assert not any("set-architectures" in f.text for f in found.fixes)
    plain = diagnose_text(log.splitlines()[1])
    assert any("set-architectures" in f.text for f in plain.fixes)


def test_the_measure_on_the_train_half() -> None:
    """28 of 47 reports get a diagnosis with the reported fix; the rest hold no engine error
    line (a title, a comment, a behaviour) or are engine bugs."""
    recognised = [e for e in CORPUS if diagnose_text(e["error_excerpt"]).recognised]
    assert len(recognised) >= len(EXPECTED)


def _fixes_of_every_case() -> list[tuple[str, object]]:
    from tests.advice.test_doctor import CASES

    found = []
    for text in [c[0] for c in CASES] + [e["error_excerpt"] for e in CORPUS]:
        found += [(text[:60], f) for f in diagnose_text(text, checkpoint="CKPT").fixes]
    return found


def test_every_flag_fix_is_flags_alone_and_every_command_names_real_parameters() -> None:
    """One truth for fixes: a flag fix holds flags only (prose goes in its note), and a
    transform fix is `patcher apply CKPT NAME [--set KEY=VALUE]...` with a catalog transform
    and its own parameter names (a placeholder value such as NAME is allowed, not a key)."""
    import re
    import shlex

    from patcher.transforms.catalog import find_transform

    flag = re.compile(r"--[a-z][a-z0-9-]*(?: (?!--)\S+)?")
    for where, fix in _fixes_of_every_case():
        assert fix.kind in ("transform", "flag", "env", "advice"), where
        if fix.kind == "flag":
            words = shlex.split(fix.text)
            assert words and words[0].startswith("--"), (where, fix.text)
            assert "(" not in fix.text.replace("'{", "").split("'")[0], (where, fix.text)
            assert flag.match(fix.text), (where, fix.text)
        if fix.kind == "transform" and fix.text.startswith("patcher apply"):
            words = shlex.split(fix.text)
            assert words[2] == "CKPT", (where, fix.text)
            transform = find_transform(words[3])
            keys = [w.split("=", 1)[0] for w in words[4:] if "=" in w]
            assert words[4::2] == ["--set"] * len(keys), (where, fix.text)
            assert set(keys) <= {p.name for p in transform.params}, (where, fix.text)
