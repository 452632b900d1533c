"""doctor's answers to vLLM's start-up memory refusals (patcher/advice/startup_memory.py) that
hold a setting against what the engine allocated."""

from __future__ import annotations

from pathlib import Path

from patcher.advice.doctor import diagnose, diagnose_text

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


_SERVER_ARGS = (
    "[2025-01-07 10:00:00] server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-V2.5', "
    "tp_size=8, mem_fraction_static=0.9, dp_size=8, enable_dp_attention={dp}, "
    "disable_radix_cache=True)\n"
)
_NO_ROOM = (
    "[2025-01-07 10:03:00 DP0 TP0] RuntimeError: Not enough memory. Please try to increase "
    "--mem-fraction-static.\n"
)


def test_data_parallel_attention_is_named_where_the_pool_has_no_room() -> None:
    """SGLang's data-parallel attention keeps a copy of the attention weights on each DP rank
    (0.4.1 builds every attention projection ReplicatedLinear, models/deepseek_v2.py): where
    the pool then has no room, dropping it is the fix, not a higher fraction (0.9 failed)."""
    with_dp = diagnose_text(_SERVER_ARGS.format(dp="True") + _NO_ROOM)
    assert with_dp.code == "sglang-memory"
    assert with_dp.fixes[0].text == "drop --enable-dp-attention"
    assert "--enable-dp-attention" in with_dp.cause
    assert not any("--mem-fraction-static" in f.text for f in with_dp.fixes)
    without = diagnose_text(_SERVER_ARGS.format(dp="False") + _NO_ROOM)
    assert not any("dp-attention" in f.text for f in without.fixes)
    # the free memory SGLang measured around the load says which fraction would do: first
    measured = diagnose_text(
        _SERVER_ARGS.format(dp="True")
        + "[2025-01-07 10:01:00 DP0 TP0] Load weight begin. avail mem=78.50 GB\n"
        + "[2025-01-07 10:02:00 DP0 TP0] Load weight end. type=DeepseekV2ForCausalLM, "
        "avail mem=10.00 GB, mem usage=68.50 GB.\n" + _NO_ROOM
    )
    assert measured.fixes[0].text.startswith("--mem-fraction-static 0.9")
    assert measured.fixes[1].text == "drop --enable-dp-attention"


def test_a_report_quoting_the_error_before_its_command_is_read_with_the_command(
    tmp_path: Path,
) -> None:
    """A report quotes the error, then the command that ran: the command's flags still say
    what the answer is, from a file as from text (never from a live pipe, read only up to
    the root error)."""
    report = (
        'Run the following command, got failure "RuntimeError: Not enough memory. Please try '
        'to increase --mem-fraction-static."\n'
        "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V2.5 "
        "--enable-dp-attention --trust-remote-code --tensor-parallel-size 8\n"
    )
    assert diagnose_text(report).fixes[0].text == "drop --enable-dp-attention"
    log = tmp_path / "report.log"
    log.write_text(report, encoding="utf-8")
    assert diagnose(log).fixes[0].text == "drop --enable-dp-attention"
    # the command far below the error is not read for it
    far = report.replace("\npython3", "\n" + "noise\n" * 60 + "python3")
    assert diagnose_text(far).fixes[0].text != "drop --enable-dp-attention"


def test_sglangs_refusal_quoted_up_to_its_first_words_is_read() -> None:
    """A report that quotes SGLang's refusal only up to "Not enough memory" (a table cell,
    a title) is the same refusal; the words inside a longer sentence are not."""
    cell = "| `0.8` | `RuntimeError: Not enough memory`; server refuses to launch |\n"
    assert diagnose_text(cell).code == "sglang-memory"
    assert diagnose_text("RuntimeError: Not enough memory\n").code == "sglang-memory"
    other = diagnose_text("RuntimeError: Not enough memory to map the file\n")
    assert other.code != "sglang-memory"
