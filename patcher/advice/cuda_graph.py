"""doctor's answer to a CUDA graph capture that failed as the engine started: the engine's own
ways out, read from its source per release. SGLang's cuda_graph_runner.py raises "Capture cuda
graph failed: {e}" with its ``CUDA_GRAPH_CAPTURE_FAILED_MSG`` (a smaller
``--cuda-graph-max-bs``, no ``--enable-torch-compile``, ``--disable-cuda-graph``); the flags
are looked up in the flags each release's parser defines (0.5.14 adds
``--cuda-graph-max-bs-decode``; 0.5.20 is the last with ``--cuda-graph-max-bs``). vLLM runs
without CUDA graphs with ``--enforce-eager`` (every release read).

A capture refuses a read back to the CPU. SGLang's ``--enable-expert-distribution-metrics``
makes its recorder read the experts' utilisation back (``.item()``, in
``eplb/expert_distribution.py``'s ``_append_utilization_rate``) at the end of every model
forward pass (``ModelRunner.forward`` wraps every pass in the recorder), and EAGLE's
multi-step draft runs that forward inside its capture for every step but the last
(``eagle_worker_v2.draft_forward`` stops before the last step's forward), so the flag and
``--speculative-num-steps`` above 1 refuse the draft's capture (SGLang 0.5.15.post1;
snapshots/engines/sglang-capture-host-read.txt)."""

from __future__ import annotations

import re

from patcher.advice.catalogue import Matched, read_span
from patcher.advice.log_rules import Fix, LogContext

# A kernel refused inside a capture (CUDA's own words, and PyTorch's), or the engine's report.
CAPTURE = re.compile(
    r"stream is capturing|during CUDA graph capture|Capture cuda graph failed|"
    r"cudaErrorStreamCapture\w*|graph capture (?:failed|is not supported)",
    re.IGNORECASE,
)


def _releases(flag: str) -> str | None:
    """The SGLang releases read whose parser defines ``flag``, as words; None: none."""
    span = read_span("sglang", "flags", flag)
    return None if span is None else f"SGLang {span}"


def explain_cuda_graph(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    """The capture of the engine's CUDA graphs failed: run without them, or capture fewer."""
    cause = (
        "capturing the engine's CUDA graphs failed (a kernel that cannot run inside a capture, "
        "torch.compile with the capture, or too little memory for the largest batch)"
    )
    if ctx.engine != "sglang" and m.template.engine != "sglang":
        return (
            cause,
            [Fix("flag", "--enforce-eager", note="no CUDA graphs: decoding is slower")],
        )
    fixes: list[Fix] = []
    if ctx.expert_metrics and "capturing" in m.line:
        fixes.append(
            Fix(
                "advice",
                "leave out --enable-expert-distribution-metrics"
                + (", or --speculative-num-steps 1" if ctx.draft else ""),
                note="its recorder reads the experts' utilisation back to the CPU after every "
                "forward pass, which a capture refuses"
                + ("; a one-step draft captures no forward" if ctx.draft else ""),
            )
        )
    if (every := _releases("--disable-cuda-graph")) is not None:
        fixes.append(Fix("flag", "--disable-cuda-graph", note=f"{every}; decoding is slower"))
    fixes.append(
        Fix(
            "advice",
            "leave out --enable-torch-compile",
            note="where it was given: the compiled kernels are what the capture refused",
        )
    )
    for flag in ("--cuda-graph-max-bs-decode", "--cuda-graph-max-bs"):
        if (having := _releases(flag)) is not None:
            fixes.append(Fix("flag", f"{flag} 16", note=f"{having}: capture smaller batches"))
    return cause, fixes
