"""doctor on FlashInfer's kernels with no image for the GPU (flashinfer_images.py): the engine's
other backend for what FlashInfer ran, a FlashInfer built for the GPU, never the engine's
"no config fix"; held to FlashInfer's own wordings as recorded from its wheel."""

from __future__ import annotations

import re
from pathlib import Path

from patcher.advice.doctor import diagnose_text
from patcher.advice.flashinfer_images import NO_IMAGE

NO_IMAGE_WORDS = "no kernel image is available for execution on the device"
# one line of each wording, for the rule table's test (test_doctor.py)
FLASHINFER_IMAGE_LINES = [
    f"RuntimeError: BatchPrefillWithPagedKVCache failed with error {NO_IMAGE_WORDS}",
    "RuntimeError: TopKRenormProb failed with error code invalid device function",
    f"CUDA Error: {NO_IMAGE_WORDS} (209) /opt/flashinfer/include/flashinfer/attention/"
    "handler.cuh: line 169 at function cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n)",
]
RECORDED = Path(__file__).parents[2] / "snapshots" / "engines" / "flashinfer-kernel-errors.txt"

SGLANG = (
    "[2024-07-20 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen2-7B', tp_size=1)\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3/site-packages/sglang/srt/model_executor/cuda_graph_runner.py", '
    "line 149, in capture_one_batch_size\n"
    '  File "/usr/lib/python3/site-packages/flashinfer/decode.py", line 514, in begin_forward\n'
    "    self._wrapper.begin_forward(\n"
    f"RuntimeError: BatchDecodeWithPagedKVCache failed with error {NO_IMAGE_WORDS}\n"
)


def _texts(log: str) -> list[str]:
    return [f.text for f in diagnose_text(log).fixes]


def test_under_sglang_its_triton_attention_and_pytorch_sampling_as_flags() -> None:
    found = diagnose_text(SGLANG)
    assert found.code == "flashinfer-image"
    assert "FlashInfer's gap, not the engine's" in found.cause
    assert [f.text for f in found.fixes if f.kind == "flag"] == [
        "--attention-backend triton",
        "--sampling-backend pytorch",
    ]
    assert all("VLLM_" not in f.text for f in found.fixes)
    assert any("a FlashInfer with kernels for this GPU" in f.text for f in found.fixes)
    assert "no config fix" not in " ".join(_texts(SGLANG))


def test_a_sampling_kernel_under_vllm_switches_off_its_flashinfer_sampler_first() -> None:
    log = (
        "(APIServer pid=1) INFO 10-28 23:00:00 [api_server.py:1839] vLLM API server version "
        "0.11.0\n"
        "(EngineCore_DP0 pid=54) ERROR 10-28 23:01:07 [core.py:708] RuntimeError: "
        f"TopKRenormProb failed with error code {NO_IMAGE_WORDS}\n"
    )
    found = diagnose_text(log)
    assert found.code == "flashinfer-image"
    assert found.fixes[0].kind == "env"
    assert found.fixes[0].text == "VLLM_USE_FLASHINFER_SAMPLER=0"
    assert all("--sampling-backend" not in f.text for f in found.fixes)  # SGLang's flag


def test_the_header_s_wording_with_no_engine_named_gives_both_engines_as_advice() -> None:
    log = (
        f"CUDA Error: {NO_IMAGE_WORDS} (209) /tmp/build/flashinfer-0.1.4+cu121torch2.4/include/"
        "flashinfer/attention/handler.cuh: line 169 at function "
        "cudaOccupancyMaxActiveBlocksPerMultiprocessor(&num_blocks_per_sm, kernel)\n"
    )
    found = diagnose_text(log)
    assert found.code == "flashinfer-image"
    assert found.cause.startswith("FlashInfer 0.1.4 has no kernel built for this GPU")
    assert all(f.kind == "advice" for f in found.fixes)  # no flag of an engine not shown
    texts = [f.text for f in found.fixes]
    assert "SGLang: --attention-backend triton" in texts
    assert any(t.startswith("vLLM: ") for t in texts)
    assert any("--disable-flashinfer --disable-flashinfer-sampling" in t for t in texts)


def test_a_gpu_older_than_sm75_gets_no_flashinfer_build_only_the_other_backends() -> None:
    found = diagnose_text("Tesla V100-SXM2-32GB compute capability 7.0\n" + SGLANG)
    assert found.code == "flashinfer-image"
    assert "nothing older than sm75" in found.cause
    assert "compute capability 7.0" in found.cause
    assert all("a FlashInfer with kernels" not in f.text for f in found.fixes)
    assert "--attention-backend triton" in [f.text for f in found.fixes]


def test_the_engine_s_own_kernels_and_flashinfer_s_norms_are_not_this() -> None:
    own = diagnose_text(
        f"vLLM API server version 0.8.5\nRuntimeError: CUDA error: {NO_IMAGE_WORDS}\n"
    )
    assert own.code != "flashinfer-image"
    norm = diagnose_text(
        SGLANG.replace(
            "BatchDecodeWithPagedKVCache failed with error", "RMSNorm failed with error code"
        )
    )
    assert norm.code != "flashinfer-image"  # no backend flag replaces FlashInfer's norm


def test_every_recorded_attention_and_sampling_wording_is_read() -> None:
    recorded = RECORDED.read_text()
    assert 'std::cerr << "CUDA Error: " << cudaGetErrorString(e) << " (" << e << ") "' in recorded
    assert '<< ": line " << __LINE__ << " at function "' in recorded
    worded = re.findall(r'"(\w+) (failed with error(?: code)?:? )"', recorded)
    assert len(worded) >= 20
    for kernel, words in worded:
        line = f"RuntimeError: {kernel} {words}{NO_IMAGE_WORDS}"
        assert NO_IMAGE.search(line), line


def test_the_old_sglang_flags_are_offered_only_as_older_than_the_refusing_release() -> None:
    refused = (RECORDED.parent / "sglang-disable-flashinfer.txt").read_text()
    assert (
        "'--disable-flashinfer' is deprecated. Please use '--attention-backend triton'" in refused
    )
    assert "raise ValueError(self.help)" in refused  # 0.4.0 refuses, not only warns
    old = [f for f in diagnose_text(SGLANG).fixes if "--disable-flashinfer" in f.text]
    assert len(old) == 1 and old[0].kind == "advice"
    assert "older than the releases read" in old[0].text and "0.4.0 refuses" in (old[0].note or "")
