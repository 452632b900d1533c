"""doctor on the CUDA driver refusing a call torch makes to it directly (driver_calls.py):
expandable segments off, vLLM's symmetric-memory all-reduce off where tensor parallelism may
have called it; held to torch's own wording as recorded from its source."""

from __future__ import annotations

import re
from pathlib import Path

from patcher.advice.doctor import diagnose_text

RECORDED = Path(__file__).parents[2] / "snapshots" / "engines" / "torch-driver-calls.txt"
# one line of the wording, for the rule table's test (test_doctor.py)
DRIVER_CALL_LINES = ["RuntimeError: CUDA driver error: operation not supported"]


def _log(tp: int, reason: str = "device not ready") -> str:
    return (
        "(EngineCore_DP0 pid=120) INFO 05-06 10:10:00 [core.py:77] Initializing a V1 LLM engine "
        f"(v0.20.1) with config: model='/m', tensor_parallel_size={tp}, "
        "pipeline_parallel_size=1\n"
        '(EngineCore_DP0 pid=120) ERROR 05-06 10:11:03 [core.py:843]   File "/usr/local/lib/'
        'python3.12/dist-packages/vllm/model_executor/layers/quantization/gptq_marlin.py", '
        "line 375, in process_weights_after_loading\n"
        f"(EngineCore_DP0 pid=120) ERROR 05-06 10:11:03 [core.py:843] RuntimeError: CUDA driver "
        f"error: {reason}\n"
    )


def test_one_gpu_turns_expandable_segments_off_and_nothing_else() -> None:
    found = diagnose_text(_log(1))
    assert found.code == "cuda-driver-call"
    assert [(f.kind, f.text) for f in found.fixes] == [
        ("env", "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False")
    ]
    assert "device not ready" in found.cause


def test_tensor_parallelism_adds_vllm_s_symmetric_memory_switch() -> None:
    texts = [f.text for f in diagnose_text(_log(2)).fixes]
    assert texts == [
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False",
        "VLLM_ALLREDUCE_USE_SYMM_MEM=0",
    ]
    # the switch is vLLM's: an SGLang log does not get it
    sglang = "[2026-05-06 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=2)\n"
    sglang += "RuntimeError: CUDA driver error: device not ready\n"
    assert all("VLLM_" not in f.text for f in diagnose_text(sglang).fixes)
    # nor a log of a release older than the first read that has the switch (0.11.0)
    older = "INFO 05-06 10:00:00 [api_server.py:1] vLLM API server version 0.10.2\n" + _log(2)
    assert all("VLLM_" not in f.text for f in diagnose_text(older).fixes)


def test_the_driver_out_of_memory_is_not_a_refused_call() -> None:
    assert diagnose_text(_log(1, "out of memory")).code != "cuda-driver-call"


def test_the_words_are_torch_s_own_and_its_calls_the_allocator_s() -> None:
    recorded = RECORDED.read_text()
    # both copies of the header raise the driver's words after the same prefix
    prefixes = re.findall(r'"CUDA driver error: ", err_str\)', recorded)
    assert len(prefixes) == 2
    assert diagnose_text(_log(1, "invalid argument")).code == "cuda-driver-call"
    # the calls torch loads are the virtual memory ones its expandable segments make
    for call in ("cuMemCreate", "cuMemMap", "cuMemSetAccess", "cuMemUnmap", "cuMemRelease"):
        assert f"_({call}" in recorded
    assert "VLLM_ALLREDUCE_USE_SYMM_MEM" in recorded


def test_a_worker_s_re_raised_tuple_is_read_to_the_driver_s_words() -> None:
    # vLLM's multiproc executor re-raises a worker's error inside a tuple's repr
    found = diagnose_text(
        "RuntimeError: ('Worker failed with error %s, please check the stack trace above for the "
        "root cause', 'CUDA driver error: operation not supported')"
    )
    assert found.code == "cuda-driver-call"
    assert "(operation not supported)" in found.cause
