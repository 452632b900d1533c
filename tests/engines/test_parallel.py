"""check refuses a tensor-parallel size the engine cannot split the heads over, before start-up.

The rules are the engines' own (patcher/engines/parallel.py): vLLM's
``verify_with_parallel_config`` and both engines' ``QKVParallelLinear`` (attention heads
divisible by the size; KV heads divisible by it, or it by them when they are fewer).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patcher import api
from tests.conftest import build_tree


def _check(tmp_path: Path, engine: str, tp: int, **config: object) -> api.CheckReport:
    build_tree(
        tmp_path,
        {
            "config.json": json.dumps(
                {"architectures": ["LlamaForCausalLM"], "model_type": "llama", **config}
            )
        },
    )
    return api.check(tmp_path, engine=engine, tensor_parallel=tp)


@pytest.mark.parametrize("engine", ["vllm==0.34.0", "sglang==0.5.23"])
def test_heads_that_do_not_split_over_the_gpus_are_refused_with_the_sizes_that_do(
    tmp_path: Path, engine: str
) -> None:
    report = _check(tmp_path, engine, 16, num_attention_heads=40, num_key_value_heads=8)
    view = report.engine
    assert view is not None and view.verdict == "no"
    error = next(e for e in view.startup_errors if e.code == "tensor-parallel-heads")
    assert "40" in error.message and "16" in error.message
    assert error.note is not None and "1 or 2 or 4 or 8" in error.note


def test_kv_heads_that_do_not_split_are_refused(tmp_path: Path) -> None:
    view = _check(tmp_path, "vllm==0.34.0", 4, num_attention_heads=48, num_key_value_heads=6).engine
    assert view is not None and view.verdict == "no"
    error = next(e for e in view.startup_errors if e.code == "tensor-parallel-kv-heads")
    assert error.message.startswith("6 is not divisible by 4")
    assert error.note is not None and "1 or 2 or 6" not in error.note and "2" in error.note


def test_fewer_kv_heads_than_gpus_are_replicated_and_pass(tmp_path: Path) -> None:
    view = _check(
        tmp_path, "vllm==0.34.0", 16, num_attention_heads=64, num_key_value_heads=8
    ).engine
    assert view is not None
    assert not [e for e in view.startup_errors if e.code.startswith("tensor-parallel")]


def test_an_mla_model_has_no_kv_heads_to_split(tmp_path: Path) -> None:
    view = _check(
        tmp_path,
        "vllm==0.34.0",
        8,
        num_attention_heads=128,
        num_key_value_heads=3,
        kv_lora_rank=512,
    ).engine
    assert view is not None
    assert not [e for e in view.startup_errors if e.code.startswith("tensor-parallel")]


BLOCK_FP8_MOE = {
    "num_attention_heads": 64,
    "num_key_value_heads": 4,
    "moe_intermediate_size": 768,
    "num_experts": 128,
    "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]},
}


@pytest.mark.parametrize(
    ("engine", "words"),
    [
        ("vllm==0.34.0", "The output_size of gate's and up's weight = 96 is not divisible"),
        ("sglang==0.5.23", "(moe_intermediate_size=768 / moe_tp_size=8) % weight_block_size_n"),
    ],
)
def test_a_block_quantized_expert_slice_that_is_not_a_multiple_of_the_block_is_refused(
    tmp_path: Path, engine: str, words: str
) -> None:
    """768 / 8 GPUs = 96 per GPU, not a multiple of the 128 block: both engines refuse it
    before any weight loads (vLLM's validate_fp8_block_shape_moe, SGLang's
    check_quantized_moe_compatibility), in their own words; on 2 GPUs (384 each) it passes."""
    report = _check(tmp_path, engine, 8, **BLOCK_FP8_MOE)
    assert report.engine is not None and report.engine.verdict == "no"
    error = next(e for e in report.engine.startup_errors if e.code == "block-quant-slice")
    assert words in error.message and error.pointer == "/moe_intermediate_size"
    assert "expert" in (error.note or "")
    passing = _check(tmp_path, engine, 2, **BLOCK_FP8_MOE)
    assert not any(e.code == "block-quant-slice" for e in passing.engine.startup_errors)  # type: ignore[union-attr]


def test_expert_parallel_in_the_servers_flags_keeps_experts_whole(tmp_path: Path) -> None:
    """A launch with expert parallelism splits experts, not their slices: vLLM's
    --enable-expert-parallel and SGLang's --ep-size 8 start the same 8 GPUs; SGLang refuses
    an --ep-size that does not divide --tp-size."""
    from patcher.engines.engine import parse_engine
    from patcher.engines.files import read_config_files
    from patcher.engines.parallel import tensor_parallel_error
    from patcher.store.checkpoint import open_checkpoint

    build_tree(tmp_path, {"config.json": json.dumps({"model_type": "x", **BLOCK_FP8_MOE})})
    files = read_config_files(open_checkpoint(tmp_path))
    vllm, sglang = parse_engine("vllm==0.34.0"), parse_engine("sglang==0.5.23")
    assert tensor_parallel_error(vllm, files, 8) is not None
    assert tensor_parallel_error(vllm, files, 8, ["--enable-expert-parallel"]) is None
    assert tensor_parallel_error(sglang, files, 8, ["--ep-size", "8"]) is None
    refused = tensor_parallel_error(sglang, files, 8, ["--ep-size=3"])
    assert refused is not None and refused.message == "tp_size 8 must be divisible by ep_size 3"


QWEN3_NEXT_LIKE = {
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512,
    "num_experts": 512,
    "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]},
}


@pytest.mark.parametrize("engine", ["vllm==0.34.0", "sglang==0.5.23"])
def test_a_shared_expert_s_slice_is_split_by_tp_whatever_the_expert_parallelism(
    tmp_path: Path, engine: str
) -> None:
    """A shared expert is a dense MLP (its linear layers' block check, "Weight
    output_partition_size"), split by TP alone: 512 / 8 = 64 is refused with or without
    expert parallelism, and the sizes offered leave both it and the experts whole blocks."""
    from patcher.engines.engine import parse_engine
    from patcher.engines.files import read_config_files
    from patcher.engines.parallel import tensor_parallel_error
    from patcher.store.checkpoint import open_checkpoint

    build_tree(tmp_path, {"config.json": json.dumps({"model_type": "x", **QWEN3_NEXT_LIKE})})
    files = read_config_files(open_checkpoint(tmp_path))
    target = parse_engine(engine)
    ep = ["--enable-expert-parallel"] if target.name == "vllm" else ["--ep-size", "8"]
    for flags in ([], ep):
        refused = tensor_parallel_error(target, files, 8, flags)
        assert refused is not None and refused.pointer == "/shared_expert_intermediate_size"
        assert "Weight output_partition_size = 64 is not divisible" in refused.message
        assert "1 or 2 or 4" in (refused.note or "") and "does not help" in (refused.note or "")
    assert tensor_parallel_error(target, files, 4) is None


@pytest.mark.parametrize(("size", "fits"), [(29568, "1"), (29696, "1 or 2 or 4 or 8")])
def test_an_awq_mlp_slice_that_is_not_whole_groups_is_refused(
    tmp_path: Path, size: int, fits: str
) -> None:
    """AWQ's create_weights (both engines' awq.py) refuses a down projection whose slice is
    not a whole number of 128-wide groups: 29,568 splits only whole; padded to 29,696 it
    splits over 2, 4 or 8 GPUs."""
    from patcher.engines.engine import parse_engine
    from patcher.engines.files import read_config_files
    from patcher.engines.parallel import tensor_parallel_error
    from patcher.store.checkpoint import open_checkpoint

    config = {
        "model_type": "qwen2",
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "intermediate_size": size,
        "quantization_config": {"quant_method": "awq", "group_size": 128, "bits": 4},
    }
    build_tree(tmp_path, {"config.json": json.dumps(config)})
    files = read_config_files(open_checkpoint(tmp_path))
    refused = tensor_parallel_error(parse_engine("vllm==0.34.0"), files, 4)
    if fits == "1":
        assert refused is not None and refused.code == "group-quant-slice"
        assert "The input size is not aligned" in refused.message
        assert "--tensor-parallel-size 1 keeps" in (refused.note or "")
    else:
        assert refused is None
