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

from patcher.advice.catalogue import feature_releases, releases
from patcher.advice.log_rules import Fix, LogContext, Rule

REFUSED = re.compile(
    r"(\w+ \w+) backend(?: for (prefill|decode))? (?:is only supported on|requires) "
    r"([^.]*?)\. Please use a different (?:prefill |decode )?backend\."
)
BACKEND_GPU_MARKERS = ("Please use a different",)
# in the order offered: kernels built for the GPU at hand first
PORTABLE = ("triton", "flashinfer")


def sglang_backend_instead(
    flag: str, refused: str, prefer: tuple[str, ...] = PORTABLE, why: str = ""
) -> Fix | None:
    """``flag`` with the first of ``prefer`` that is a choice of every SGLang release read
    whose choices hold ``refused`` (every release read, where none lists it), in place of it;
    None where no such choice is read."""
    having = feature_releases("sglang", f"choices:{flag}", refused) or tuple(releases("sglang"))
    others = [
        c
        for c in prefer
        if c != refused and set(having) <= set(feature_releases("sglang", f"choices:{flag}", c))
    ]
    if not others:
        return None
    also = f", or {' or '.join(others[1:])}" if others[1:] else ""
    return Fix(
        "flag",
        f"{flag} {others[0]}",
        note=f"in place of {refused}{also}: {why or 'kernels for the GPU at hand'}; choices of "
        f"every SGLang release read that has {refused} ({having[0]} to {having[-1]})",
    )


def refused(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """The same flag with a backend of the release's choices whose kernels the GPU has, then
    the GPUs the message names."""
    name = m.group(1).lower().replace(" ", "_")
    phase = m.group(2)
    flag = f"--{phase}-attention-backend" if phase else "--attention-backend"
    instead = (
        sglang_backend_instead(flag, name)
        if feature_releases("sglang", f"choices:{flag}", name)
        else None
    )
    fixes = [instead] if instead is not None else []
    fixes.append(Fix("advice", f"or keep {name} on {m.group(3)}", note="the GPUs the check takes"))
    where = f" for {phase}" if phase else ""
    return (
        f"SGLang's {name} attention backend{where} runs on {m.group(3)} only (its server "
        "arguments check the GPU), and this GPU is not one of them",
        fixes,
    )


BACKEND_GPU_RULES: tuple[Rule, ...] = (("sglang-backend-gpu", REFUSED, refused),)
