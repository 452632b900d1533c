"""doctor's answer when speculative decoding's draft model is not one its method runs: SGLang's
draft workers (``srt/speculative/``) and vLLM's proposers (``spec_decode/``) load the draft as
the engine starts, and refuse, or fail on, a model that is not a draft of the algorithm (SGLang
loads the target itself as the draft when ``--speculative-draft-model-path`` is left out, and
it lacks the draft's own methods: ``'Qwen2ForCausalLM' object has no attribute 'set_embed'``)."""

from __future__ import annotations

import re

from patcher.advice.catalogue import Matched, read_span
from patcher.advice.log_rules import Fix, LogContext, Rule
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


# A kernel's own check of the query rows a request brings at decode (DeepGEMM's paged MQA
# logits for the DeepSeek sparse-attention indexer: "Assertion error (...paged_mqa_logits.hpp:
# 223): next_n == 1 or next_n == 2"); speculative decoding sets next_n, as each engine's source
# reads it (snapshots/engines/deepgemm-next-n.txt).
NEXT_N = re.compile(
    r"Assertion (?:error|failed)[^\n]*?\bnext_n == \d+(?:\s*(?:or|\|\|)\s*next_n == \d+)*"
)


def draft_rows(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """The draft tokens a request verifies at once, above what the kernel takes: vLLM's indexer
    gives the kernel ``next_n = 1 + num_speculative_tokens`` rows (indexer.py), SGLang's
    ``next_n = speculative_num_draft_tokens`` (dsa_backend.py)."""
    allowed = sorted({int(n) for n in re.findall(r"next_n == (\d+)", m.group(0))})
    top = allowed[-1]
    fixes: list[Fix] = []
    if ctx.engine in (None, "vllm"):
        fixes.append(
            Fix(
                "advice",
                f'--speculative-config with "num_speculative_tokens": {top - 1}'
                if top > 1
                else "leave out --speculative-config",
                note=f"vLLM's indexer gives the kernel 1 + num_speculative_tokens rows a "
                f"request; it takes {' or '.join(map(str, allowed))}",
            )
        )
    if ctx.engine in (None, "sglang"):
        fixes.append(
            Fix(
                "flag",
                f"--speculative-num-draft-tokens {top}",
                note="SGLang's sparse-attention backend gives the kernel "
                "speculative_num_draft_tokens rows a request",
            )
        )
    fixes.append(Fix("advice", "or serve without speculative decoding"))
    return (
        f"the sparse-attention indexer's kernel takes {' or '.join(map(str, allowed))} query "
        "rows a request (next_n), and speculative decoding verifies more draft tokens at once",
        fixes,
    )


# vLLM's V0 spec_decode_worker.py (0.5.5 to 0.8.x): "EAGLE does not support TP > 1 yet", raised
# in the branch of ``if draft_tp == 1`` that is not taken: the draft's own tensor-parallel size
# (by default the target's) above 1, whatever the target's.
DRAFT_TP = re.compile(r"(\w+) does not support TP > 1 yet")


def draft_tp(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """The draft model runs with the target's tensor-parallel size unless told otherwise, and
    this proposer runs only on one GPU: the draft's own size, 1."""
    having = read_span("vllm", "flags", "--speculative-draft-tensor-parallel-size")
    flag = (
        [
            Fix(
                "flag",
                "--speculative-draft-tensor-parallel-size 1",
                note=f"vLLM {having} (read): the draft on one GPU, the target keeps its "
                "--tensor-parallel-size",
            )
        ]
        if having
        else []
    )
    return (
        f"the {m.group(1)} draft runs with the target's tensor-parallel size unless given its "
        "own, and the engine runs it only on one GPU (spec_decode_worker.py refuses a draft "
        "size above 1, not the target's)",
        [
            *flag,
            Fix(
                "advice",
                '--speculative-config with "draft_tensor_parallel_size": 1',
                note="the same setting in the releases that take the draft's settings as JSON",
            ),
        ],
    )


SPECULATIVE_RULES: tuple[Rule, ...] = (
    ("speculative-rows", NEXT_N, draft_rows),
    ("speculative-draft-tp", DRAFT_TP, draft_tp),
)
SPECULATIVE_MARKERS = ("Assertion ", "support TP")
