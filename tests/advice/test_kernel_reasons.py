"""doctor on vLLM's "Failed to find a kernel that can implement the X linear layer. Reasons:"
(patcher/advice/kernel_reasons.py): the reasons on the lines after it, read against the
kernels' own refusals (snapshots/engines/kernel-reasons-vllm.txt)."""

from __future__ import annotations

import re

import pytest

from patcher.advice.doctor import diagnose_text
from tests.conftest import SNAPSHOTS

READING = (SNAPSHOTS / "engines" / "kernel-reasons-vllm.txt").read_text()
HEAD = "Failed to find a kernel that can implement the WNA16 linear layer. Reasons: "


def _read(text: str) -> str:
    """The reading's line holding ``text``, as the template it records."""
    line = next(line for line in READING.splitlines() if text in line)
    return line.split("  ", 1)[1].strip().strip("'\"")


def _filled(template: str, **values: int) -> str:
    """A template with its fields written as a release prints them."""
    for name, value in values.items():
        template = re.sub(r"\{[^}]*" + name + r"[^}]*\}", str(value), template, flags=re.I)
    return template


def _v0(reasons: list[str], *, dtype: str = "auto", tp: int = 2) -> str:
    """A V0 log (0.6 to 0.10): the engine's error lines, each reason on its own."""
    prefix = "ERROR 12-11 21:46:49 engine.py:366] "
    return "\n".join(
        [
            f"INFO 12-11 21:46:00 api_server.py:586] args: Namespace(model='/m', dtype='{dtype}', "
            f"tensor_parallel_size={tp})",
            "INFO 12-11 21:46:00 llm_engine.py:234] Initializing an LLM engine (v0.6.4.post1) "
            f"with config: model='/m', dtype=torch.bfloat16, tensor_parallel_size={tp}, "
            "quantization=compressed-tensors",
            prefix + HEAD,
            *(prefix + " " + r for r in reasons),
            prefix + "Traceback (most recent call last):",
            prefix + '  File "/venv/lib/python3.10/site-packages/vllm/engine/multiprocessing/'
            'engine.py", line 357, in run_mp_engine',
        ]
    )


def _v1(reasons: list[str]) -> str:
    """A V1 log (0.11 on): the ValueError at the end of the engine core's traceback."""
    prefix = "(EngineCore_DP0 pid=24294) "
    return "\n".join(
        [
            prefix + '  File "/venv/lib/python3.12/site-packages/vllm/model_executor/layers/'
            'quantization/kernels/mixed_precision/__init__.py", line 90, in '
            "choose_mp_linear_kernel",
            prefix + "    raise ValueError(",
            prefix + "ValueError: " + HEAD.rstrip(),
            *(prefix + " " + r for r in reasons),
            "[rank0]:[W821 07:50:51.123] ProcessGroupNCCL.cpp:1496] destroy_process_group()",
        ]
    )


def test_the_reading_holds_both_settings_a_reason_names() -> None:
    # read from the wheels: the two refusals a setting of the command answers
    assert _read("Exllama only supports float16 activations")
    assert "Consider reducing tensor_parallel_size" in _read("min_thread_k")


def test_exllama_s_float16_reason_is_the_dtype_flag_not_a_hardware_gap() -> None:
    exllama = "ExllamaLinearKernel cannot implement due to: " + _read("Exllama only supports")
    machete = "MacheteLinearKernel requires capability 90, current compute capability is 80"
    for log in (_v0([machete, exllama]), _v1([machete, exllama])):
        found = diagnose_text(log)
        assert found.code == "kernel-reasons"
        assert found.fixes[0].text == "--dtype float16"
        assert "no config fix" not in found.cause


def test_marlin_s_shard_reason_is_a_smaller_tensor_parallel_size_that_divides() -> None:
    # 14784 on each of 2 ranks is 29568 whole; one rank takes all of it, a multiple of 128
    marlin = "MarlinLinearKernel cannot implement due to: " + _filled(
        _read("min_thread_k"), input_size_per_partition=14784, MIN_THREAD_K=128
    )
    found = diagnose_text(_v0([marlin], tp=2))
    assert found.code == "kernel-reasons"
    assert [f.text for f in found.fixes] == ["--tensor-parallel-size 1"]
    # a size whose shard never divides is not offered: the advice says what would
    found = diagnose_text(_v0([marlin.replace("14784", "14785")], tp=2))
    assert found.fixes[0].kind == "advice"


def test_a_run_forced_to_float16_is_not_told_to_use_float16() -> None:
    exllama = "ExllamaLinearKernel cannot implement due to: " + _read("Exllama only supports")
    found = diagnose_text(_v0([exllama], dtype="float16"))
    assert found.code != "kernel-reasons"  # no setting left: the answer to the first line


@pytest.mark.parametrize(
    "reason",
    [
        "MacheteLinearKernel requires capability 90, current compute capability is 75",
        "MarlinLinearKernel cannot implement due to: Marlin only supported on CUDA",
    ],
)
def test_reasons_that_are_the_gpu_keep_the_hardware_answer(reason: str) -> None:
    found = diagnose_text(_v1([reason]))
    assert found.code != "kernel-reasons"
    assert all(f.kind != "flag" for f in found.fixes)


def test_a_log_that_ends_after_the_reasons_is_answered() -> None:
    exllama = "ExllamaLinearKernel cannot implement due to: " + _read("Exllama only supports")
    log = "(EngineCore_DP0 pid=1) ValueError: " + HEAD + "\n(EngineCore_DP0 pid=1)  " + exllama
    assert diagnose_text(log).code == "kernel-reasons"
