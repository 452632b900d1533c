"""doctor's answer when the CUDA driver refuses one of the calls torch makes to it directly.

torch calls the CUDA driver API itself in few places, each call checked by
``C10_CUDA_DRIVER_CHECK`` (``c10/cuda/driver_api.h``), which raises "CUDA driver error: <the
driver's own words>" (read in PyTorch's source, ``snapshots/engines/torch-driver-calls.txt``).
The calls it loads are the driver's virtual memory functions (``cuMemCreate``, ``cuMemMap``,
``cuMemSetAccess``, ``cuMemAddressReserve`` and their releases), which only the caching
allocator's expandable segments use (``CUDACachingAllocator.cpp``'s ``ExpandableSegment``),
and, in the newer releases, the shareable handles and multicast objects of torch's symmetric
memory. Expandable segments are off unless ``PYTORCH_CUDA_ALLOC_CONF`` turns them on, and off
the caching allocator takes memory with ``cudaMalloc`` instead, none of those calls made.

So a driver that refuses them (WSL2's, a GPU shared through a hypervisor, "device not ready",
"operation not supported") is out of the way with expandable segments off; with tensor
parallelism, vLLM's all-reduce over symmetric memory is the other caller
(``VLLM_ALLREDUCE_USE_SYMM_MEM``, envs.py, where the release read has it). An "out of memory"
in those words is the GPU's memory, which the out-of-memory answers read instead. (torch
Inductor's C++ wrapper words its own kernel launches' driver checks the same way; vLLM and SGLang
do not compile with that wrapper, and the fix is told for where expandable segments are on.)
"""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix, LogContext, Rule, vllm_env

# torch's check (AT_ERROR: a RuntimeError), the driver's description after it (and the quote
# and bracket of a worker's re-raised tuple, left out); not the driver running out of memory,
# which is a size, not a refusal
DRIVER_ERROR = re.compile(r"\bCUDA driver error: (?!out of memory)([^\n.'\")]+?)['\")]*\s*$")
DRIVER_CALL_MARKERS = ("CUDA driver error: ",)


def _symmetric_memory(ctx: LogContext) -> list[Fix]:
    """vLLM's switch off its all-reduce over torch's symmetric memory, where a log shows
    tensor parallelism (one GPU all-reduces nothing) and a release read has the switch."""
    if ctx.engine == "sglang" or ctx.tp is None or ctx.tp < 2:
        return []
    return vllm_env(
        "VLLM_ALLREDUCE_USE_SYMM_MEM=0",
        "with tensor parallelism: vLLM all-reduces without torch's symmetric memory",
        ctx.version,
    )


def refused(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """Expandable segments off (the allocator then asks the driver for nothing it refused),
    and vLLM's symmetric-memory all-reduce off where tensor parallelism may have called it."""
    return (
        f"the CUDA driver refused a call torch makes to it directly ({m.group(1)}): the "
        "virtual memory calls of the caching allocator's expandable segments (or, with "
        "tensor parallelism, torch's symmetric memory), which this driver does not serve",
        [
            Fix(
                "env",
                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False",
                note="where it sets expandable_segments:True (off is torch's default): the "
                "allocator takes memory with cudaMalloc instead, none of the calls refused",
            ),
            *_symmetric_memory(ctx),
        ],
    )


DRIVER_CALL_RULES: tuple[Rule, ...] = (("cuda-driver-call", DRIVER_ERROR, refused),)
