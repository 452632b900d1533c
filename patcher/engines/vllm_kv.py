"""vLLM's quantization and KV-cache rules per version: the quantization method a checkpoint
names, what ``--kv-cache-dtype auto`` resolves to, and the attention backends that accept a
config on a GPU (MLA per compute capability). Read from vLLM's own code as ``vllm.py`` says."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from patcher.engines.engine import Engine
from patcher.engines.files import ConfigFiles
from patcher.engines.gpus import Gpu
from patcher.engines.view import Derived, StartupError

# arg_utils.py calls resolve_kv_cache_dtype_string('auto', ...) from 0.14.0 (PR #30785).
KV_AUTO_FROM_CHECKPOINT = (0, 14, 0)


MODELOPT_KV_MAP = {"fp8": "fp8_e4m3", "nvfp4": "nvfp4"}


# --kv-cache-dtype's choices (CacheDType in config/cache.py; argparse refuses any other), by
# the release that added them: read from every minor release 0.10.1 to 0.33.0
# (snapshots/engines/rules-vllm.json, tools/record_rules.py). None was removed.
KV_CACHE_DTYPES_ADDED: tuple[tuple[tuple[int, int, int], tuple[str, ...]], ...] = (
    ((0, 10, 0), ("auto", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc")),
    ((0, 11, 0), ("bfloat16",)),
    ((0, 12, 0), ("fp8_ds_mla",)),
    ((0, 18, 0), ("float16",)),
    (
        (0, 20, 0),
        (
            "turboquant_k8v4",
            "turboquant_4bit_nc",
            "turboquant_k3v4_nc",
            "turboquant_3bit_nc",
            "int8_per_token_head",
            "fp8_per_token_head",
            "nvfp4",
        ),
    ),
    ((0, 25, 0), ("int4_per_token_head",)),
    ((0, 28, 0), ("nvfp4_4over6",)),
    ((0, 30, 0), ("nvfp4_ds_mla",)),
    ((0, 32, 0), ("ultraquant_4bit",)),
    ((0, 33, 0), ("octave_k3v4", "octave_k3v3", "octave_k3v3_compact")),
)


def kv_cache_dtype_choices(engine: Engine) -> tuple[str, ...]:
    """The values this release's ``--kv-cache-dtype`` takes."""
    added = (names for first, names in KV_CACHE_DTYPES_ADDED if engine.version >= first)
    return tuple(name for names in added for name in names)


# From this release VllmConfig refuses an explicit float16/bfloat16 KV cache that is not the
# model dtype (_reject_mismatched_float_kv_cache; read in every minor release: none before).
FLOAT_KV_MATCHES_MODEL_FROM = (0, 33, 0)


def float_kv_mismatch(engine: Engine, kv: Derived, dtype: Derived) -> StartupError | None:
    """vLLM 0.33's refusal of ``--kv-cache-dtype bfloat16`` on a float16 model (and back)."""
    if not engine.at_least(*FLOAT_KV_MATCHES_MODEL_FROM) or kv.file is not None:
        return None
    if kv.value not in ("float16", "bfloat16") or dtype.value in (None, kv.value):
        return None
    allowed = f"`auto` or `{dtype.value}`" if dtype.value in ("float16", "bfloat16") else "`auto`"
    return StartupError(
        f'kv_cache_dtype="{kv.value}" is incompatible with dtype="{dtype.value}". Please set '
        f"`--kv-cache-dtype` to {allowed}.",
        code="kv-dtype-mismatch",
        flag="--kv-cache-dtype auto",
        note=f"{engine} runs a {kv.value} KV cache only with a {kv.value} model "
        f"(this one is {dtype.value}: {dtype.reason})",
    )


def chosen_kv_cache_dtype(flag: str) -> Derived:
    """What ``--kv-cache-dtype FLAG`` (not auto) makes the KV cache: the flag wins over the
    checkpoint's directive (resolve_kv_cache_dtype_string returns it as given, and the KV
    scales the checkpoint ships are then set to 1.0: quantization/kv_cache.py)."""
    return Derived(flag, f"--kv-cache-dtype {flag} (the target's choice)")


# get_min_capability() of each quantization config (x10: 89 means 8.9).
MIN_CAPABILITY = {
    "fp8": 75,
    "modelopt_fp4": 75,
    "modelopt_mxfp8": 100,
    "mxfp4": 80,
    "bitsandbytes": 70,
    "compressed-tensors": 70,
    "awq": 75,
    "gptq": 60,
    "auto_gptq": 60,
}


