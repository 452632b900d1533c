"""doctor's answer when FlashInfer's trtllm-gen attention kernels refuse the GPU: "Error in
function 'TllmGenFmhaRunner' at .../fmhaRunner.cuh:N: Unsupported architecture". The runner's
constructor accepts compute capability 10.0 and 10.3 only (``mSM == kSM_100 || mSM ==
kSM_103``, the same check in every FlashInfer release read, 0.3.1 to 0.6.14;
snapshots/engines/flashinfer-trtllm-gen-arch.txt), so an engine attention path that calls
these kernels on any other GPU (SM120's RTX PRO 6000 and RTX 50, SM90's H100) stops there.
SGLang's ``trtllm_mha`` and ``trtllm_mla`` backends call them (read from its wheels: their
files call ``trtllm_batch_context_with_kv_cache``, ``trtllm_batch_decode_with_kv_cache*`` and
``trtllm_ragged_attention_deepseek``), and so does its sparse-attention backend's trtllm path.
"""

from __future__ import annotations

import re

from patcher.advice.backend_gpu import sglang_backend_instead
from patcher.advice.log_lines import engine_file
from patcher.advice.log_rules import Fix, LogContext, Rule

FMHA_ARCH = re.compile(
    r"Error in function 'TllmGenFmhaRunner' at \S*fmhaRunner\.cuh:\d+: Unsupported architecture"
)
TRTLLM_GEN_MARKERS = ("TllmGenFmhaRunner",)
# SGLang's attention backends, by their file, whose kernels are FlashInfer's trtllm-gen ones
_BACKEND_FILE = re.compile(r"sglang/srt/layers/attention/(trtllm_(?:mha|mla))_backend\.py")
_GPU = "a GPU of compute capability 10.0 or 10.3 (B200, GB200, B300, GB300)"


def fmha_arch(_m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """FlashInfer's trtllm-gen attention kernels on a GPU they are not built for: SGLang's
    other attention backends where the frame is its trtllm_mha or trtllm_mla backend, else
    no config fix."""
    found = engine_file(ctx.frame)
    backend = _BACKEND_FILE.search(found[1]) if found is not None else None
    where = f" ({found[1]})" if found is not None else ""
    fixes: list[Fix] = []
    instead = (
        sglang_backend_instead(
            "--attention-backend",
            backend.group(1),
            prefer=("flashinfer", "triton"),
            why="FlashInfer's own kernels, built for SM80 and later (and no "
            "--prefill-attention-backend or --decode-attention-backend of trtllm's)",
        )
        if backend is not None
        else None
    )
    if instead is not None:
        fixes.append(instead)
    fixes.append(
        Fix(
            "advice",
            f"no config fix where the engine has no other attention path for this model: {_GPU}",
            note="the runner's check is the same in every FlashInfer release read (0.3.1 to "
            "0.6.14), so no FlashInfer release runs these kernels on this GPU",
        )
    )
    return (
        "FlashInfer's trtllm-gen attention kernels (TllmGenFmhaRunner) run on compute "
        f"capability 10.0 and 10.3 only, and the engine's attention path{where} called them on "
        "another GPU",
        fixes,
    )


TRTLLM_GEN_RULES: tuple[Rule, ...] = (("trtllm-gen-arch", FMHA_ARCH, fmha_arch),)
