"""doctor's answer when speculative decoding's draft model is not one its method runs
(patcher/advice/speculative.py): the draft to give, or no speculative decoding."""

from __future__ import annotations

from patcher.advice import catalogue
from patcher.advice.doctor import diagnose_text
from tests.conftest import SNAPSHOTS


def test_a_target_loaded_as_its_own_draft_is_the_draft_path_to_give() -> None:
    # SGLang's EAGLE3 worker without --speculative-draft-model-path loads the target as the
    # draft, which lacks the draft's own methods: no words of the engine's, read by its file
    found = diagnose_text(
        "$ python -m sglang.launch_server --model-path /m --speculative-algorithm EAGLE3\n"
        "[2026-08-26 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/env/lib/python3.12/site-packages/sglang/srt/speculative/eagle_worker.py", '
        "line 150, in __init__\n"
        "    self.draft_model_runner.model.set_embed(embed)\n"
        "AttributeError: 'Qwen2ForCausalLM' object has no attribute 'set_embed'\n"
    )
    assert found.code == "speculative-draft"
    assert found.fixes[0].text == "--speculative-draft-model-path DRAFT"


def test_a_draft_workers_own_refusal_of_the_draft_is_read_from_its_source() -> None:
    template = next(
        t
        for t in catalogue.templates("sglang")
        if t.text.startswith("STANDALONE speculative decoding requires the draft model")
    )
    assert template.file.startswith("sglang/srt/speculative/")
    found = diagnose_text(
        "[2026-08-26 10:00:00 TP0] ValueError: STANDALONE speculative decoding requires the "
        "draft model to share the same vocabulary as the target model.\n"
    )
    assert found.code == "speculative-draft"
    assert any("--speculative-draft-model-path" in f.text for f in found.fixes)


KERNEL = next(
    line
    for line in (SNAPSHOTS / "engines" / "deepgemm-next-n.txt").read_text().splitlines()
    if line and not line.startswith("#")
)
# The kernel's bound, for test_doctor's marker test.
# vLLM 0.6.6's spec_decode_worker.py, raised where the draft's tensor-parallel size is not 1
DRAFT_TP = "NotImplementedError: EAGLE does not support TP > 1 yet"
SPECULATIVE_LINES = [KERNEL, DRAFT_TP]


def test_a_draft_refused_above_one_gpu_gets_its_own_tensor_parallel_size() -> None:
    found = diagnose_text(
        "INFO 12-16 05:03:00 api_server.py:1] vLLM API server version 0.6.6\n"
        '  File "/venv/lib/python3.12/site-packages/vllm/spec_decode/spec_decode_worker.py", '
        "line 182, in create_worker\n"
        f"{DRAFT_TP}\n"
    )
    assert found.code == "speculative-draft-tp"
    assert found.fixes[0].text == "--speculative-draft-tensor-parallel-size 1"
    assert not any("--tensor-parallel-size 1" == f.text for f in found.fixes)  # not the target's


def test_the_indexer_kernels_row_bound_is_one_draft_token_on_vllm() -> None:
    # next_n = 1 + num_speculative_tokens (indexer.py, the snapshot): a kernel that takes 1 or
    # 2 rows a request takes one speculative token
    found = diagnose_text(
        "(APIServer pid=1) INFO 04-25 10:00:00 [utils.py:233] non-default args: {'model': "
        "'deepseek-ai/DeepSeek-V4-Pro', 'speculative_config': {'method': 'mtp', "
        "'num_speculative_tokens': 2}}\n"
        f"(EngineCore pid=2) {KERNEL}\n"
    )
    assert found.code == "speculative-rows"
    assert found.fixes[0].text == '--speculative-config with "num_speculative_tokens": 1'
    assert "1 or 2" in found.cause


def test_the_same_bound_is_the_draft_token_count_on_sglang() -> None:
    # SGLang's next_n is speculative_num_draft_tokens (dsa_backend.py, the snapshot)
    found = diagnose_text(
        "[2026-04-25 10:00:00] server_args=ServerArgs(model_path='/m', "
        "speculative_algorithm='EAGLE', speculative_num_draft_tokens=4)\n"
        "[2026-04-25 10:00:05 TP0] Scheduler hit an exception: RuntimeError: Assertion error "
        "(/sgl-workspace/DeepGEMM/csrc/jit_kernels/impls/smxx_fp8_paged_mqa_logits.hpp:200): "
        "next_n == 1 or next_n == 2\n"
    )
    assert found.code == "speculative-rows"
    assert found.fixes[0].text == "--speculative-num-draft-tokens 2"
    assert all("num_speculative_tokens" not in f.text for f in found.fixes)
