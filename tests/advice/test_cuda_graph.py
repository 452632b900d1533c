"""doctor's answer to a CUDA graph capture that failed as the engine started
(patcher/advice/cuda_graph.py): the engine's own ways out, with the releases that define them."""

from __future__ import annotations

from patcher.advice import catalogue
from patcher.advice.doctor import diagnose_text

# SGLang 0.4.9's report (cuda_graph_runner.py): a kernel refused inside the capture under
# torch.compile, the inner error first, as the chained traceback prints it
_INNER = (
    "$ python3 -m sglang.launch_server --model-path /m --tp 8 --enable-torch-compile\n"
    '  File "/env/lib/python3.10/site-packages/sglang/srt/layers/moe/topk.py", line 322, in x\n'
    "RuntimeError: CUDA error: operation not permitted when stream is capturing\n"
    "During handling of the above exception, another exception occurred:\n"
)


def test_a_kernel_refused_inside_sglangs_capture_is_its_flags_to_run_without_graphs() -> None:
    found = diagnose_text(_INNER)
    assert found.code == "cuda-graph"
    texts = [f.text for f in found.fixes]
    assert texts[0] == "--disable-cuda-graph"
    assert "leave out --enable-torch-compile" in texts
    # the batch-size flag as each release spells it, where a read release defines it
    assert "--cuda-graph-max-bs-decode 16" in texts and "--cuda-graph-max-bs 16" in texts


def test_sglangs_own_capture_report_is_read_from_its_source() -> None:
    template = next(
        t
        for t in catalogue.templates("sglang")
        if t.text == "Capture cuda graph failed: {e}\n{CUDA_GRAPH_CAPTURE_FAILED_MSG}"
    )
    assert "0.4.10" in template.releases
    found = diagnose_text(
        "[2025-07-10 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call "
        "last):\nException: Capture cuda graph failed: CUDA error: out of resources\n"
    )
    assert found.code == "cuda-graph"


def test_vllms_capture_failure_is_enforce_eager() -> None:
    found = diagnose_text(
        "INFO 05-01 10:00:00 [api_server.py:1000] vLLM API server version 0.9.2\n"
        "RuntimeError: Cannot call CUDAGeneratorImpl::current_seed during CUDA graph capture.\n"
    )
    assert [f.text for f in found.fixes] == ["--enforce-eager"]


def test_sglangs_expert_metrics_inside_a_capture_are_left_out_first() -> None:
    # SGLang 0.5.15.post1 (snapshots/engines/sglang-capture-host-read.txt): the recorder reads
    # back to the CPU after every forward pass, and EAGLE's draft captures the forward
    from tests.conftest import SNAPSHOTS

    reading = (SNAPSHOTS / "engines" / "sglang-capture-host-read.txt").read_text()
    assert "utilization_rate_gpu.item()" in reading and "with_forward_pass(" in reading
    assert "if i == self.speculative_num_steps - 1:" in reading
    refused = (
        "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing\n"
    )
    for shown in (
        "[2026-07-22 15:40:01] server_args=ServerArgs(model_path='/m', mem_fraction_static=0.8,"
        " enable_expert_distribution_metrics=True, speculative_algorithm='EAGLE',"
        " speculative_num_steps=3)\n",
        "$ python3 -m sglang.launch_server --model-path /m --speculative-algorithm EAGLE "
        "--speculative-num-steps 3 --enable-expert-distribution-metrics\n",
    ):
        found = diagnose_text(shown + refused)
        assert found.code == "cuda-graph"
        assert found.fixes[0].text.startswith("leave out --enable-expert-distribution-metrics")
        assert "--speculative-num-steps 1" in found.fixes[0].text
        assert "--disable-cuda-graph" in [f.text for f in found.fixes]
    # without speculative decoding, the flag alone; without the flag, nothing about it
    alone = diagnose_text(
        "$ python3 -m sglang.launch_server --enable-expert-distribution-metrics\n" + refused
    )
    assert alone.fixes[0].text == "leave out --enable-expert-distribution-metrics"
    plain = diagnose_text(_INNER)
    assert all("expert" not in f.text for f in plain.fixes)
