"""SGLang's context length and KV-cache dtype (read in sglang 0.5.23).

- ``srt/utils/hf_transformers/common.py`` get_context_length: the first of
  ``CONTEXT_LENGTH_KEYS`` times the rope factor, where the factor is 1 when
  ``rope_scaling`` has ``original_max_position_embeddings`` (YaRN) or is llama3;
- ``srt/mem_cache/kv_cache_dtype.py``: ``--kv-cache-dtype auto`` is ``fp8_e4m3`` when the
  ModelOpt quant config's ``kv_cache_quant_algo`` is ``"FP8"`` (the flat layout maps a
  ``kv_cache_scheme`` of 8-bit floats to it), else the model dtype.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from patcher.engines import vllm
from patcher.engines.engine import Engine
from patcher.engines.files import GENERATION_FILE, ConfigFiles, readable_generation
from patcher.engines.gpus import Gpu
from patcher.engines.view import Derived, EngineView, StartupError

CONTEXT_LENGTH_KEYS = (
    "max_sequence_length",
    "seq_length",
    "max_seq_len",
    "model_max_length",
    "max_position_embeddings",
)


def context_length(text: Mapping[str, Any]) -> Derived:
    """The context length SGLang derives when no ``--context-length`` is given."""
    rope = text.get("rope_scaling") or text.get("rope_parameters")
    factor: Any = 1
    if isinstance(rope, dict) and rope:
        factor = rope.get("factor", 1)
        if "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3":
            factor = 1
    for key in CONTEXT_LENGTH_KEYS:
        value = text.get(key)
        if value is not None:
            note = f" x factor {factor:g}" if factor != 1 else ""
            return Derived(int(factor * value), f"{key} {value}{note}")
    return Derived(2048, "no length key: 2048")


def model_dtype(text: Mapping[str, Any], base: str) -> Derived:
    """What ``--dtype auto`` resolves to (srt/configs/model_config.py _get_and_verify_dtype, on
    the text config): float32 or no dtype becomes float16 (bfloat16 for Gemma), whatever the
    weights were trained in; any other dtype is kept."""
    declared, pointer = None, None
    for key in ("dtype", "torch_dtype"):
        if text.get(key) is not None:
            declared, pointer = text[key], f"{base}/{key}"
            break
    at = f"config.json {pointer}"
    name = vllm.DTYPE_NAMES.get(declared) if isinstance(declared, str) else None
    if declared is not None and name is None:
        return Derived(declared, f"{at}, a dtype patcher does not model", "config.json", pointer)
    if name not in (None, "float32"):
        return Derived(name, at, "config.json", pointer)
    to = "bfloat16" if str(text.get("model_type", "")).startswith("gemma") else "float16"
    was = f"{at} float32" if name else "no dtype in config.json: float32"
    return Derived(to, f"{was}, downcast to {to}", "config.json", pointer)


# srt/configs/model_config.py get_default_sampling_params, with the server's default
# --sampling-defaults model: these generation_config.json values (max_new_tokens is not one).
SAMPLING_KEYS = ("repetition_penalty", "temperature", "top_k", "top_p", "min_p")


def sampling_defaults(files: ConfigFiles) -> Derived:
    """The request defaults SGLang takes from generation_config.json (through transformers 5's
    GenerationConfig, which has no defaults of its own to fill in)."""
    generation, why = readable_generation(files)
    if generation is None:
        return Derived({}, why)
    found = {k: generation[k] for k in SAMPLING_KEYS if generation.get(k) is not None}
    return Derived(found, why, GENERATION_FILE)


NO_CAP = Derived(None, "SGLang does not read max_new_tokens from generation_config.json")


def _ids(value: Any) -> set[int] | None:
    """An eos_token_id as SGLang reads it: one token id or a list of them (None otherwise)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return {value}
    if isinstance(value, list) and all(type(v) is int for v in value):
        return set(value)
    return None


def stop_ids(files: ConfigFiles) -> Derived:
    """The ids SGLang's scheduler stops on besides the tokenizer's (``_get_hf_eos_token_id``):
    config.json's root eos_token_id and the generation config's together, a falsy one of the
    latter ignored."""
    generation, why = readable_generation(files)
    found: set[int] = set()
    sources = []
    for name, value in (
        ("config.json", (files.config or {}).get("eos_token_id")),
        (GENERATION_FILE, (generation or {}).get("eos_token_id") or None),
    ):
        if value is None:
            continue
        ids = _ids(value)
        if ids is None:
            return Derived(None, f"{name} /eos_token_id is not token ids", name, "/eos_token_id")
        found |= ids
        sources.append(f"{name} /eos_token_id")
    if not found:
        where = "or the generation config" if generation is not None else f"({why})"
        return Derived(None, f"no eos_token_id in config.json {where}")
    reason = " and ".join(sources) + (", together" if len(sources) > 1 else "")
    if generation is None:
        reason += f"; {why}"
    return Derived(sorted(found), reason)


