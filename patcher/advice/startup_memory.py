"""doctor's answer when the GPU lacks, at start, the memory vLLM asks for: ``Free memory on
device (free/total GiB) on startup is less than desired GPU memory utilization (u, asked
GiB)`` (``v1/worker/gpu_worker.py``, every release read). Something else holds the GPU's
memory, so a higher ``--gpu-memory-utilization`` only asks for more: the way out is the GPU
freed, or a utilization within what is free, where the model fits in that."""

from __future__ import annotations

import math
import re

from patcher.advice.log_rules import Fix, LogContext


def too_little_free(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """The free and total GiB, the utilization and the GiB it asked for, from the message."""
    free, total, utilization, asked = (float(g) for g in m.groups())
    held = total - free
    cause = (
        f"something else holds {held:.2f} of the GPU's {total:.2f} GiB (another process: a "
        f"server, a notebook, one left over; or this one's own CUDA context), and vLLM asks "
        f"at start for {utilization:g} of it "
        f"({asked:.2f} GiB), more than the {free:.2f} GiB free: a higher utilization asks "
        "for more"
    )
    fixes = [Fix("advice", "free the GPU of the other process (nvidia-smi lists it)")]
    within = math.floor(free / total * 100) / 100 - 0.01  # a margin below the free share
    if within >= 0.1:
        fixes.append(
            Fix(
                "flag",
                f"--gpu-memory-utilization {within:.2f}",
                note=f"within the {free:.2f} GiB free, if the weights and a KV cache fit in "
                f"{within * total:.1f} GiB",
            )
        )
    return cause, fixes
