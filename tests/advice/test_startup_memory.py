"""doctor's answers to vLLM's start-up memory refusals (patcher/advice/startup_memory.py) that
hold a setting against what the engine allocated."""

from __future__ import annotations

from pathlib import Path

from patcher.advice.doctor import diagnose_text

RECORDED = Path(__file__).parents[2] / "snapshots" / "engines" / "vllm-mamba-blocks.txt"


def test_a_setting_above_the_blocks_available_is_set_to_them() -> None:
    # a hybrid model: each running sequence holds one Mamba state block
    found = diagnose_text(
        "(APIServer pid=1) INFO 09-03 10:00:00 [api_server.py:1000] vLLM API server version "
        "0.28.0\n"
        "(EngineCore_DP0 pid=80) ERROR 09-03 10:05:00 [core.py:1029] ValueError: max_num_seqs "
        "(256) exceeds available Mamba cache blocks (161).\n"
    )
    assert found.fixes[0].text == "--max-num-seqs 161"
    # a name no release read takes as a flag is no flag to offer
    other = diagnose_text(
        "ValueError: frobnicate_count (256) exceeds available Mamba cache blocks (161).\n"
    )
    assert all(not f.text.startswith("--frobnicate") for f in other.fixes)


def test_the_blocks_the_pool_got_are_not_grown_by_a_shorter_context() -> None:
    """vLLM's Mamba check (config/compilation.py) holds max_num_seqs against the KV pool's
    blocks, the pool's memory over its page: a shorter context does not add any, so no
    --max-model-len is offered; a larger share is, as the message's own alternative, with no
    value guessed (the PR that met it found 0.95 still too few for one checkpoint)."""
    log = (
        "ValueError: max_num_seqs (1024) exceeds available Mamba cache blocks (939).\n"
        "Each decode sequence requires one Mamba cache block, so CUDA graph capture cannot\n"
        "proceed. Please lower max_num_seqs to at most 939 or increase gpu_memory_utilization.\n"
    )
    found = diagnose_text(log)
    texts = [f.text for f in found.fixes]
    assert texts[0] == "--max-num-seqs 939"
    assert not any(t.startswith("--max-model-len") for t in texts)
    assert "--gpu-memory-utilization N" in texts and "--gpu-memory-utilization 0.95" not in texts
    # the reading: the check is against the pool's blocks, its memory over page and layers
    recorded = RECORDED.read_text()
    assert "max_num_reqs > kv_cache_config.num_blocks" in recorded
    assert "num_blocks = int(available_memory // page_size // num_layers)" in recorded
