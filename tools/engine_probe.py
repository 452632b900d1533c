"""Runs inside a venv that has a real engine installed (never in patcher's own venv).

Usage: ENGINE_VENV/bin/python tools/engine_probe.py CASES.json OUT.json

CASES.json is ``{"case name": "/path/to/checkpoint/dir", ...}``. For each case this runs vLLM's
own config code on CPU and records what it derives, then builds the model class it picks on the
meta device (no weights) and records the first error, and loads the tokenizer where the case has
a tokenizer_config.json; OUT.json gets one object per case plus the
version's attention-backend table. It imports nothing from patcher: it is the ground truth that
patcher's engine model is compared against (tests/engines/test_engine_truth.py).
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path
from typing import Any

CAPABILITIES = ("8.0", "8.6", "8.9", "9.0", "10.0", "12.0", "12.1")
DTYPE_CAPABILITIES = ("7.0", "8.0")  # a V100 (no bfloat16) and an A100
MLA_BACKENDS = ("FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "CUTLASS_MLA", "TRITON_MLA")


def _error(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:600]


# patcher's own probe of an installed engine (a script too, run here by path: this venv has
# no patcher), for what both need: the priority table with the compiled extensions stubbed.
_cuda_priorities = runpy.run_path(
    str(Path(__file__).resolve().parents[1] / "patcher" / "engines" / "installed_probe.py")
)["_cuda_priorities"]


QUANT_METHODS = (
    "mxfp4",
    "gpt_oss_mxfp4",
    "modelopt",
    "modelopt_fp4",
    "modelopt_mxfp8",
    "modelopt_mixed",
    "fp8",
    "bitsandbytes",
    "compressed-tensors",
    "awq",
    "gptq",
)


def act_dtypes() -> dict[str, Any]:
    """Each quantization method's get_supported_act_dtypes(), which VllmConfig holds the model
    dtype to (or why it has none here)."""
    from vllm.model_executor.layers.quantization import (
        QUANTIZATION_METHODS,
        get_quantization_config,
    )

    table: dict[str, Any] = {}
    for method in QUANT_METHODS:
        if method not in QUANTIZATION_METHODS:
            table[method] = "not registered"
            continue
        config_class = get_quantization_config(method)
        try:
            dtypes = config_class.get_supported_act_dtypes()
        except TypeError:  # an instance method that reads nothing of the instance
            dtypes = config_class.get_supported_act_dtypes(None)
        table[method] = [str(d).removeprefix("torch.") for d in dtypes]
    return table


def backend_table() -> dict[str, Any]:
    """Per MLA backend: the KV dtypes it lists and the capabilities it accepts."""
    from vllm.platforms.interface import DeviceCapability
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    priorities = _cuda_priorities()
    table: dict[str, Any] = {"backends": {}, "mla_priority": {}}
    for name in MLA_BACKENDS:
        try:
            cls = AttentionBackendEnum[name].get_class()
        except Exception as exc:
            table["backends"][name] = {"error": _error(exc)}
            continue
        caps = []
        for cap in CAPABILITIES:
            major, minor = (int(p) for p in cap.split("."))
            if cls.supports_compute_capability(DeviceCapability(major, minor)):
                caps.append(cap)
        table["backends"][name] = {
            "kv_cache_dtypes": list(cls.supported_kv_cache_dtypes),
            "capabilities": caps,
        }
    for cap in CAPABILITIES:
        major, minor = (int(p) for p in cap.split("."))
        try:
            order = priorities(True, DeviceCapability(major, minor))
        except TypeError:
            order = priorities(True, DeviceCapability(major, minor), None)
        table["mla_priority"][cap] = [b.name for b in order]
    return table


def _dtype_on(mc: Any, path: str, capability: str) -> str:
    """The model dtype ``--dtype auto`` resolves to on a CUDA GPU of ``capability``: vLLM's own
    ``_get_and_verify_dtype``, with its platform swapped for a CUDA one reporting that
    capability (the supported-dtype list is CUDA's own property)."""
    import inspect

    import vllm.config.model as model_module
    import vllm.platforms as platforms
    from vllm.platforms.interface import DeviceCapability

    _cuda_priorities()  # makes vllm.platforms.cuda importable on a machine without CUDA
    cuda = sys.modules["vllm.platforms.cuda"]
    major, minor = (int(p) for p in capability.split("."))

    class ProbeGpu(cuda.CudaPlatformBase):  # type: ignore[name-defined, misc]
        @classmethod
        def get_device_capability(cls, device_id: int = 0) -> Any:  # noqa: ARG003 (overrides)
            return DeviceCapability(major, minor)

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:  # noqa: ARG003 (overrides)
            return f"probe {capability}"

    # Swapped where each version looks it up: the module global, and (0.16) the package's.
    saved = model_module.__dict__.get("current_platform"), platforms._current_platform
    gpu = ProbeGpu()
    if saved[0] is not None:
        model_module.current_platform = gpu
    platforms._current_platform = gpu
    try:
        verify = model_module._get_and_verify_dtype
        wanted = inspect.signature(verify).parameters
        extra = {k: v for k, v in (("is_pooling_model", False), ("revision", None)) if k in wanted}
        return str(verify(path, mc.hf_config, "auto", **extra)).removeprefix("torch.")
    except Exception as exc:
        return _error(exc)
    finally:
        if saved[0] is not None:
            model_module.current_platform = saved[0]
        platforms._current_platform = saved[1]


PROMPT_TOKENS = 16


def _max_tokens(max_model_len: int, defaults: dict[str, Any]) -> dict[str, int]:
    """The entry points' own get_max_tokens for a prompt of PROMPT_TOKENS: a request asking
    for the whole rest of the context, and one that sets no max_tokens."""
    try:
        from vllm.entrypoints.serve.utils.api_utils import get_max_tokens
    except ImportError:
        from vllm.entrypoints.utils import get_max_tokens
    rest = max_model_len - PROMPT_TOKENS
    return {
        "asked_rest": get_max_tokens(max_model_len, rest, PROMPT_TOKENS, defaults),
        "unset": get_max_tokens(max_model_len, None, PROMPT_TOKENS, defaults),
    }


_DISTRIBUTED: list[bool] = []
SLIDING_OFF = {"use_sliding_window": False}
MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers")


def _build(mc: Any, built: dict[str, Any] | None = None) -> str:
    """Build the model class vLLM picks for these files on the meta device (no weights, no
    memory) and return the first error, in vLLM's words. On a machine without a GPU the build
    of a model that passes every check of its own ends at the attention backend ("Invalid
    attention backend for None"): that is as far as the files can take it here. ``built``
    gets the KV-cache dtype the layers left in the cache config (an attention layer switches
    'auto' to fp8 for a compressed-tensors kv_cache_scheme before it picks its backend)."""
    import socket

    import torch
    from vllm.config import DeviceConfig, VllmConfig, set_current_vllm_config
    from vllm.distributed import init_distributed_environment, initialize_model_parallel
    from vllm.model_executor.model_loader.utils import get_model_architecture

    try:
        vllm_config = VllmConfig(model_config=mc, device_config=DeviceConfig(device="cpu"))
        model_class, _ = get_model_architecture(mc)
        with set_current_vllm_config(vllm_config):
            if not _DISTRIBUTED:
                with socket.socket() as free:
                    free.bind(("127.0.0.1", 0))
                    port = free.getsockname()[1]
                init_distributed_environment(
                    world_size=1,
                    rank=0,
                    distributed_init_method=f"tcp://127.0.0.1:{port}",
                    local_rank=0,
                    backend="gloo",
                )
                initialize_model_parallel(1, 1)
                _DISTRIBUTED.append(True)
            with torch.device("meta"):
                try:
                    model_class(vllm_config=vllm_config, prefix="")
                finally:
                    if built is not None:
                        built["kv_cache_dtype_layers"] = vllm_config.cache_config.cache_dtype
    except Exception as exc:
        return _error(exc)
    return "built"


def _mtp_draft(mc: Any) -> str:
    """What --speculative-config '{"method": "mtp", "num_speculative_tokens": 1}' makes of a
    config that declares MTP layers: the draft model vLLM would build, or its error."""
    from vllm.config import ParallelConfig, SpeculativeConfig

    try:
        speculative = SpeculativeConfig(
            method="mtp",
            num_speculative_tokens=1,
            target_model_config=mc,
            target_parallel_config=ParallelConfig(),
        )
    except Exception as exc:
        return _error(exc)
    draft = speculative.draft_model_config.hf_config
    return f"draft {draft.model_type}, n_predict {getattr(draft, 'n_predict', None)}"


def _tokenizer(path: str) -> dict[str, Any]:
    """What the server's tokenizer loading (vLLM's get_tokenizer, which the renderer calls
    through cached_tokenizer_from_config before the engine starts) makes of the files: "loaded"
    and the SHA-256 of the chat template the tokenizer carries (the server's default), or the
    error."""
    from vllm.tokenizers.registry import get_tokenizer

    try:
        tokenizer = get_tokenizer(path)
    except Exception as exc:
        return {"tokenizer": _error(exc)}
    return {"tokenizer": "loaded", "chat_template_sha256": template_hash(tokenizer)}


def template_hash(tokenizer: Any) -> str | None:
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):  # named templates: the default one is served
        template = template.get("default")
    if not isinstance(template, str):
        return None
    import hashlib

    return hashlib.sha256(template.encode("utf-8")).hexdigest()