def _kv_algo(quant: Mapping[str, Any]) -> tuple[Any, str]:
    inner = quant.get("quantization")
    if isinstance(inner, dict):
        return inner.get("kv_cache_quant_algo"), "/quantization/kv_cache_quant_algo"
    scheme = quant.get("kv_cache_scheme")
    if isinstance(scheme, dict):
        is_fp8 = scheme.get("type") == "float" and scheme.get("num_bits") == 8
        return ("FP8" if is_fp8 else None), "/kv_cache_scheme"
    return quant.get("kv_cache_quant_algo"), "/kv_cache_quant_algo"


# --kv-cache-dtype's choices in sglang 0.5.23 (srt/arg_groups/fields/model.py).
KV_CACHE_DTYPES = (
    "auto",
    "fp8_e5m2",
    "fp8_e4m3",
    "mxfp8",
    "bf16",
    "bfloat16",
    "nvfp4",
    "fp4_mx_block16",
)


def _modelopt_method(quant: dict[str, Any]) -> str:
    """The method SGLang resolves a ModelOpt checkpoint to, by its ``quant_algo``
    (configs/model_config.py ``_parse_modelopt_quant_config``, 0.5.23): FP4 algorithms are
    ``modelopt_fp4``, FP8 ``modelopt_fp8``, MXFP8 ``mxfp8``, a mixed-precision one
    ``modelopt_mixed`` with NVFP4 layers (else ``w4afp8``); any other stays ``modelopt``."""
    inner = quant.get("quantization", quant)
    inner = inner.get("quantization", inner) if isinstance(inner, dict) else {}
    algo = inner.get("quant_algo") if isinstance(inner, dict) else None
    if not isinstance(algo, str):
        return "modelopt"
    if algo == "MIXED_PRECISION":
        layers = inner.get("quantized_layers") or {}
        nvfp4 = isinstance(layers, dict) and any(
            isinstance(info, dict) and str(info.get("quant_algo", "")).upper() in FP4_LAYER_ALGOS
            for info in layers.values()
        )
        return "modelopt_mixed" if nvfp4 else "w4afp8"
    if "FP4" in algo:  # "NVFP4" among them
        return "modelopt_fp4"
    return {"FP8": "modelopt_fp8", "MXFP8": "mxfp8"}.get(algo, "modelopt")


FP4_LAYER_ALGOS = ("NVFP4", "W4A16_NVFP4")
# SGLang's KV pool is sized by its model runner from --mem-fraction-static, whose default
# (arg_groups/memory_hook.py) depends on the GPU's memory, chunked prefill and CUDA graphs.
POOL_NOT_MODELLED = (
    "SGLang sizes its pool itself (--mem-fraction-static by the GPU's memory, pages of one "
    "token), which is not modelled: this is vLLM's arithmetic, an estimate"
)


def derive(
    engine: Engine, files: ConfigFiles, gpu: Gpu | None, kv_flag: str | None = None
) -> EngineView:
    """Context length and KV dtype as SGLang derives them (quantization as it resolves a
    ModelOpt checkpoint, else as declared); with
    ``kv_flag``, as started with ``--kv-cache-dtype KV_FLAG``."""
    config = files.config
    if config is None:
        none = Derived(None, "no config.json")
        error = StartupError(
            "config.json not found",
            file="config.json",
            note="download the checkpoint's config.json with its other files",
        )
        return EngineView(engine, gpu, none, none, none, False, None, (error,))
    nested = config.get("text_config")
    text: dict[str, Any] = nested if isinstance(nested, dict) else config
    quant, source = config.get("quantization_config"), "config.json /quantization_config"
    if quant is None and files.hf_quant is not None:
        quant, source = files.hf_quant, "hf_quant_config.json "
    kv = Derived("auto", "no KV directive: the model dtype")
    method = None
    if isinstance(quant, dict):
        producer = quant.get("producer")
        modelopt = quant.get("quant_method") == "modelopt" or (
            isinstance(producer, dict) and producer.get("name") == "modelopt"
        )
        method = _modelopt_method(quant) if modelopt else quant.get("quant_method")
        algo, pointer = _kv_algo(quant) if modelopt else (None, "")
        if isinstance(algo, str) and algo.upper() == "FP8":
            kv = Derived("fp8_e4m3", f"{source.rstrip()}{pointer}")
    if kv_flag is not None and kv_flag != "auto":  # configure_kv_cache_dtype: the flag wins
        kv = Derived(kv_flag, f"--kv-cache-dtype {kv_flag} (the target's choice)")
    mla = text.get("kv_lora_rank") is not None
    return EngineView(
        engine,
        gpu,
        context_length(text),
        kv,
        Derived(method, "as declared"),
        mla,
        None,
        (),
        model_dtype(text, "/text_config" if isinstance(nested, dict) else ""),
        sampling_defaults(files),
        NO_CAP,
        stop_ids(files),
    )