# config/vllm.py _get_quantization_config: the model dtype must be one of the method's
# get_supported_act_dtypes() (recorded at 0.16.0 and 0.33.0, alike for these methods; awq and
# gptq are left out: on a GPU vLLM converts them to Marlin kernels with lists of their own).
ACT_DTYPES = {
    "mxfp4": ("bfloat16",),
    "gpt_oss_mxfp4": ("bfloat16",),
    "modelopt": ("bfloat16", "float16"),
    "modelopt_fp4": ("bfloat16", "float16", "float8_e4m3fn"),
    "modelopt_mxfp8": ("bfloat16",),
    "modelopt_mixed": ("bfloat16", "float16"),
    "fp8": ("bfloat16", "float16"),
    "bitsandbytes": ("float32", "float16", "bfloat16"),
    "compressed-tensors": ("float32", "float16", "bfloat16"),
}


# From this release every dense MLA backend lists float16, and TRITON_MLA (the one on SM12x)
# takes an FP8 cache (PR #34597). Read from each backend's supported_kv_cache_dtypes in the
# wheels and venvs of 0.13.0 to 0.23.0, 0.30.0, 0.32.0 and 0.33.0
# (snapshots/engines/mla-backends-vllm.json, tools/record_mla_backends.py).
MLA_DTYPES_WIDENED = (0, 18, 0)
# Before this release no dense MLA backend lists bfloat16 (0.13.0, 0.14.0 read; PR #32795).
MLA_BFLOAT16_FROM = (0, 15, 0)


def backend_table(engine: Engine) -> dict[str, tuple[tuple[int, ...], tuple[str, ...]]]:
    """Dense MLA backends: compute-capability majors and KV dtypes (v1/attention/backends/mla)."""
    if engine.at_least(*MLA_DTYPES_WIDENED[:2]):
        fp8: tuple[str, ...] = ("auto", "float16", "bfloat16", "fp8", "fp8_e4m3")
        dense: tuple[str, ...] = ("auto", "float16", "bfloat16")
        triton: tuple[str, ...] = fp8
    elif engine.at_least(*MLA_BFLOAT16_FROM[:2]):
        fp8 = ("auto", "bfloat16", "fp8", "fp8_e4m3")
        dense = ("auto", "bfloat16")
        triton = dense
    else:
        fp8 = ("auto", "fp8", "fp8_e4m3")
        dense = ("auto",)
        triton = dense
    table = {
        "FLASHINFER_MLA": ((10,), fp8),
        "CUTLASS_MLA": ((10,), fp8),
        "FLASH_ATTN_MLA": ((9,), dense),
        "FLASHMLA": ((9, 10), fp8),
        "TRITON_MLA": ((), triton),  # any capability
    }
    if engine.at_least(*TOKENSPEED_FROM):
        table["TOKENSPEED_MLA"] = ((10,), ("fp8", "fp8_e4m3"))
    return table


def mla_dtype_from(backend: str, dtype: str) -> tuple[int, ...] | None:
    """The first vLLM release whose dense MLA ``backend`` lists the KV ``dtype`` (as
    :func:`backend_table` has the readings), or None when none read does."""
    for version in ((0, 13, 0), MLA_BFLOAT16_FROM, MLA_DTYPES_WIDENED):
        listed = backend_table(Engine("vllm", version)).get(backend)
        if listed is not None and dtype in listed[1]:
            return version
    return None


# TOKENSPEED_MLA (an FP8-only SM100 backend) is in the wheels from 0.21.0, second on SM10
# (tools/record_mla_backends.py finds every backend of v1/attention/backends/mla/). Its
# supports_combination also needs the separate tokenspeed_mla package and DeepSeek-R1's
# dimensions, which patcher cannot see: it is never counted as accepting a config (on SM10
# FLASHINFER_MLA takes all it would).
TOKENSPEED_FROM = (0, 21, 0)
TOKENSPEED_UNSEEN = "tokenspeed_mla package and DeepSeek-R1 dimensions (not judged by patcher)"


