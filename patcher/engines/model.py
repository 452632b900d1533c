"""One entry point to the engine model: the view of a checkpoint from one engine version."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

from patcher.engines import sglang, vllm, vllm_kv
from patcher.engines.engine import Engine
from patcher.engines.files import ConfigFiles, read_config_files
from patcher.engines.gpus import Gpu
from patcher.engines.numbers import check_numbers
from patcher.engines.view import EngineView
from patcher.errors import TargetError
from patcher.store.checkpoint import open_checkpoint


def derive(
    engine: Engine,
    files: ConfigFiles,
    gpu: Gpu | None = None,
    *,
    kv_cache_dtype: str | None = None,
) -> EngineView:
    """What ``engine`` derives from ``files`` (and, with ``gpu``, whether it can start there);
    with ``kv_cache_dtype``, as started with ``--kv-cache-dtype`` that (None: not given)."""
    check_numbers(files)
    if gpu is not None and gpu.is_cpu:
        gpu = None  # the GPU rules (attention backends, capabilities) do not apply
    view = (
        sglang.derive(engine, files, gpu, kv_cache_dtype)
        if engine.name == "sglang"
        else vllm.derive(engine, files, gpu, kv_cache_dtype)
    )
    unknowns = _unknowns(engine, files, gpu)
    text = files.config.get("text_config") if isinstance(files.config, dict) else None
    model = text if isinstance(text, dict) else files.config or {}
    if kv_cache_dtype not in (None, "auto") and "index_topk" in model:
        # DeepseekV32 and GlmMoeDsa rewrite the choice (fp8 -> fp8_ds_mla, bfloat16 -> auto).
        unknowns += (f"what a sparse-attention model's KV cache is with {kv_cache_dtype}",)
    return replace(view, unknowns=unknowns) if unknowns and not view.startup_errors else view


def _unknowns(engine: Engine, files: ConfigFiles, gpu: Gpu | None) -> tuple[str, ...]:
    """What the engine model cannot tell about these files: said, never guessed as 'yes' (a
    release not read is said by the view's verdict and the reading's note)."""
    config: dict[str, Any] = files.config if isinstance(files.config, dict) else {}
    nested = config.get("text_config")
    text: dict[str, Any] = nested if isinstance(nested, dict) else config
    found: list[str] = []
    if not config.get("architectures") and not text.get("model_type"):
        found.append("config.json names no model (no architectures, no model_type)")
    if engine.name == "sglang" and gpu is not None:
        found.append("which SGLang attention backend takes this config on this GPU (not modelled)")
    return tuple(found)


def engine_view(
    checkpoint: Path | str, engine: Engine, gpu: Gpu | None = None, *, revision: str | None = None
) -> EngineView:
    """:func:`derive` on a checkpoint's files as they are now."""
    return derive(engine, read_config_files(open_checkpoint(checkpoint, revision)), gpu)


def kv_cache_dtype_choices(engine: Engine) -> tuple[str, ...]:
    """The values ``engine``'s ``--kv-cache-dtype`` takes."""
    if engine.name == "sglang":
        return sglang.KV_CACHE_DTYPES
    return vllm_kv.kv_cache_dtype_choices(engine)


def refuse_unknown_kv_cache_dtype(engine: Engine, value: object, source: str | None) -> None:
    """Refuse a ``--kv-cache-dtype`` value that ``engine`` does not take (its argparse would),
    naming the profile line when there is one."""
    choices = kv_cache_dtype_choices(engine)
    if not isinstance(value, str) or value not in choices:
        raise TargetError(
            f"{engine} has no --kv-cache-dtype {value} (it takes {', '.join(choices)})",
            file=source,
            pointer="/kv_cache_dtype" if source else None,
            hint="choose one of those, or leave it out: 'auto' resolves from the checkpoint",
        )


def edit_takes_effect(engine: Engine, files: ConfigFiles) -> bool:
    """Whether ``engine`` follows an edit of max_position_embeddings (not so for YaRN configs
    before vLLM 0.33)."""
    config = copy.deepcopy(files.config or {})
    text = config.get("text_config")
    model = text if isinstance(text, dict) else config
    probe = 12_345
    model["max_position_embeddings"] = probe
    return bool(
        derive(
            engine, ConfigFiles(config, files.hf_quant, files.source, files.weights)
        ).max_model_len.value
        == probe
    )
