"""xFormers' dispatcher finding no attention operator for the inputs it was given.

vLLM runs attention through xFormers where its XFormers backend is chosen (V0's default on GPUs
FlashAttention does not take) and in some vision encoders, and it pins the xFormers it is
built with (``Requires-Dist: xformers==X``, read per release into the catalogue's
``requires``: 0.4.3 to 0.11.0). xFormers asks each operator of its priority list whether it
takes the inputs and, where none does, raises one message (``xformers/ops/fmha/dispatch.py``,
``_run_priority_list``, read in the xformers 0.0.28.post3 wheel:
``snapshots/engines/xformers-dispatch.txt``): "No operator found for `memory_efficient_attention
_forward` with inputs:", the inputs, then for each operator "`<name>` is not supported because:"
and its reasons, one a line (``common.py``'s ``not_supported_reasons``). The first line says
nothing; the reasons do, and three kinds of them have an answer:

- "xFormers wasn't build with CUDA support" (or "operator wasn't built"): the installed xFormers
  could not load its compiled operators, built for another torch, CUDA or Python (its warning
  "xFormers can't load C++/CUDA extensions. xFormers was built for: PyTorch X with CUDA Y (you
  have Z)" says which, ``_cpp_lib.py``); the xFormers the vLLM release pins is built for the
  torch it pins.
- "dtype=torch.float32 (supported: {...})" and "bf16 is only supported on A100+ GPUs": the
  model's dtype, which ``--dtype half`` changes.
- the GPU's compute capability ("requires device with capability > (8, 0) but your GPU has
  capability (7, 0) (too old)") and the inputs' shapes: no operator of this xFormers runs them
  on this GPU, no setting of xFormers' own; another attention backend, where the release has
  one for the GPU.
"""

from __future__ import annotations

import re
from dataclasses import replace

from patcher.advice.attention_rules import unforce
from patcher.advice.diagnosis import Diagnosis
from patcher.advice.log_lines import RAISED
from patcher.advice.log_rules import Fix, LogContext
from patcher.advice.requirements import required_at

NOT_FOUND = re.compile(r"No operator found for `(memory_efficient_attention\w*)` with inputs:")
# One operator's refusal, then its reasons on the lines after it.
_OPERATOR = re.compile(r"^`([^`]+)` is not supported because:\s*$")
_UNBUILT = re.compile(r"xFormers wasn't build with CUDA support|operator wasn't built")
_DTYPE = re.compile(r"^dtype=torch\.\w+ \(supported: |^bf16 is only supported on A100\+ GPUs")
# The message's lines after the first: the inputs, the operators and their reasons. A new
# exception, a traceback, a heading or an empty line ends it.
MOST_LINES = 64


def is_reason(line: str) -> bool:
    """Whether a line (its process prefix taken off) continues xFormers' message: not a new
    exception, traceback or heading ("Process EngineCore_DP0:"), an operator's excepted."""
    text = line.strip()
    if not text or RAISED.match(text) or text.startswith(("Traceback", "File ")):
        return False
    return not text.endswith(":") or _OPERATOR.match(text) is not None


def by_first_line(line: str) -> Diagnosis | None:
    """The message's first line: held by doctor while the reasons after it are read
    (kernel_reasons.CONTINUED), and the answer where they are not in the log."""
    found = NOT_FOUND.search(line)
    if found is None:
        return None
    return Diagnosis(
        "-",
        "xformers-dispatch",
        line.strip(),
        f"xFormers found no operator for {found.group(1)} with these inputs; the reasons it "
        "gives for each operator follow the message and say which setting or build it is",
        (
            Fix(
                "advice",
                "the lines after the message (each operator's reasons), or python -m "
                "xformers.info: which of its operators this xFormers has built",
            ),
        ),
        None,
    )


def _operators(reasons: list[str]) -> dict[str, list[str]]:
    """Each operator the message names, with its reasons."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in reasons:
        text = line.strip()
        operator = _OPERATOR.match(text)
        if operator is not None:
            current = found.setdefault(operator.group(1), [])
        elif current is not None:
            current.append(text)
    return found


def _rebuilt(ctx: LogContext) -> list[Fix]:
    """An xFormers built for the torch installed: the log's vLLM release's pin where it names
    one (built for the torch that release pins), and the same build for the installed torch."""
    at = required_at("vllm", "xformers", ctx.version) if ctx.version is not None else None
    fixes = (
        [
            Fix(
                "dependency",
                f"pip install '{at[1]}'",
                note=f"what vLLM {at[0]}'s wheel requires (Requires-Dist), built for the "
                "torch it pins",
            )
        ]
        if at is not None
        else []
    )
    fixes.append(
        Fix(
            "advice",
            ("or " if fixes else "")
            + "an xFormers built for the torch installed, its version and its CUDA build "
            "(the warning 'xFormers can't load C++/CUDA extensions' names the torch it was "
            "built for and the one installed; pip check names the xFormers the installed vLLM "
            "requires)",
        )
    )
    return fixes


def by_reasons(held: Diagnosis, reasons: list[str], ctx: LogContext) -> Diagnosis:
    """The build, the dtype or the GPU, as the operators' reasons say; ``held`` where the
    message's lines after the first are not in the log."""
    operators = _operators(reasons)
    if not operators:
        return held
    said = [r for found in operators.values() for r in found]
    fixes: list[Fix] = []
    why: list[str] = []
    if any(_UNBUILT.search(r) for r in said):
        fixes += _rebuilt(ctx)
        why.append(
            "this xFormers could not load its compiled operators (built for another torch, "
            "CUDA or Python: the warning 'xFormers can't load C++/CUDA extensions' above says "
            "which)"
        )
    dtype_only = [
        name
        for name, found in operators.items()
        if found
        and all(_DTYPE.search(r) or _UNBUILT.search(r) for r in found)
        and any(_DTYPE.search(r) for r in found)
    ]
    if dtype_only and ctx.dtype not in ("float16", "half"):
        fixes.append(Fix("flag", "--dtype half", note=f"{dtype_only[0]} takes float16 inputs"))
        why.append(f"{dtype_only[0]} refuses only the inputs' dtype")
    if not fixes:
        fixes = [
            *unforce(ctx.version),
            Fix(
                "advice",
                "else no config fix: no operator of this xFormers runs these inputs on this "
                "GPU (its reasons: the GPU's compute capability, a dtype the command already "
                "sets, the head size); another GPU or vLLM attention backend",
            ),
        ]
        why.append("each operator refuses the GPU, the inputs' dtype or their shape")
    return replace(
        held,
        code="xformers-dispatch",
        cause="xFormers found no operator for the attention's inputs: " + "; ".join(why),
        fixes=tuple(fixes),
        family=None,
    )
