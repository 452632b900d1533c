"""doctor's answer when torchvision's compiled ops do not load into the installed torch:
"RuntimeError: operator torchvision::nms does not exist". torchvision registers Python fakes
for its C++ ops as it is imported (``_meta_registrations.py``: ``register_fake(
"torchvision::nms")``); built for another torch, the C++ ops are not there to register against.
Every engine imports torchvision for its multimodal processors, so the server does not start.
Each torchvision release is built for one torch (its wheel's ``Requires-Dist: torch==X``, read
from torchvision 0.15 to 0.28 on PyPI: snapshots/engines/torchvision-torch.txt): 0.(N+15)
for torch 2.N."""

from __future__ import annotations

import re

from patcher.advice.catalogue import Engine
from patcher.advice.log_rules import Fix, LogContext, Rule
from patcher.advice.requirements import required_at

# The torch minor each torchvision minor is built for, as read: torch 2.N <-> torchvision 0.N+15.
TORCH_TO_TORCHVISION_OFFSET = 15
READ_TORCH_MINORS = range(0, 14)  # torch 2.0 to 2.13, torchvision 0.15 to 0.28

OPS_MISSING = re.compile(r"operator torchvision::(\w+) does not exist")


def torchvision_for(torch_minor: int) -> str:
    """The torchvision minor built for torch 2.``torch_minor`` (within the releases read)."""
    return f"0.{torch_minor + TORCH_TO_TORCHVISION_OFFSET}"


def ops_missing(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """torchvision built for another torch than the one installed."""
    fixes: list[Fix] = []
    engine: Engine | None = (
        "vllm" if ctx.engine == "vllm" else "sglang" if ctx.engine == "sglang" else None
    )
    if engine is not None and ctx.version is not None:
        answering = required_at(engine, "torchvision", ctx.version)
        if answering is not None:
            at, pin = answering
            fixes.append(
                Fix(
                    "dependency",
                    f"pip install '{pin}'",
                    note=f"what {engine} {at}'s wheel requires, for the torch it requires",
                )
            )
    first, last = READ_TORCH_MINORS[0], READ_TORCH_MINORS[-1]
    fixes.append(
        Fix(
            "advice",
            ("or " if fixes else "")
            + "the torchvision built for the torch installed (python -c 'import torch; "
            "print(torch.__version__)'): torchvision 0.N+15 for torch 2.N, "
            f"{torchvision_for(first)} for 2.{first} to {torchvision_for(last)} for 2.{last}",
            note="each torchvision wheel's Requires-Dist names its torch; a platform's own "
            "torch (torch_npu, ROCm, a CPU build) needs the torchvision of its version",
        )
    )
    return (
        f"torchvision's compiled ops (torchvision::{m.group(1)}) are not in the torch "
        "installed: this torchvision was built for another torch release",
        fixes,
    )


TORCHVISION_RULES: tuple[Rule, ...] = (("torchvision-build", OPS_MISSING, ops_missing),)
TORCHVISION_MARKERS = ("operator torchvision::",)
