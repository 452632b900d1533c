"""Triton's refusal of an engine kernel that needs more shared memory per block than the GPU
has (patcher/advice/triton_resources.py), held to Triton's own source
(snapshots/engines/triton-out-of-resources.txt)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from patcher.advice.doctor import diagnose_text
from patcher.advice.triton_resources import SHARED_MEMORY

SNAPSHOT = Path(__file__).parents[2] / "snapshots" / "engines" / "triton-out-of-resources.txt"
SITE = "/env/lib/python3.12/site-packages"
# the refusal as Triton words it, and as vLLM's engine core quotes a worker's failure
TRITON_RESOURCE_LINES = [
    "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 147456, "
    "Hardware limit: 101376. Reducing block sizes or `num_stages` may help.",
    "RuntimeError: Worker failed with error 'out of resource: shared memory, Required: 98304, "
    "Hardware limit: 65536. Reducing block sizes or `num_stages` may help.', please check the "
    "stack trace above for the root cause",
]


def _log(kernel: str, line: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "{SITE}/{kernel}", line 420, in forward\n'
        "    _fwd_kernel[grid](\n"
        f'  File "{SITE}/triton/compiler/compiler.py", line 401, in _init_handles\n'
        '    raise OutOfResources(self.metadata.shared, max_shared, "shared memory")\n'
        f"{line}\n"
    )


def test_the_rule_reads_the_words_triton_s_source_writes() -> None:
    text = SNAPSHOT.read_text()
    template = re.search(r'return f"(out of resource: [^"]+)"', text)
    assert template is not None
    message = (
        template.group(1)
        .replace("{self.name}", "shared memory")
        .replace("{self.required}", "110592")
        .replace("{self.limit}", "101376")
    )
    found = SHARED_MEMORY.search(message)
    assert found is not None and found.groups() == ("110592", "101376")
    # the check it answers: the compiled kernel's shared memory against the device's maximum
    assert "if self.metadata.shared > max_shared:" in text
    assert "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN" in text


def test_an_attention_kernel_over_the_gpu_s_shared_memory_is_another_backend() -> None:
    found = diagnose_text(
        _log("sglang/srt/layers/attention/triton_ops/extend_attention.py", TRITON_RESOURCE_LINES[0])
    )
    assert found.code == "triton-shared-memory"
    assert [f.kind for f in found.fixes] == ["flag", "advice"]
    assert found.fixes[0].text == "--attention-backend NAME"
    assert "147456" in found.fixes[1].text and "101376" in found.fixes[1].text
    assert "extend_attention.py" in found.cause


@pytest.mark.parametrize(
    "log",
    [
        _log("vllm/model_executor/layers/fused_moe/fused_moe.py", TRITON_RESOURCE_LINES[0]),
        f"(EngineCore_DP0 pid=9) ERROR 05-06 10:00:00 [core.py:1] {TRITON_RESOURCE_LINES[1]}\n",
    ],
)
def test_another_kernel_over_the_gpu_s_shared_memory_is_no_config_fix(log: str) -> None:
    found = diagnose_text(log)
    assert found.code == "triton-shared-memory"
    (fix,) = found.fixes
    assert fix.kind == "advice" and fix.text.startswith("no config fix")


def test_a_kernel_within_the_limit_is_not_this_refusal() -> None:
    # Triton raises only where the kernel needs more than the device allows
    found = diagnose_text(
        "out of resource: shared memory, Required: 65536, Hardware limit: 101376.\n"
    )
    assert found.code != "triton-shared-memory"
