"""doctor's answer when FlashInfer's prebuilt kernels have no instance for the model's head size:
"BatchDecodeWithPagedKVCachePyTorchWrapper::Plan(...) failed to dispatch head_dim 96". Its
bindings dispatch each kernel over the head sizes the build instantiated
(``_DISPATCH_SWITCH`` in python/csrc's pytorch_extension_utils.h: ``__PRETTY_FUNCTION__ << "
failed to dispatch " var_name " " << int(cond)``), and its ahead-of-time builds instantiate
``FLASHINFER_HEAD_DIMS``, "64,128,256" unless set (setup.py and the AOT generator, read through
the code index; snapshots/engines/flashinfer-head-dims.txt). A model of another head size
(Phi-3's 96, 80, 160) stops there whichever way the engine calls it, with CUDA graphs or
without, so the answer is another attention backend: SGLang's Triton kernels take any head
size (a choice of every release read), vLLM's other backends check the head size themselves.
"""

from __future__ import annotations

import re

from patcher.advice.attention_rules import another_backend, release_of
from patcher.advice.backend_gpu import sglang_backend_instead
from patcher.advice.catalogue import releases
from patcher.advice.log_lines import engine_file
from patcher.advice.log_rules import Fix, LogContext, Rule

DISPATCH = re.compile(r"failed to dispatch head_dim (\d+)")
FLASHINFER_DISPATCH_MARKERS = ("failed to dispatch head_dim",)
# vLLM's FlashInfer backend files (V0's and V1's), and V1's where the log shows neither
_VLLM_BACKEND = re.compile(r"vllm/(?:v1/)?attention/backends/flashinfer\.py")
_V1_FILE = "vllm/v1/attention/backends/flashinfer.py"
# the head sizes FlashInfer's prebuilt kernels are instantiated for (FLASHINFER_HEAD_DIMS)
BUILT_HEAD_DIMS = (64, 128, 256)


def dispatch(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """Another attention backend of the engine whose log it is, then a FlashInfer built for
    the head size."""
    size = int(m.group(1))
    found = engine_file(ctx.frame)
    engine = found[0] if found is not None else ctx.engine
    fixes: list[Fix] = []
    if engine != "vllm":
        instead = sglang_backend_instead(
            "--attention-backend",
            "flashinfer",
            why="SGLang's Triton kernels pad any head size inside the kernel",
        )
        fixes += [instead] if instead is not None else []
    if engine != "sglang":
        # vLLM's other backends (read per release), from the flashinfer backend the frame is
        file = found[1] if found is not None and _VLLM_BACKEND.search(found[1]) else _V1_FILE
        release = release_of(ctx.version)
        fixes += another_backend(file, (release,) if release else tuple(releases("vllm")))
    built = ", ".join(str(d) for d in BUILT_HEAD_DIMS)
    fixes.append(
        Fix(
            "advice",
            f"or FlashInfer built with head size {size} (FLASHINFER_HEAD_DIMS={size} when "
            "building it from source)",
            note=f"its prebuilt kernels are instantiated for {built}",
        )
    )
    return (
        f"FlashInfer's prebuilt attention kernels have no instance for head size {size} (its "
        f"builds instantiate {built}); the engine's flashinfer attention backend stops there "
        "with CUDA graphs or without",
        fixes,
    )


FLASHINFER_DISPATCH_RULES: tuple[Rule, ...] = (("flashinfer-head-dim", DISPATCH, dispatch),)
