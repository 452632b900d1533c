"""doctor's answers to vLLM's start-up memory refusals (patcher/advice/startup_memory.py) that
hold a setting against what the engine allocated."""

from __future__ import annotations

from patcher.advice.doctor import diagnose_text


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
