"""``kv-budget``: KV-cache bytes per token from the config, and the longest context that fits.

MLA (DeepSeek-V3 style: ``kv_lora_rank``) caches one latent per layer per token,
``(kv_lora_rank + qk_rope_head_dim) x bytes``, and tensor parallelism does not divide it:
every rank holds the whole latent cache. GQA/MHA caches keys and values,
``2 x num_key_value_heads x head_dim x bytes`` per layer, and tensor parallelism divides the
heads (down to one per rank). Per GPU::

    bytes_per_token = layers x per_layer_bytes            (per_layer divided by TP for GQA)
    free            = gpu_memory x utilization - weights / TP
    max_tokens      = free / bytes_per_token

Activations, CUDA graphs and the engine's block rounding are not counted, so the figure is an
upper bound; the suggested context is rounded down to a multiple of 1,024.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from patcher.check import FP8_KV_POINTERS, dig, kv_label
from patcher.checkpoint import open_checkpoint
from patcher.errors import DoesNotApplyError, PatcherError

KvDtype = Literal["auto", "fp8", "bf16"]
GIB = 1024**3
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "fp8": 1, "bf16": 2}


@dataclass(frozen=True, slots=True)
class KvBudget:
    """The estimate and the numbers it came from."""

    checkpoint: Path
    attention: Literal["MLA", "GQA"]
    layers: int
    per_layer_elements: int
    kv_dtype: str
    element_bytes: int
    tp: int
    bytes_per_token: int
    free_bytes: int
    max_tokens: int
    config_context: int | None
    suggested_context: int | None

    @property
    def fits(self) -> bool:
        """Whether the config's own context fits."""
        return self.config_context is not None and self.config_context <= self.max_tokens

    def command(self) -> str | None:
        """The ``set-context-length`` command that would make the server start."""
        if self.fits or not self.suggested_context:
            return None
        return (
            f"patcher apply {self.checkpoint} set-context-length "
            f"--set length={self.suggested_context}"
        )


def _need(model: dict[str, Any], key: str, file: Path) -> int:
    value = model.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise DoesNotApplyError(
            f"expected a positive integer, found {json.dumps(value)}",
            file=file,
            pointer=f"/{key}",
            hint="kv-budget needs a decoder config (num_hidden_layers and attention sizes)",
        )
    return value


def _element_bytes(
    kv_dtype: KvDtype, config: dict[str, Any], legacy: Any, model: dict[str, Any]
) -> tuple[str, int]:
    if kv_dtype != "auto":
        return kv_dtype, DTYPE_BYTES[kv_dtype]
    docs = {"config.json": config, "hf_quant_config.json": legacy}
    for name, keys in FP8_KV_POINTERS:
        label = kv_label(dig(docs[name], keys))
        if label in ("FP8", "INT8"):
            return f"auto ({label} from {name})", 1
    dtype = (
        model.get("torch_dtype")
        or model.get("dtype")
        or config.get("torch_dtype")
        or config.get("dtype")
        or "bfloat16"
    )
    return f"auto ({dtype})", DTYPE_BYTES.get(str(dtype), 2)


def kv_budget(
    checkpoint: Path | str,
    *,
    gpu_memory_gib: float,
    weights_gib: float,
    tp: int = 1,
    kv_dtype: KvDtype = "auto",
    utilization: float = 0.9,
) -> KvBudget:
    """Estimate KV-cache bytes per token and the longest context that fits on each GPU."""
    ckpt = open_checkpoint(checkpoint)
    path = ckpt.path("config.json")
    try:
        config = json.loads(path.read_bytes())
        legacy_path = ckpt.path("hf_quant_config.json")
        legacy = json.loads(legacy_path.read_bytes()) if legacy_path.is_file() else None
    except (OSError, ValueError) as exc:
        raise PatcherError(f"cannot read ({exc})", file=path, hint="fix the file") from None
    model = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    layers = _need(model, "num_hidden_layers", path)
    if "kv_lora_rank" in model:
        attention: Literal["MLA", "GQA"] = "MLA"
        per_layer = _need(model, "kv_lora_rank", path) + _need(model, "qk_rope_head_dim", path)
        per_rank = per_layer
    else:
        attention = "GQA"
        heads = _need(model, "num_attention_heads", path)
        kv_heads = model.get("num_key_value_heads") or heads
        head_dim = model.get("head_dim") or _need(model, "hidden_size", path) // heads
        per_layer = 2 * kv_heads * head_dim
        per_rank = 2 * max(1, math.ceil(kv_heads / tp)) * head_dim
    label, element = _element_bytes(kv_dtype, config, legacy, model)
    bytes_per_token = layers * per_rank * element
    free = int(gpu_memory_gib * GIB * utilization - weights_gib * GIB / tp)
    max_tokens = max(0, free // bytes_per_token)
    context = model.get("max_position_embeddings")
    context = context if isinstance(context, int) else None
    suggested = (max_tokens // 1024) * 1024 or None
    if context is not None and suggested is not None:
        suggested = min(suggested, context)
    return KvBudget(
        ckpt.root,
        attention,
        layers,
        per_layer,
        label,
        element,
        tp,
        bytes_per_token,
        free,
        max_tokens,
        context,
        suggested,
    )