def probe(path: str, table: dict[str, Any]) -> dict[str, Any]:
    """What vLLM's config stage derives for one checkpoint directory."""
    from vllm.config import LoadConfig, ModelConfig

    found: dict[str, Any] = {"startup_errors": []}
    if (Path(path) / "tokenizer_config.json").exists():
        found.update(_tokenizer(path))
    try:
        mc = ModelConfig(model=path, tokenizer=path, skip_tokenizer_init=True)
    except Exception as exc:
        found["startup_errors"].append(_error(exc))
        return found
    found["max_model_len"] = mc.max_model_len
    # --dtype auto on this CPU platform (bfloat16 first in its list, as on CUDA 8.0 and later)
    found["dtype"] = str(mc.dtype).removeprefix("torch.")
    found["dtype_on_gpu"] = {cap: _dtype_on(mc, path, cap) for cap in DTYPE_CAPABILITIES}
    # The request defaults vLLM takes from generation_config.json (--generation-config auto).
    try:
        found["sampling_defaults"] = mc.get_diff_sampling_param()
        found["generation_eos_token_id"] = mc.try_get_generation_config().get("eos_token_id")
        # The most tokens a response gets: asking for all the context, and asking for none.
        found["max_tokens"] = _max_tokens(mc.max_model_len, found["sampling_defaults"])
    except Exception as exc:
        found["startup_errors"].append(_error(exc))
    found["sliding_window"] = mc.get_sliding_window()
    found["model_build"] = _build(mc, found)
    if any(getattr(mc.hf_text_config, key, None) is not None for key in MTP_KEYS):
        found["speculative_mtp"] = _mtp_draft(mc)
    text = mc.hf_text_config
    if getattr(text, "use_sliding_window", None) is not None or found["sliding_window"]:
        # What the engine's own switches make of the same files, instead of an edit.
        found["sliding_window_switches"] = {}
        for switch, kwargs in (
            ("--disable-sliding-window", {"disable_sliding_window": True}),
            ("--hf-overrides use_sliding_window=false", {"hf_overrides": SLIDING_OFF}),
        ):
            switched = ModelConfig(model=path, tokenizer=path, skip_tokenizer_init=True, **kwargs)
            found["sliding_window_switches"][switch] = {
                "max_model_len": switched.max_model_len,
                "model_build": _build(switched),
            }
    found["quantization"] = mc.quantization
    found["mla"] = bool(getattr(mc, "use_mla", getattr(mc, "is_deepseek_mla", False)))
    try:
        from vllm.utils.torch_utils import resolve_kv_cache_dtype_string

        found["kv_cache_dtype"] = resolve_kv_cache_dtype_string("auto", mc)
    except ImportError:
        found["kv_cache_dtype"] = "auto"  # before 0.14 'auto' is never resolved from the files
    if mc.quantization is not None:
        try:
            from vllm.model_executor.model_loader.weight_utils import get_quant_config

            get_quant_config(mc, LoadConfig())
        except Exception as exc:
            found["startup_errors"].append(_error(exc))
    if found["mla"]:
        accepted: dict[str, list[str]] = {}
        for cap, order in table["mla_priority"].items():
            accepted[cap] = [
                name
                for name in order
                if name in table["backends"]
                and "error" not in table["backends"][name]
                and cap in table["backends"][name]["capabilities"]
                and found["kv_cache_dtype"] in table["backends"][name]["kv_cache_dtypes"]
            ]
        found["attention_backends"] = accepted
        found["kv_cache_dtype_flags"] = {flag: _with_flag(mc, flag, table) for flag in KV_FLAGS}
    return found


