"""The reasons each kernel gave when vLLM found none for a quantized linear layer.

vLLM picks the kernel of a weight-only (WNA16) or scaled-MM layer from a list, asking each its
``can_implement``, and when none can it raises one message with every kernel's answer on a line
of its own ("Failed to find a kernel that can implement the WNA16 linear layer. Reasons:" then
"MacheteLinearKernel requires capability 90, current compute capability is 80", "ExllamaLinear
Kernel cannot implement due to: Exllama only supports float16 activations", ...; the choosers'
``'\\n'.join(failure_reasons)``, read in every release from 0.6). The first line alone says
nothing the user can change; the reasons do. Most are the GPU or the platform (a capability, a
library built for CUDA only), but two are settings of the command, read from the kernels'
``can_implement`` returns across the releases (``python -m tools.read_kernel_reasons`` prints
them): the Exllama kernel takes only float16 activations (``--dtype float16`` makes it
applicable to a bfloat16 model), and Marlin refuses a weight shard that is not a multiple of its
``min_thread_k`` ("Consider reducing tensor_parallel_size"), which a smaller tensor-parallel
size can make whole. doctor reads the reason lines after the first (doctor.py holds the answer
until they end) and names those settings; where no reason is a setting the answer stays the
hardware gap. xFormers' dispatcher words its refusal the same way, each attention operator's
reasons after it; those are read in xformers_dispatch.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from patcher.advice import xformers_dispatch
from patcher.advice.diagnosis import Diagnosis
from patcher.advice.log_rules import Fix, LogContext

# vLLM's kernel choosers for the mixed-precision (WNA16) and scaled-MM layers and, from 0.20, the
# FP8/FP4 linear kernels.
_CHOOSERS = re.compile(r"Failed to find a kernel that can implement the (\w+) linear layer")
_KERNEL = re.compile(r"^\s*(\w+Kernel)\b")
_FLOAT16_ONLY = re.compile(r"only supports float16 activations", re.IGNORECASE)
# Marlin's shape checks, whose text check_marlin_supports_shape returns as the reason:
# "Weight input_size_per_partition = 14784 is not divisible by min_thread_k = 128", the output's
# by min_thread_n, the input's by group_size (snapshots/engines/kernel-reasons-vllm.txt).
_SHARD = re.compile(
    r"(?:input|output)_size_per_partition = (\d+) is not divisible by\s+"
    r"(?:min_thread_[kn]|group_size) = (\d+)"
)
_SMALLER_TP = re.compile(r"Consider reducing tensor_parallel_size")


def _smaller_tp(shard: int, multiple: int, tp: int) -> int | None:
    """The largest tensor-parallel size below ``tp`` whose shard of the whole input (``shard``
    on each of ``tp`` ranks) is a multiple of ``multiple``."""
    whole = shard * tp
    for size in range(tp - 1, 0, -1):
        if whole % size == 0 and (whole // size) % multiple == 0:
            return size
    return None


def _kernel_reason(line: str) -> bool:
    return _KERNEL.match(line) is not None


def _by_kernel_reasons(held: Diagnosis, reasons: list[str], ctx: LogContext) -> Diagnosis:
    """The settings the kernels' reasons name, in place of ``held`` (the answer to the first
    line alone); ``held`` where no reason is a setting of the command."""
    layer = _CHOOSERS.search(held.error or "")
    fixes: list[Fix] = []
    said: list[str] = []
    for reason in reasons:
        kernel = _KERNEL.match(reason)
        name = kernel.group(1) if kernel else "a kernel"
        if _FLOAT16_ONLY.search(reason) and ctx.dtype not in ("float16", "half"):
            fixes.insert(0, Fix("flag", "--dtype float16", note=f"{name} takes float16 only"))
            said.append(f"{name} takes the layer with float16 activations")
        shard = _SHARD.search(reason)
        if shard is not None and _SMALLER_TP.search(reason):
            size, multiple = int(shard.group(1)), int(shard.group(2))
            smaller = _smaller_tp(size, multiple, ctx.tp) if ctx.tp else None
            if smaller is not None:
                fixes.append(
                    Fix(
                        "flag",
                        f"--tensor-parallel-size {smaller}",
                        note=f"{name}: a shard that is a multiple of {multiple}",
                    )
                )
            else:
                fixes.append(
                    Fix(
                        "advice",
                        "a smaller --tensor-parallel-size whose shard of the input "
                        f"({size} x the size now / the new size) is a multiple of {multiple}",
                    )
                )
            said.append(f"{name} takes it where each shard is a multiple of {multiple}")
    if not fixes:
        return held
    what = layer.group(1) if layer else "this"
    return replace(
        held,
        code="kernel-reasons",
        cause=(
            f"no kernel of this vLLM takes the {what} linear layer as it was started, and the "
            f"kernels' own reasons name settings of the command: {'; '.join(said)}"
        ),
        fixes=tuple(fixes),
        family=None,
    )


@dataclass(frozen=True, slots=True)
class _Continued:
    """A message whose reasons follow it, one a line (``after``: the words after which a
    message quoted on one line holds them): which lines are its reasons, and the answer they
    give in place of the first line's."""

    message: re.Pattern[str]
    after: str
    is_reason: Callable[[str], bool]
    by_reasons: Callable[[Diagnosis, list[str], LogContext], Diagnosis]


_MESSAGES = (
    _Continued(_CHOOSERS, "Reasons:", _kernel_reason, _by_kernel_reasons),
    _Continued(
        xformers_dispatch.NOT_FOUND,
        "with inputs:",
        xformers_dispatch.is_reason,
        xformers_dispatch.by_reasons,
    ),
)
# Any of the messages above: doctor holds its answer while the reasons after it are read.
CONTINUED = re.compile("|".join(m.message.pattern for m in _MESSAGES))
# The reasons a log shows are at most the kernels of one list (a dozen in 0.34), or xFormers'
# inputs and its operators' reasons.
MOST_REASONS = xformers_dispatch.MOST_LINES


def _held(held: Diagnosis) -> _Continued:
    return next((m for m in _MESSAGES if m.message.search(held.error or "")), _MESSAGES[0])


def is_reason(line: str, held: Diagnosis) -> bool:
    """Whether a line (its process prefix taken off) is one of the reasons ``held``'s message
    is followed by."""
    return _held(held).is_reason(line)


def inline_reasons(line: str, held: Diagnosis) -> list[str]:
    """The reasons a message quoted on one line holds after it, ``\\n``-joined."""
    after = _held(held).after
    tail = line.split(after, 1)[1] if after in line else ""
    return [r for r in tail.split("\\n") if r.strip() and is_reason(r, held)]


def by_reasons(held: Diagnosis, reasons: list[str], ctx: LogContext) -> Diagnosis:
    """The answer the reasons after ``held``'s message give, in place of ``held``."""
    return _held(held).by_reasons(held, reasons, ctx)
