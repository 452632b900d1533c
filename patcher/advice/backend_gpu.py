"""doctor's answer when SGLang itself refuses an attention backend the GPU has no kernels for:
"TRTLLM MHA backend is only supported on Blackwell GPUs (SM100). Please use a different
backend." Its server arguments check the GPU for the backends named (server_args.py and, from
0.5.19, arg_groups/attention_hook.py: trtllm_mha, trtllm_mla, cutedsl_mla, for the whole model
or for prefill or decode alone; the catalogue's errors-sglang.json holds each wording and its
releases), and the message asks for another backend. The flag and its choices are the
release's (the catalogue's ``choices:--attention-backend`` and the prefill and decode flags,
read per release): Triton's kernels, compiled for the GPU they run on, and FlashInfer's are
choices of every release that has the refused one.
"""

from __future__ import annotations

import re

from patcher.advice.catalogue import feature_releases
from patcher.advice.log_rules import Fix, LogContext, Rule

REFUSED = re.compile(
    r"(\w+ \w+) backend(?: for (prefill|decode))? (?:is only supported on|requires) "
    r"([^.]*?)\. Please use a different (?:prefill |decode )?backend\."
)
BACKEND_GPU_MARKERS = ("Please use a different",)
# in the order offered: kernels built for the GPU at hand first
_PORTABLE = ("triton", "flashinfer")


def refused(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """The same flag with a backend of the release's choices whose kernels the GPU has, then
    the GPUs the message names."""
    name = m.group(1).lower().replace(" ", "_")
    phase = m.group(2)
    flag = f"--{phase}-attention-backend" if phase else "--attention-backend"
    having = feature_releases("sglang", f"choices:{flag}", name)
    fixes: list[Fix] = []
    if having:
        others = [
            c
            for c in _PORTABLE
            if set(having) <= set(feature_releases("sglang", f"choices:{flag}", c))
        ]
        if others:
            also = f", or {' or '.join(others[1:])}" if others[1:] else ""
            fixes.append(
                Fix(
                    "flag",
                    f"{flag} {others[0]}",
                    note=f"in place of {name}{also}: kernels for the GPU at hand, choices of "
                    f"every SGLang release read that has {name} ({having[0]} to {having[-1]})",
                )
            )
    fixes.append(Fix("advice", f"or keep {name} on {m.group(3)}", note="the GPUs the check takes"))
    where = f" for {phase}" if phase else ""
    return (
        f"SGLang's {name} attention backend{where} runs on {m.group(3)} only (its server "
        "arguments check the GPU), and this GPU is not one of them",
        fixes,
    )


BACKEND_GPU_RULES: tuple[Rule, ...] = (("sglang-backend-gpu", REFUSED, refused),)
