"""The weights a config implies: a parameter count from its sizes, and the bytes a parameter
takes in its format, so that a weights figure (the index's total_size, or ``--weights``) far
from it is said to be implausible before memory is judged on it.

The count is the decoder's: embeddings (and an untied head), each layer's attention (MLA's
low-rank projections, or GQA's), its MLP or experts (routed and shared, dense layers first).
A quantized checkpoint keeps some tensors in 16 bits, so the figure is a range: every weight
in the quantized format, or only the MLP's and experts'. Norms, biases and routers are left
out (well under 1%)."""

from __future__ import annotations

from typing import Any

from patcher.units import GIB

# Bytes per parameter of the formats a quantization config names: 4-bit values with one 8-bit
# scale per 16 (NVFP4) or per 32 (MXFP4), 8 bits, or the bits a GPTQ/AWQ config gives.
FORMAT_BYTES = {"nvfp4": 0.5625, "mxfp4": 0.53125, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
DTYPE_BYTES = {"bfloat16": 2.0, "float16": 2.0, "float32": 4.0}
PLAUSIBLE = (0.5, 2.0)  # how far below the lower or above the upper figure is still plausible


def _int(model: dict[str, Any], key: str) -> int:
    value = model.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def parameters(model: dict[str, Any]) -> tuple[int, int] | None:
    """(all parameters, those in MLPs and experts) of a decoder config, or None when the
    config lacks the sizes."""
    hidden, layers, vocab = (
        _int(model, k) for k in ("hidden_size", "num_hidden_layers", "vocab_size")
    )
    heads = _int(model, "num_attention_heads")
    if not (hidden and layers and vocab and heads):
        return None
    if _int(model, "kv_lora_rank"):
        rank, rope = _int(model, "kv_lora_rank"), _int(model, "qk_rope_head_dim")
        nope, value = _int(model, "qk_nope_head_dim"), _int(model, "v_head_dim")
        q_rank = _int(model, "q_lora_rank")
        query = (
            hidden * q_rank + q_rank * heads * (nope + rope)
            if q_rank
            else hidden * heads * (nope + rope)
        )
        attention = (
            query + hidden * (rank + rope) + rank * heads * (nope + value) + heads * value * hidden
        )
    else:
        kv_heads = _int(model, "num_key_value_heads") or heads
        head_dim = _int(model, "head_dim") or hidden // heads
        attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    intermediate = _int(model, "intermediate_size")
    experts = next(
        (
            _int(model, k)
            for k in ("n_routed_experts", "num_experts", "num_local_experts")
            if _int(model, k)
        ),
        0,
    )
    if experts:
        expert_size = _int(model, "moe_intermediate_size") or intermediate
        dense = min(_int(model, "first_k_dense_replace"), layers)
        per_moe_layer = (experts + _int(model, "n_shared_experts")) * 3 * hidden * expert_size
        mlp = dense * 3 * hidden * intermediate + (layers - dense) * per_moe_layer
    else:
        mlp = layers * 3 * hidden * intermediate
    tied = model.get("tie_word_embeddings") is True
    embeddings = vocab * hidden * (1 if tied else 2)
    return layers * attention + mlp + embeddings, mlp


def _format_bytes(config: dict[str, Any], hf_quant: dict[str, Any] | None) -> tuple[float, str]:
    """Bytes per quantized parameter, and the format's name."""
    quant = config.get("quantization_config")
    text = config.get("text_config")
    if not isinstance(quant, dict) and isinstance(text, dict):
        quant = text.get("quantization_config")
    quant = quant if isinstance(quant, dict) else {}
    nested = quant.get("quantization")
    inner: dict[str, Any] = nested if isinstance(nested, dict) else {}
    algo = str(
        quant.get("quant_algo")
        or inner.get("quant_algo")
        or ((hf_quant or {}).get("quantization") or {}).get("quant_algo")
        or ""
    ).lower()
    method = str(quant.get("quant_method") or "").lower()
    if "fp4" in algo or "fp4" in method:
        return FORMAT_BYTES["nvfp4" if "nv" in algo + method else "mxfp4"], algo or method
    if method == "mxfp4":
        return FORMAT_BYTES["mxfp4"], method
    if "fp8" in algo or method in ("fp8", "fbgemm_fp8"):
        return FORMAT_BYTES["fp8"], algo or method
    if method in ("gptq", "awq") and isinstance(quant.get("bits"), int):
        return quant["bits"] / 8, f"{method} {quant['bits']}-bit"
    if method == "bitsandbytes":
        return (
            (0.5, "bitsandbytes 4-bit")
            if quant.get("load_in_4bit")
            else (1.0, "bitsandbytes 8-bit")
        )
    model = text if isinstance(text, dict) else config
    dtype = str(
        model.get("torch_dtype") or model.get("dtype") or config.get("torch_dtype") or "bfloat16"
    )
    return DTYPE_BYTES.get(dtype, 2.0), dtype


def implied_weights(
    config: dict[str, Any] | None, hf_quant: dict[str, Any] | None
) -> tuple[float, float, str] | None:
    """(lower GiB, upper GiB, how) the config implies for all weights together, or None."""
    if not isinstance(config, dict):
        return None
    text = config.get("text_config")
    counted = parameters(text if isinstance(text, dict) else config)
    if counted is None:
        return None
    total, mlp = counted
    per, name = _format_bytes(config, hf_quant)
    low = total * per / GIB
    high = (mlp * per + (total - mlp) * max(per, 2.0)) / GIB
    return low, high, f"{total / 1e9:.1f}B parameters in {name}"


def weights_warning(
    weights_gib: float, config: dict[str, Any] | None, hf_quant: dict[str, Any] | None
) -> str | None:
    """Why ``weights_gib`` is implausible for the config, or None when it is plausible or the
    config does not say."""
    implied = implied_weights(config, hf_quant)
    if implied is None or weights_gib <= 0:
        return None
    low, high, how = implied
    if PLAUSIBLE[0] * low <= weights_gib <= PLAUSIBLE[1] * high:
        return None
    return (
        f"{weights_gib:.1f} GiB of weights is implausible for this config ({how}: "
        f"{low:.0f} to {high:.0f} GiB); check --weights (all GPUs together, e.g. 590GB) or "
        "the index's total_size"
    )