def mla_priority(engine: Engine, gpu: Gpu) -> tuple[str, ...]:
    """platforms/cuda.py _get_backend_priorities(use_mla=True, capability)."""
    major = gpu.capability[0]
    if major == 10:
        tokenspeed = ("TOKENSPEED_MLA",) if engine.at_least(*TOKENSPEED_FROM) else ()
        return (
            "FLASHINFER_MLA",
            *tokenspeed,
            "CUTLASS_MLA",
            "FLASH_ATTN_MLA",
            "FLASHMLA",
            "TRITON_MLA",
        )
    if major == 12 and engine.at_least(0, 33):
        return ("TRITON_MLA",)
    return ("FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "TRITON_MLA")


def backend_rejections(engine: Engine, gpu: Gpu, kv: str) -> dict[str, list[str]]:
    """Each MLA backend on this GPU, with vLLM's reasons for refusing it (empty: accepted)."""
    table = backend_table(engine)
    reasons: dict[str, list[str]] = {}
    for name in mla_priority(engine, gpu):
        majors, dtypes = table[name]
        found = []
        if kv not in dtypes:
            found.append("kv_cache_dtype not supported")
        if majors and gpu.capability[0] not in majors:
            found.append("compute capability not supported")
        if name == "TOKENSPEED_MLA":
            found.append(TOKENSPEED_UNSEEN)
        reasons[name] = found
    return reasons


def quant_config(files: ConfigFiles) -> tuple[dict[str, Any] | None, str | None]:
    """transformers_utils/config.py: config.json's quantization_config, else
    hf_quant_config.json; normalised as model_arch_config_convertor.py does."""
    config = files.config or {}
    source = "config.json"
    raw = config.get("quantization_config")
    if raw is None and files.hf_quant is not None:
        raw, source = files.hf_quant, "hf_quant_config.json"
    if raw is None:
        text = config.get("text_config")
        if isinstance(text, dict) and isinstance(text.get("quantization_config"), dict):
            raw, source = text["quantization_config"], "config.json"
    if not isinstance(raw, dict):
        return None, None
    return dict(raw), source


def normalise_quantization(
    engine: Engine, quant: dict[str, Any], source: str
) -> StartupError | None:
    producer = quant.get("producer")
    inner = quant.get("quantization")
    if (
        isinstance(producer, dict)
        and producer.get("name") == "modelopt"
        and isinstance(inner, dict)
    ):
        algo = inner.get("quant_algo")
        if algo is not None:
            upper = str(algo).upper()
            if upper in ("FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO"):
                quant["quant_method"] = "modelopt"
            elif upper == "NVFP4":
                quant["quant_method"] = "modelopt_fp4"
            elif upper == "MIXED_PRECISION" and engine.at_least(0, 33):
                quant["quant_method"] = "modelopt_mixed"
            else:
                return StartupError(
                    f"Unknown ModelOpt quant algo: {algo}",
                    file=source,
                    pointer="/quantization/quant_algo",
                    note=f"{engine} cannot load this format; upgrade vLLM (do not edit quant_algo)",
                )
    method = (
        str(quant.get("quant_method", ""))
        .lower()
        .replace("compressed_tensors", "compressed-tensors")
    )
    quant["quant_method"] = method
    return None


def quantization_method(quant: Mapping[str, Any]) -> str | None:
    """config/model.py _verify_quantization with the ModelOpt override_quantization_method."""
    method = quant.get("quant_method") or None
    if method != "modelopt":
        return method
    inner = quant.get("quantization")
    if "quantization" in quant:
        algo = str(inner.get("quant_algo", "")) if isinstance(inner, dict) else ""
        if algo.upper() == "FP8":
            return "modelopt"
        if "NVFP4" in algo:
            return "modelopt_fp4"
        if algo.upper() == "MXFP8":
            return "modelopt_mxfp8"
        return "modelopt"
    algo = quant.get("quant_algo", "")
    if isinstance(algo, str) and "FP4" in algo.upper():
        return "modelopt_fp4"
    if isinstance(algo, str) and algo.upper() == "MXFP8":
        return "modelopt_mxfp8"
    return "modelopt"


def kv_cache_dtype(engine: Engine, quant: Mapping[str, Any] | None, source: str | None) -> Derived:
    """What ``--kv-cache-dtype auto`` resolves to (utils/torch_utils.py
    resolve_kv_cache_dtype_string; only ModelOpt checkpoints count)."""
    if not engine.at_least(*KV_AUTO_FROM_CHECKPOINT):
        return Derived("auto", f"{engine} does not resolve 'auto' from the checkpoint")
    if quant is None or not str(quant.get("quant_method", "")).startswith("modelopt"):
        return Derived("auto", "no ModelOpt KV directive: the model dtype")
    nested = isinstance(quant.get("quantization"), dict)
    inner: Mapping[str, Any] = quant["quantization"] if nested else quant
    prefix = "/quantization" if nested else ""
    candidates = (
        (f"{prefix}/kv_cache_scheme", inner.get("kv_cache_scheme")),
        ("/kv_cache_scheme", quant.get("kv_cache_scheme")),
        (f"{prefix}/kv_cache_quant_algo", inner.get("kv_cache_quant_algo")),
        ("/kv_cache_quant_algo", quant.get("kv_cache_quant_algo")),
    )
    pointer, value = next(((p, v) for p, v in candidates if v), ("", None))
    if source == "config.json":
        pointer = "/quantization_config" + pointer
    where = f"{source} {pointer}"
    if isinstance(value, dict):
        if (
            value.get("dynamic") is False
            and value.get("num_bits") == 8
            and value.get("type") == "float"
        ):
            return Derived("fp8_e4m3", where, source, pointer)
        if engine.at_least(0, 33) and value.get("num_bits") == 4 and value.get("type") == "float":
            return Derived("nvfp4", where, source, pointer)
        return Derived("auto", f"{where}: unknown scheme, vLLM falls back to 'auto'")
    if isinstance(value, str):
        return Derived(MODELOPT_KV_MAP.get(value.lower(), "auto"), where, source, pointer)
    return Derived("auto", "no KV directive: the model dtype")


def kv_type_error(quant: Mapping[str, Any], source: str) -> StartupError | None:
    if not str(quant.get("quant_method", "")).startswith("modelopt"):
        return None
    inner = quant.get("quantization")
    value = (
        inner.get("kv_cache_quant_algo")
        if isinstance(inner, dict)
        else quant.get("kv_cache_quant_algo")
    )
    if value is None or isinstance(value, str):
        return None
    return StartupError(
        f"kv_cache_quant_algo must be a string, got {python_type(value)}",
        file=source,
        note='use a string such as "FP8", or null for no KV quantization',
    )


def attention_error(engine: Engine, gpu: Gpu, kv: Derived, head_size: int) -> StartupError:
    reasons = backend_rejections(engine, gpu, kv.value)
    listed = ", ".join(f"{name}: [{', '.join(why)}]" for name, why in reasons.items())
    bf16_flag = any(
        "bfloat16" in backend_table(engine)[name][1]
        and "compute capability not supported" not in why
        for name, why in reasons.items()
    )
    return StartupError(
        code="no-attention-backend",
        message="No valid attention backend found for cuda with AttentionSelectorConfig("
        f"head_size={head_size}, kv_cache_dtype={kv.value}, use_mla=True, ...). "
        f"Reasons: {{{listed}}}.",
        file=kv.file,
        pointer=kv.pointer,
        transform="strip-fp8-kv-cache" if kv.pointer else None,
        flag="--kv-cache-dtype bfloat16" if bf16_flag else None,
        note=(
            f"on compute capability {gpu.capability_text} no MLA backend of {engine} takes a "
            f"{kv.value} KV cache; vLLM 0.18 and later run FP8 MLA on SM12x (Triton MLA)"
        ),
    )


def act_dtype_error(quantization: str | None, dtype: Derived) -> StartupError | None:
    """VllmConfig's check of the model dtype against the quantization method's list."""
    supported = ACT_DTYPES.get(quantization or "")
    if supported is None or dtype.value is None or dtype.value in supported:
        return None
    listed = ", ".join(f"torch.{name}" for name in supported)
    return StartupError(
        f"torch.{dtype.value} is not supported for quantization method {quantization}. "
        f"Supported dtypes: [{listed}]",
        code="quant-dtype",
        file=dtype.file,
        pointer=dtype.pointer,
        flag=f"--dtype {supported[0]}",
        note=f"{quantization} runs in {' or '.join(supported)} only: "
        f"set-torch-dtype --set dtype={supported[0]}, or start with --dtype {supported[0]}",
    )


def python_type(value: Any) -> str:
    names = {dict: "dict", list: "list", int: "int", float: "float", bool: "bool"}
    return f"<class '{names.get(type(value), type(value).__name__)}'>"
