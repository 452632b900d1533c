"""doctor's answer when Triton refuses one of the engine's kernels for the GPU's shared memory:
"out of resource: shared memory, Required: R, Hardware limit: L". Triton compiles a kernel
with the block sizes and pipeline stages the engine chose, and at its first launch compares the
shared memory the compiled kernel needs with the device's opt-in maximum per block
(``CompiledKernel._init_handles``, ``CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN``;
read from Triton 3.3.1's wheel, snapshots/engines/triton-out-of-resources.txt). The tiles are
the engine's code, tuned for a GPU with more: no edit of the checkpoint changes them. Where
the traceback shows the kernel is an attention backend's, another backend avoids it.
"""

from __future__ import annotations

import re

from patcher.advice.log_lines import engine_file
from patcher.advice.log_rules import Fix, LogContext, Rule

# Triton's own words (runtime/errors.py), and torch inductor's copy of them for its templates
# ("out of resource: triton_tem_fused_0 Required: 147456 Hardware limit:101376").
SHARED_MEMORY = re.compile(
    r"out of resource: (?:shared memory,|\w+) Required: (\d+),? Hardware limit: ?(\d+)"
)
TRITON_RESOURCE_MARKERS = ("out of resource: ",)


def _kernel_of(ctx: LogContext) -> str | None:
    """The engine file whose kernel it was, as the traceback's last engine frame names it."""
    found = engine_file(ctx.frame)
    return found[1] if found is not None else None


def shared_memory(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A Triton kernel that asks more shared memory per block than the GPU has: another
    attention backend where the kernel is an attention backend's, else no config fix."""
    required, limit = int(m.group(1)), int(m.group(2))
    if required <= limit:  # not Triton's refusal: its check is required > limit
        return "", []
    kernel = _kernel_of(ctx)
    where = f" ({kernel})" if kernel else ""
    fixes: list[Fix] = []
    if kernel is not None and "/attention/" in kernel:
        fixes.append(
            Fix(
                "flag",
                "--attention-backend NAME",
                note="a backend of this release other than the Triton one the kernel belongs "
                "to, that it has for this model on this GPU",
            )
        )
    fixes.append(
        Fix(
            "advice",
            "no config fix: the kernel's tiles are the engine's code; a GPU with at least "
            f"{required} bytes of shared memory per block, or an engine release whose kernel "
            f"fits {limit}",
            note="Triton compares the compiled kernel's shared memory with the device's opt-in "
            "maximum per block at its first launch, read from Triton's source",
        )
    )
    return (
        f"a Triton kernel of the engine{where} needs {required} bytes of shared memory per "
        f"block and this GPU allows {limit}: its block sizes and stages were chosen for a GPU "
        "with more",
        fixes,
    )


TRITON_RESOURCE_RULES: tuple[Rule, ...] = (("triton-shared-memory", SHARED_MEMORY, shared_memory),)
