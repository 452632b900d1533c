"""doctor's answer when the engine's custom all-reduce fails a CUDA call between the GPUs.

vLLM and SGLang reduce across the GPUs of one node with their own kernel (``csrc/
custom_all_reduce.cuh`` in vLLM, ``sgl-kernel/csrc/allreduce/custom_all_reduce.cuh`` in SGLang)
over buffers the processes share through CUDA IPC: ``cudaIpcGetMemHandle`` on each buffer the
CUDA graphs captured and ``cudaIpcOpenMemHandle`` on the other ranks' (``get_graph_buffer_ipc_
meta``, ``register_graph_buffers``, the constructor). vLLM's ``CUDACHECK`` prints the refusal and
exits the process: "Failed: Cuda error <file>:<line> '<error>'" (read in vllm-project/vllm's
``csrc/custom_all_reduce.cuh``); SGLang's kernel raises it with the file and line below the
error's name. A refused handle is memory legacy CUDA IPC cannot export or map: PyTorch's
expandable segments (``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`` maps memory with
``cuMemMap``, which ``cudaIpcGetMemHandle`` does not take), or processes that cannot map each
other's memory. Both engines take ``--disable-custom-all-reduce`` (vLLM 0.4.3 on, SGLang 0.4.0 on,
read): NCCL then reduces, and the CUDA graphs stay.
"""

from __future__ import annotations

import re

from patcher.advice.catalogue import read_span
from patcher.advice.log_rules import Fix, LogContext, Rule

# vLLM's CUDACHECK line ("Failed: Cuda error FILE:LINE 'ERROR'", older builds without "Cuda
# error"), or SGLang's kernel naming the file and line on the line below the error's name.
FAILED = re.compile(
    r"Failed: (?:Cuda error )?\S*custom_all_reduce\.cuh:\d+ '([^']+)'"
    r"|(?:^|\s)/\S*/custom_all_reduce\.cuh:\d+\s*$"
)


def _since(engine: str) -> str:
    name = "SGLang" if engine == "sglang" else "vLLM"
    span = read_span(
        "sglang" if engine == "sglang" else "vllm", "flags", "--disable-custom-all-reduce"
    )
    return f"{name} {span}, read" if span else f"{name}: not read"


def ipc_refused(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """The custom all-reduce's CUDA IPC refused: the engine's NCCL path instead."""
    error = m.group(1) or "a CUDA error"
    engine = ctx.engine or ("sglang" if "sgl-kernel" in m.group(0) else "vllm")
    return (
        f"the engine's custom all-reduce (its own kernel across the GPUs of this node, over "
        f"buffers shared by CUDA IPC) failed a CUDA call: {error}; a buffer legacy CUDA IPC "
        "cannot export or open (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, or processes "
        "that cannot map each other's GPU memory)",
        [
            Fix(
                "flag",
                "--disable-custom-all-reduce",
                note=f"NCCL reduces instead, and the CUDA graphs stay; {_since(engine)}",
            ),
            Fix(
                "advice",
                "or PYTORCH_CUDA_ALLOC_CONF without expandable_segments:True, where it was set",
                note="expandable segments map memory with cuMemMap, which cudaIpcGetMemHandle "
                "does not export",
            ),
        ],
    )


CUSTOM_ALL_REDUCE_RULES: tuple[Rule, ...] = (("custom-all-reduce", FAILED, ipc_refused),)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
CUSTOM_ALL_REDUCE_MARKERS = ("custom_all_reduce",)
