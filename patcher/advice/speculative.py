"""doctor's answer when speculative decoding's draft model is not one its method runs: SGLang's
draft workers (``srt/speculative/``) and vLLM's proposers (``spec_decode/``) load the draft as
the engine starts, and refuse, or fail on, a model that is not a draft of the algorithm (SGLang
loads the target itself as the draft when ``--speculative-draft-model-path`` is left out, and
it lacks the draft's own methods: ``'Qwen2ForCausalLM' object has no attribute 'set_embed'``)."""

from __future__ import annotations

from patcher.advice.catalogue import Matched
from patcher.advice.log_rules import Fix, LogContext
from patcher.advice.own_remedy import own_remedy


def explain_draft(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    """The draft model given (or the target, taken as its own draft) is not one the
    speculative method runs: a draft trained for it, or no speculative decoding."""
    sglang = ctx.engine == "sglang" or m.template.engine == "sglang"
    draft = (
        Fix(
            "advice",
            "--speculative-draft-model-path DRAFT",
            note="a draft model trained for --speculative-algorithm (without it, the target "
            "model is loaded as its own draft)",
        )
        if sglang
        else Fix(
            "advice",
            '--speculative-config with "model": a draft trained for its "method"',
            note="a draft model of the method, or a method the checkpoint carries (mtp)",
        )
    )
    off = Fix(
        "advice",
        "or leave out "
        + ("--speculative-algorithm and its flags" if sglang else "--speculative-config"),
        note="serve without speculative decoding",
    )
    return (
        "the speculative draft model is not one its method runs (a draft of the algorithm, or "
        "the target model taken as its own draft)",
        [*own_remedy(m.line, m.template), draft, off],
    )