KV_FLAGS = ("bfloat16", "fp8")


def _with_flag(mc: Any, flag: str, table: dict[str, Any]) -> dict[str, Any]:
    """What ``--kv-cache-dtype FLAG`` makes the cache dtype (arg_utils resolves it against the
    files, then VllmConfig lets the model's verify_and_update_config rewrite it), and the MLA
    backends that accept it per capability."""
    from vllm.config import CacheConfig, DeviceConfig, VllmConfig

    try:
        from vllm.utils.torch_utils import resolve_kv_cache_dtype_string

        resolved = resolve_kv_cache_dtype_string(flag, mc)
    except ImportError:
        resolved = flag
    try:
        config = VllmConfig(
            model_config=mc,
            cache_config=CacheConfig(cache_dtype=resolved),
            device_config=DeviceConfig(device="cpu"),
        )
        cache_dtype = config.cache_config.cache_dtype
    except Exception as exc:
        return {"error": _error(exc)}
    accepted = {
        cap: [
            name
            for name in order
            if name in table["backends"]
            and "error" not in table["backends"][name]
            and cap in table["backends"][name]["capabilities"]
            and cache_dtype in table["backends"][name]["kv_cache_dtypes"]
        ]
        for cap, order in table["mla_priority"].items()
    }
    return {"cache_dtype": cache_dtype, "attention_backends": accepted}


def main() -> None:
    cases_file, out_file = sys.argv[1], sys.argv[2]
    cases: dict[str, str] = json.loads(Path(cases_file).read_text(encoding="utf-8"))
    import vllm

    table = backend_table()
    results = {name: probe(path, table) for name, path in sorted(cases.items())}
    record = {
        "engine": "vllm",
        "version": vllm.__version__,
        "backend_table": table,
        "act_dtypes": act_dtypes(),
        "cases": results,
    }
    Path(out_file).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
