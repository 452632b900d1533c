"""doctor's answer for a parallel size that does not divide what it splits: attention heads,
KV heads or experts by tensor, expert or pipeline parallelism, and a GPU's slice of a
quantized weight that is not a whole number of quantization blocks or groups (the FP8 block
methods' ``block_n``/``block_k``, Marlin's and BitBLAS's ``group_size``, the MX formats'
blocks). Sizes are computed from the numbers the message and the command line carry.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

from patcher.advice.answers import _engine, _flag_word, _numbers, _unique
from patcher.advice.catalogue import (
    ENGINE_NAMES,
    Engine,
    Matched,
    declared,
    feature_releases,
    releases,
    version_key,
)
from patcher.advice.log_rules import Fix, LogContext
from patcher.advice.own_remedy import own_remedy

# A parallel mode refused outright, and the words of a size that does not fit.
_REFUSED_MODE = re.compile(
    r"does not support|not supported|cannot be used|can't be used|incompatible|not compatible",
    re.IGNORECASE,
)
# vLLM's refusal of pipeline parallelism for a model class without it: the architecture list of
# 0.5 and 0.6 (config.py ``_PP_SUPPORTED_MODELS``), the ``SupportsPP`` interface after; SGLang's
# (model_runner.py), whose check is its class's forward taking ``pp_proxy_tensors``.
_NO_PIPELINE = re.compile(
    r"Pipeline parallelism is (?:only supported for the following|not supported for this model)"
    r"|Pipeline Parallel is not compatible with this model",
    re.IGNORECASE,
)
# A parallel mode refused on one executor ("Pipeline parallelism is not supported yet with
# multiprocessing.", vLLM 0.5's config.py): the other executor (--distributed-executor-backend).
_EXECUTOR = re.compile(r"not supported (?:yet )?(?:with|on|by) (multiprocessing|ray)\b", re.I)
# "Pipeline parallelism is only supported through AsyncLLMEngine as performance will be severely
# degraded otherwise." (vLLM 0.5 to 0.10's LLMEngine.step): the LLM class drives the engine step
# by step, which pipeline parallelism does not run under; the API server runs AsyncLLMEngine.
_ASYNC_ONLY = re.compile(r"only supported through AsyncLLMEngine")
_SIZED = re.compile(
    r"divisib|divide|multiple of|greater than|less than|at least|at most|must be (?:<|>|=)|"
    r"must equal|exceeds?",
    re.IGNORECASE,
)


def _divisor_below(total: int, size: int) -> int | None:
    """The largest power of two below ``size`` that divides ``total`` (a TP size that works)."""
    candidate = 1
    while candidate * 2 < size and total % (candidate * 2) == 0:
        candidate *= 2
    return candidate if candidate < size else None


# The holes of a quantization-unit message: the per-GPU slice, and the block or group it must
# be a multiple of (fp8.py's block_n/block_k, Marlin's and BitBLAS's group_size, MXFP's block).
_UNIT_HOLE = ("block", "group", "thread_k", "thread_n")
_SLICE_HOLE = ("partition", "size", "features", "dim", "shape")
# The MoE method's messages (Fp8MoEMethod and its kin): a routed expert's slice, which expert
# parallelism keeps whole. A linear layer's slice (Fp8LinearMethod's "Weight
# output_partition_size", a shared expert's MLP, attention projections) is split by TP alone.
# "speculative_draft_tensor_parallel_size=4 cannot be other value than 1" (vLLM 0.6)
_ONLY_VALUE = re.compile(r"cannot be (?:any )?other value than")
_EXPERT_SLICE = re.compile(r"gate's and up's|down's|\bMoE\b|expert", re.IGNORECASE)


def _slice_and_unit(m: Matched) -> tuple[int, int] | None:
    """The per-GPU slice and the quantization unit it must be a multiple of, from the holes."""
    unit = next(
        (int(v) for n, v in m.values if any(w in n.lower() for w in _UNIT_HOLE) and v.isdigit()),
        None,
    )
    part = next(
        (
            int(v)
            for n, v in m.values
            if v.isdigit()
            and not any(w in n.lower() for w in _UNIT_HOLE)
            and any(w in n.lower() for w in _SLICE_HOLE)
        ),
        None,
    )
    if unit is None or part is None or unit <= 0 or part <= 0 or part % unit == 0:
        return None
    return part, unit


def _smaller_tp(part: int, unit: int, tp_now: int) -> int:
    """The largest divisor of ``tp_now`` below it whose slice of the same whole is a multiple
    of ``unit`` (1 at worst: one GPU holds whole weights, as the checkpoint was quantized).
    Divisors only: the heads and experts ``tp_now`` divided, they divide too, and pipeline
    stages make up the GPUs."""
    whole = part * tp_now
    for size in range(tp_now - 1, 1, -1):
        if tp_now % size == 0 and (whole // size) % unit == 0:
            return size
    return 1


def _marlin_method(fix: Fix, ctx: LogContext) -> Fix | None:
    """vLLM's Marlin shape check (marlin_utils.py, shared by the GPTQ and AWQ Marlin methods)
    names ``--quantization gptq``: a way out for a GPTQ checkpoint only (GPTQ's own kernel);
    AWQ's own kernel (awq.py) refuses the same slice ("The input size is not aligned with the
    quantized weight shape"), so for AWQ it is no fix."""
    if fix.text != "--quantization gptq":
        return fix
    if ctx.quantization is not None and "awq" in ctx.quantization:
        return None
    return replace(fix, note="a GPTQ checkpoint only; AWQ's own kernel refuses the same slice")


def _block_slice(m: Matched, ctx: LogContext, engine: str) -> list[Fix]:
    """A GPU's slice of a quantized weight that is not a whole number of quantization blocks
    (or groups). TP sets the slice: a TP size that leaves whole blocks, the same GPUs kept by
    pipeline parallel. Expert parallel helps only a routed expert's slice (the MoE method's
    message): it keeps experts whole, while a linear layer, a shared expert's among them, is
    split by TP all the same, so it is never offered for a linear layer's message."""
    tp = _flag_word(engine, "--tensor-parallel-size", "--tp-size")
    pp = _flag_word(engine, "--pipeline-parallel-size", "--pp-size")
    ep = _flag_word(engine, "--enable-expert-parallel", f"--ep-size {ctx.tp or 'N'}")
    expert = _EXPERT_SLICE.search(m.line) is not None
    expert_fix = Fix(
        "flag",
        ep,
        note=("N = your --tp-size: " if engine == "sglang" and ctx.tp is None else "")
        + "whole routed experts on each GPU; a shared expert, where the model has one, is "
        f"still split by {tp}, and its slice must be a multiple of the block too",
    )
    sizes = _slice_and_unit(m)
    if sizes is None:
        tp_fix = Fix(
            "flag",
            f"{tp} N",
            note="a smaller N: each GPU's slice must stay a whole number of quantization blocks",
        )
        return [expert_fix, tp_fix] if expert else [tp_fix]
    part, unit = sizes
    factor = unit // math.gcd(part, unit)
    fixes: list[Fix] = []
    if ctx.tp is None:
        fixes.append(
            Fix(
                "flag",
                f"{tp} N {pp} M",
                note=f"N = your {tp} / {factor}, or 1 (one GPU a stage holds whole weights): "
                f"each GPU's slice, {part} now, must be a multiple of {unit}; M = your GPUs / N "
                "keeps them all, split by layers (the model must support pipeline parallelism)",
            )
        )
    else:
        size = _smaller_tp(part, unit, ctx.tp)
        whole = part * ctx.tp
        stages = ctx.tp // size
        if stages > 1:
            fixes.append(
                Fix(
                    "flag",
                    f"{tp} {size} {pp} {stages}",
                    note=f"the same {ctx.tp} GPUs: each GPU's slice becomes {whole // size}, a "
                    f"multiple of {unit}, and the layers are split {stages} ways (the model "
                    "must support pipeline parallelism)",
                )
            )
        fixes.append(
            Fix(
                "flag",
                f"{tp} {size}",
                note=(
                    f"{whole // size} per GPU, a multiple of {unit}, "
                    if size > 1
                    else "one GPU holds whole weights, "
                )
                + "on fewer GPUs, if the model fits on them",
            )
        )
    if expert:
        # Where only one GPU a stage leaves whole blocks, whole experts are the lighter change.
        one = ctx.tp is not None and _smaller_tp(part, unit, ctx.tp) == 1
        fixes = [expert_fix, *fixes] if one else [*fixes, expert_fix]
    return fixes


def _no_pipeline(engine: str, ctx: LogContext) -> tuple[str, list[Fix]]:
    """No pipeline-parallel path for this model: the same GPUs in tensor parallel."""
    tp = _flag_word(engine, "--tensor-parallel-size", "--tp-size")
    pp = _flag_word(engine, "--pipeline-parallel-size", "--pp-size")
    total = (ctx.tp or 1) * ctx.pp if ctx.pp else None
    size = str(total) if total else "N"
    return (
        "this release has no pipeline-parallel path for this model's class",
        [
            Fix(
                "flag",
                f"{tp} {size} {pp} 1",
                note=(
                    "the same GPUs in tensor parallel"
                    + ("" if total else " (N: the TP size times the pipeline stages)")
                    + f"; it must divide the attention heads: patcher check CKPT --tp {size} "
                    "tells"
                ),
            ),
            _pipelined_release(engine, ctx),
        ],
    )


PIPELINED_UNNAMED = (
    "or a release whose class for this model supports pipeline parallelism (the log does not "
    "name the architecture)"
)


def pipelined_release(server: Engine, architecture: str, version: tuple[int, ...] | None) -> Fix:
    """The releases read of ``server`` whose class ``architecture`` has pipeline parallelism
    (the catalogue's ``pp``: vLLM's ``SupportsPP``, SGLang's ``pp_proxy_tensors``)."""
    having = feature_releases(server, "pp", architecture)
    name = ENGINE_NAMES[server]
    if not having:
        read = list(releases(server))
        return Fix(
            "advice",
            f"no {name} release read ({read[0]} to {read[-1]}) gives {architecture} "
            "pipeline parallelism: tensor parallel only",
        )
    # a log with no version (SGLang's names none): the first release read with it
    newer = [r for r in having if version is None or version_key(r) > version]
    return Fix(
        "dependency",
        f"pip install '{server}>={newer[0] if newer else having[0]}'",
        note=f"the releases read whose {architecture} supports pipeline parallelism",
    )


def _pipelined_release(engine: str, ctx: LogContext) -> Fix:
    """The releases read whose class for the log's architecture (vLLM's "Resolved
    architecture" line, 0.10 on; SGLang's "Load weight end. type=") has pipeline parallelism
    (the catalogue's ``pp``: vLLM's ``SupportsPP``, SGLang's ``pp_proxy_tensors``)."""
    if engine not in ("vllm", "sglang") or not ctx.architecture:
        return Fix("advice", PIPELINED_UNNAMED)
    server: Engine = "vllm" if engine == "vllm" else "sglang"
    return pipelined_release(server, ctx.architecture, ctx.version)


# A size held to the GPUs there are ("The number of GPUs per node is not divisible by the
# number of tensor parallelism", vLLM 0.1's Ray placement): the model's dimensions are not
# in question, the devices visible are.
_DEVICES = re.compile(
    r"(?:number of|num) (?:available )?(?:GPUs|devices)|GPUs per node|gpus_per_node|"
    r"gpu count|available GPUs",
    re.I,
)
# More GPUs asked for than the node has ("please ensure that world_size (2) is less than than
# max local gpu count (1)", vLLM 0.7's mp executor; "World size (16) is larger than the
# number of available GPUs (8) in this node", config/parallel.py): sizes that fit, or Ray's
# executor, which spans the GPUs of several nodes.
_TOO_FEW = re.compile(
    r"less than (?:than )?max local gpu count|larger than the number of|"
    r"exceeds the total number of available",
    re.I,
)


def _devices(engine: str, ctx: LogContext, line: str = "") -> tuple[str, list[Fix]]:
    """The GPUs visible to the engine against the parallel sizes: sizes whose product fits
    them (or Ray's executor across nodes), or a multiple of the tensor-parallel size."""
    tp = _flag_word(engine, "--tensor-parallel-size", "--tp-size")
    if _TOO_FEW.search(line):
        pp = _flag_word(engine, "--pipeline-parallel-size", "--pp-size")
        fixes = [
            Fix(
                "flag",
                f"{tp} N {pp} M",
                note="N x M no more than the GPUs this node has (CUDA_VISIBLE_DEVICES)",
            )
        ]
        if engine == "vllm":
            fixes.append(
                Fix(
                    "flag",
                    "--distributed-executor-backend ray",
                    note="for GPUs on several nodes: a Ray cluster spans them",
                )
            )
        return (
            "the parallel sizes ask for more GPUs (tensor x pipeline parallel) than this node "
            "shows the engine",
            fixes,
        )
    shown = (
        Fix(
            "env",
            "CUDA_VISIBLE_DEVICES=" + ",".join(str(i) for i in range(ctx.tp)),
            note=f"as many GPUs as the tensor-parallel size ({ctx.tp}), or a multiple of it",
        )
        if ctx.tp
        else Fix(
            "advice",
            "CUDA_VISIBLE_DEVICES listing as many GPUs as the tensor-parallel "
            "size, or a multiple of it",
        )
    )
    return (
        "the number of GPUs the engine sees is not a multiple of the tensor-parallel size: the "
        "GPUs made visible, not the model, are what to change",
        [
            shown,
            Fix(
                "flag",
                f"{tp} N",
                note="N dividing the number of GPUs, and the model's heads (patcher check CKPT "
                "--tp N tells)",
            ),
        ],
    )


def _async_only(ctx: LogContext) -> tuple[str, list[Fix]]:
    """Pipeline parallelism asked of the LLM class (offline inference), which this release runs
    only in the API server's engine: the same GPUs in tensor parallel, or the server."""
    gpus = ctx.tp * ctx.pp if ctx.tp is not None and ctx.pp is not None else None
    size = str(gpus) if gpus is not None else "N"
    return (
        "the LLM class (offline inference) drives the engine step by step, and this release "
        "runs pipeline parallelism only in the API server's engine (AsyncLLMEngine)",
        [
            Fix(
                "flag",
                f"--tensor-parallel-size {size} --pipeline-parallel-size 1",
                note="in LLM(...): tensor_parallel_size and pipeline_parallel_size=1; the same "
                "GPUs split by tensor parallelism, whose size must divide the attention heads "
                f"(patcher check CKPT --tp {size} tells)",
            ),
            Fix(
                "advice",
                "or serve it with vllm serve (the API server runs AsyncLLMEngine) and send the "
                "prompts to it",
            ),
        ],
    )


def explain_parallel(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    """A parallel size that does not divide what it splits: sizes that divide."""
    engine = _engine(m, ctx)
    line = m.line
    if _NO_PIPELINE.search(line):
        return _no_pipeline(engine, ctx)
    if _ASYNC_ONLY.search(line):
        return _async_only(ctx)
    executor = _EXECUTOR.search(line)
    if executor and engine == "vllm" and declared("vllm", "--distributed-executor-backend"):
        # vLLM 0.5's ParallelConfig: pipeline parallelism ran only on Ray's executor
        other = "mp" if executor.group(1).lower() == "ray" else "ray"
        return (
            "this release runs this parallel mode only on another executor than "
            + executor.group(1),
            [Fix("flag", f"--distributed-executor-backend {other}")],
        )
    if _REFUSED_MODE.search(line) and not _SIZED.search(line):
        # "X does not support prefill context parallelism": a mode refused, not a size.
        return (
            "the engine does not support this parallel mode with this model or feature",
            own_remedy(line, m.template)
            or [Fix("advice", "leave out the parallel mode the message names (its flag)")],
        )
    if _DEVICES.search(line):
        return _devices(engine, ctx, line)
    total = m.number("head", "expert", "num_", "hidden", "intermediate", "vocab", "size_per")
    size = m.number("parallel", "tp", "ep_", "world", "rank", "dcp", "block")
    if total is None or size is None:
        numbers = _numbers(line)
        if len(numbers) >= 2:
            total, size = max(numbers), min(numbers)
    fixes: list[Fix] = []
    expert = re.search(r"expert", line, re.IGNORECASE) is not None
    tp = _flag_word(engine, "--tensor-parallel-size", "--tp-size")
    pp = _flag_word(engine, "--pipeline-parallel-size", "--pp-size")
    # a quantization block or group, or the Marlin kernel's tile (marlin_utils.py's
    # min_thread_k and min_thread_n): a slice each GPU's share must be a multiple of
    blocked = re.search(r"block_[nk]|block size|group.?size|thread_[kn]", line, re.IGNORECASE)
    if total and size and size > 1 and total % size and not blocked:
        smaller = _divisor_below(total, size)
        if smaller is not None:
            fixes.append(Fix("flag", f"{tp} {smaller}", note=f"{smaller} divides {total}"))
        fixes.append(
            Fix(
                "flag",
                f"{tp} 1 {pp} {size}",
                note="the same GPUs split by layers, which has no divisibility rule",
            )
        )
        if expert and re.search(r"\bep\b|ep_size|expert.?parallel", line, re.IGNORECASE):
            ep = _flag_word(engine, "--enable-expert-parallel", "--ep-size")
            fixes.append(
                Fix(
                    "advice",
                    f"drop {ep}",
                    note=f"or an expert-parallel size dividing {total}; the attention heads "
                    f"must still divide by {tp}",
                )
            )
    if blocked:
        fixes += _block_slice(m, ctx, engine)
    named = [f for f in (_marlin_method(f, ctx) for f in own_remedy(line, m.template)) if f]
    if not fixes and _ONLY_VALUE.search(line):
        # The message gives the value itself ("... cannot be other value than 1"): no size
        # to divide by, and the other sizes are not in question.
        return ("the engine takes only the value the message names for this size", named)
    if not fixes and not re.search(r"divisib|divide|multiple of", line, re.IGNORECASE):
        # a combination of parallel settings refused, no size to divide
        return (
            "the engine refuses this combination of parallel settings",
            named or [Fix("advice", "the parallel setting the message names")],
        )
    if not fixes:
        fixes.append(
            Fix(
                "flag",
                f"{tp} N",
                note="a smaller N that divides the model's heads, experts and quantized sizes "
                "(the message does not carry them); patcher check CKPT --tp N tells",
            )
        )
    return (
        "a parallel size does not divide the model's dimension it splits (heads, experts, or "
        "a quantization block's slice): choose sizes that divide",
        _unique([*named, *fixes]),
    )
