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
