"""FlashInfer's prebuilt kernels without an instance for the model's head size
(patcher/advice/flashinfer_dispatch.py), held to the dispatch and build read from FlashInfer's
source (snapshots/engines/flashinfer-head-dims.txt)."""

from __future__ import annotations

from patcher.advice.doctor import diagnose_text
from patcher.advice.flashinfer_dispatch import BUILT_HEAD_DIMS
from tests.conftest import SNAPSHOTS

PLAN = (
    "BatchDecodeWithPagedKVCachePyTorchWrapper::Plan(at::Tensor, at::Tensor, unsigned int, "
    "float, at::Tensor)::<lambda()>::<lambda()>::<lambda()> failed to dispatch head_dim 96"
)
# the refusal alone, for test_doctor's marker test
FLASHINFER_DISPATCH_LINES = [f"RuntimeError: {PLAN}"]
SITE = "/usr/local/lib/python3.10/dist-packages"


def test_the_head_sizes_named_are_the_ones_the_build_instantiates() -> None:
    text = (SNAPSHOTS / "engines" / "flashinfer-head-dims.txt").read_text()
    assert 'os.environ.get("FLASHINFER_HEAD_DIMS", "64,128,256")' in text
    line = next(x for x in text.splitlines() if x.startswith("head_dims: "))
    assert tuple(int(d) for d in line.removeprefix("head_dims: ").split(",")) == BUILT_HEAD_DIMS


def test_sglangs_capture_failing_on_the_head_size_is_another_backend_not_the_graphs() -> None:
    # SGLang wraps the refusal in its CUDA graph capture's words; leaving the graphs out
    # would only move the same refusal to the first decode
    found = diagnose_text(
        "[2024-10-22 06:31:49 TP0] Capture cuda graph begin. This can take up to several "
        "minutes.\n[2024-10-22 06:31:49 TP0] Traceback (most recent call last):\n"
        f'  File "{SITE}/sglang/srt/layers/attention/flashinfer_backend.py", line 452, in '
        "call_begin_forward\n    wrapper.begin_forward(\n"
        f"Exception: Capture cuda graph failed: {PLAN}\n"
    )
    assert found.code == "flashinfer-head-dim"
    assert found.fixes[0].text == "--attention-backend triton"
    assert all("cuda-graph" not in f.text for f in found.fixes)
    assert "96" in found.cause


def test_vllms_flashinfer_backend_on_the_head_size_names_its_other_backends() -> None:
    # the backends of the log's release, read (attention_rules.another_backend), the way it
    # takes one: 0.5.5's V0 backend by VLLM_ATTENTION_BACKEND, 0.16.0's V1 by its flag
    for version, frame, expected in (
        ("0.5.5", "vllm/attention/backends/flashinfer.py", ("env", "VLLM_ATTENTION_BACKEND=")),
        ("0.16.0", "vllm/v1/attention/backends/flashinfer.py", ("flag", "--attention-backend ")),
    ):
        found = diagnose_text(
            f"INFO 06-01 10:00:00 api_server.py:1] vLLM API server version {version}\n"
            f'  File "{SITE}/{frame}", line 200, in begin_forward\n'
            f"RuntimeError: {PLAN}\n"
        )
        assert found.code == "flashinfer-head-dim"
        kind, start = expected
        assert found.fixes[0].kind == kind and found.fixes[0].text.startswith(start), version
        assert "FLASHINFER" not in found.fixes[0].text
        assert "FLASHINFER_HEAD_DIMS=96" in found.fixes[-1].text
        assert all(f.text != "--attention-backend triton" for f in found.fixes)
