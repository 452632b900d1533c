"""doctor's answer to two tensors of different sizes meeting at start-up ("The size of tensor a
(16004) must match the size of tensor b (16032) at non-singleton dimension 0"): read from the
sizes themselves and what the log shows around them: a GGUF vocabulary split over the GPUs
without its padding (vLLM's weight loader up to 0.6.6.post1), FP4's two values a byte, or a
checkpoint saved for another configuration.
"""

from __future__ import annotations

import re

from patcher.advice.catalogue import version_key
from patcher.advice.log_rules import Fix, LogContext, Rule, vllm_env

# vLLM pads the vocabulary to a multiple of this and splits it over the GPUs
# (vocab_parallel_embedding.py, DEFAULT_VOCAB_PADDING_SIZE in every release read).
VOCAB_PADDING = 64
# The first release read whose weight loader sizes a GGUF embedding by its padded share
# (snapshots/engines/vllm-gguf-vocab-shard.txt; 0.6.6.post1 divides the unpadded vocabulary).
GGUF_PADDED_SHARE = "0.7.3"


def _gguf_vocab_share(a: int, b: int, ctx: LogContext) -> tuple[str, list[Fix]] | None:
    """A GGUF embedding built one GPU's unpadded share of the vocabulary, where the loader
    copies in its padded share: the sizes differ by the padding split over the GPUs."""
    tp = ctx.tp or 1
    short, share = min(a, b), max(a, b)
    if ctx.quantization != "gguf" or tp < 2 or share * tp % VOCAB_PADDING:
        return None
    if not 0 < (share - short) * tp < VOCAB_PADDING:
        return None
    if ctx.version is not None and ctx.version >= version_key(GGUF_PADDED_SHARE):
        return None  # its loader sizes the share padded: another cause
    return (
        f"the GGUF embedding was built for {short} rows on each of {tp} GPUs, the vocabulary "
        f"({short * tp}) split as it is, but each GPU takes {share} rows, its share of the "
        f"vocabulary padded to a multiple of {VOCAB_PADDING} ({share * tp}): this vLLM's weight "
        "loader sizes a GGUF "
        "embedding by the unpadded vocabulary (vocab_parallel_embedding.py, releases read up "
        "to 0.6.6.post1)",
        [
            Fix(
                "dependency",
                f"pip install 'vllm>={GGUF_PADDED_SHARE}'",
                note="the first release read that sizes it by the padded share",
            ),
            Fix(
                "flag",
                "--tensor-parallel-size 1",
                note="one GPU takes the whole vocabulary, which the loader sizes right",
            ),
        ],
    )


def packed_size(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """Two sizes that should match: a GGUF vocabulary split unpadded, FP4's packing (one twice
    the other, while the weights load), or a checkpoint of another configuration."""
    a, b = int(m.group(1)), int(m.group(2))
    if (vocab := _gguf_vocab_share(a, b, ctx)) is not None:
        return vocab
    if not ctx.loading:
        return (
            f"two tensors' sizes do not match ({a} against {b}), and nothing before this line "
            "shows the weights being loaded: this line alone does not say it is the "
            "checkpoint's weights",
            [Fix("advice", "the traceback above names the code; no checkpoint edit is known")],
        )
    if max(a, b) != 2 * min(a, b):
        return (
            f"a weight's shape does not match the model class ({a} against {b}): the weights "
            "were saved for another configuration; no quantization edit explains this ratio",
            [Fix("advice", "check num_*, hidden and intermediate sizes against the weights")],
        )
    return (
        f"a weight is twice the size the engine expects ({a} against {b}): the 2x of FP4 "
        "packing (two values a byte). A module the checkpoint keeps unquantized is built as "
        "quantized, or the reverse: the quantization exclude list names it by a prefix the "
        "engine's module names do not match (an MTP or draft layer's name). This line cannot "
        "tell which module: the traceback above names the loader",
        [
            ctx.apply("add-quant-exclude-modules", " --set 'pattern=mtp.*'"),
            Fix("advice", "use the module prefix the traceback's loader names"),
        ],
    )


def product_shapes(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A matrix product whose inner sizes differ: a layer built for inputs of one width given
    another, in the model the engine built. torch checks it the same way eager
    ("mat1 and mat2 shapes cannot be multiplied") and while Dynamo traces with fake tensors
    ("a and b must have same reduction dim"), so it is not the compiler's and eager mode
    raises it again. Where the command runs speculative decoding, the draft model is named
    first: its input is what the target hands it, a width two configs set."""
    given, built = m.group("given") or m.group("given2"), m.group("built") or m.group("built2")
    cause = (
        f"a layer built for inputs {built} wide was given {given}: a shape error in the model "
        "the engine built for these options (the code or config before that layer), not "
        "torch.compile's: eager mode raises it too"
    )
    no_edit = Fix(
        "advice",
        "no config edit is known: an engine bug for this model and options; another release "
        "of the engine, or report it with the command",
    )
    if not ctx.draft:
        return cause, [no_edit]
    without = Fix(
        "advice",
        "serve without speculative decoding (leave out --speculative-config, or SGLang's "
        "--speculative-algorithm)",
        note="the drafter is a second model fed the target's hidden states: its input width "
        "comes from both models' configs and the engine's code joining them",
    )
    # vLLM's two model runners each build speculative decoding with their own code
    # (v1/spec_decode/ and v1/worker/gpu/spec_decode/), the env choosing between them
    other_runner = (
        vllm_env(
            f"VLLM_USE_V2_MODEL_RUNNER={0 if ctx.v2_runner else 1}",
            f"the {'V1' if ctx.v2_runner else 'V2'} model runner, the other one, whose drafter "
            "is its own code (snapshots/engines/vllm-model-runners.txt)",
            ctx.version,
        )
        if ctx.engine != "sglang"
        else []
    )
    return cause, [without, *other_runner, no_edit]


SIZE_RULES: tuple[Rule, ...] = (
    (
        "product-shape-mismatch",
        re.compile(
            r"a and b must have same reduction dim, but got \[[^\]]*?(?P<given>\d+)\] X "
            r"\[(?P<built>\d+)"
            r"|mat1 and mat2 shapes cannot be multiplied \(\d+x(?P<given2>\d+) and "
            r"(?P<built2>\d+)x\d+\)"
        ),
        product_shapes,
    ),
    (
        "packed-size-mismatch",
        re.compile(r"The size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)"),
        packed_size,
    ),
)
SIZE_MARKERS = (
    "must match the size of tensor",
    "same reduction dim",
    "shapes cannot be multiplied",
)
