"""check's memory finding: the KV check vLLM runs after the weights load, judged before."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from typing import Any

from patcher.advice.finding import Finding
from patcher.advice.kvbudget import budget_of_files, index_weights
from patcher.engines.gpus import Gpu
from patcher.engines.view import EngineView
from patcher.errors import PatcherError
from patcher.store.checkpoint import Checkpoint
from patcher.units import GIB


def memory_finding(
    ckpt: Checkpoint,
    parsed: Any,
    view: EngineView,
    device: Gpu,
    tensor_parallel: int,
    kv_cache_memory_gib: float | None,
    kv_cache_dtype: str | None = None,
) -> Iterator[Finding]:
    """The KV check after the weights load: the context the engine derives does not fit in
    the KV cache each GPU has left (kv-budget's arithmetic). Unknown memory: no finding."""
    try:
        weights = None if kv_cache_memory_gib is not None else index_weights(ckpt)
        budget = budget_of_files(
            ckpt.root,
            parsed,
            ckpt.path("config.json"),
            gpu=device,
            weights=weights,
            tp=tensor_parallel,
            engine=view.engine,
            kv_cache_memory_gib=kv_cache_memory_gib,
            kv_dtype=kv_cache_dtype or "auto",
        )
    except PatcherError:
        return
    context = view.max_model_len.value
    if not isinstance(context, int) or context <= budget.max_tokens:
        return
    flags = ["--tensor-parallel-size", str(tensor_parallel)] if tensor_parallel > 1 else []
    if kv_cache_memory_gib is not None:
        flags += ["--kv-cache-memory-bytes", str(int(kv_cache_memory_gib * GIB))]
    if kv_cache_dtype is not None:
        flags += ["--kv-cache-dtype", kv_cache_dtype]
    where = f"{budget.bytes_per_token:,} bytes per token, {budget.kv_dtype}"
    if not budget.suggested_context:
        yield Finding(
            "kv-memory",
            "model.safetensors.index.json",
            "/metadata/total_size",
            f"{view.engine} loads the weights, then fails its KV check: no KV cache fits "
            f"beside {budget.weights_per_gpu_gib:.1f} GiB of weights per GPU ({where})",
            None,
            None,
            note="more GPUs (--tp), a larger GPU, or a smaller checkpoint",
        )
        return
    yield Finding(
        "kv-memory",
        "config.json",
        "",
        f"{view.engine} loads the weights, then fails its KV check: {context:,} tokens do not "
        f"fit, {budget.max_tokens:,} do ({where})",
        None,
        shlex.join(
            [
                "vllm",
                "serve",
                *shlex.split(ckpt.arg),  # the argument as given, quoted once by the join
                *flags,
                "--max-model-len",
                str(budget.suggested_context),
            ]
        )
        if view.engine.name == "vllm"
        else None,
        note="patcher plan prints the whole launch; patcher run adds the flag",
    )
