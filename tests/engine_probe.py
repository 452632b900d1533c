"""Runs inside a venv that has a real engine installed (never in patcher's own venv).

Usage: ENGINE_VENV/bin/python tests/engine_probe.py CASES.json OUT.json

CASES.json is ``{"case name": "/path/to/checkpoint/dir", ...}``. For each case this runs vLLM's
own config code on CPU and records what it derives; OUT.json gets one object per case plus the
version's attention-backend table. It imports nothing from patcher: it is the ground truth that
patcher's engine model is compared against (tests/test_engine_truth.py).
"""

from __future__ import annotations

import json
import re
import sys
import traceback
import types
from pathlib import Path
from typing import Any

CAPABILITIES = ("8.0", "8.6", "8.9", "9.0", "10.0", "12.0", "12.1")
DTYPE_CAPABILITIES = ("7.0", "8.0")  # a V100 (no bfloat16) and an A100
MLA_BACKENDS = ("FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "CUTLASS_MLA", "TRITON_MLA")


def _error(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:600]


def _cuda_priorities() -> Any:
    # vLLM's compiled extensions (vllm._C, vllm._C_stable_libtorch, ...) need libcuda at
    # import time; the priority table does not. Stub each one that fails, then retry.
    for _ in range(10):
        try:
            import vllm.platforms.cuda as cuda

            return cuda._get_backend_priorities
        except ImportError as exc:
            lines = [f.line or "" for f in traceback.extract_tb(exc.__traceback__)]
            found = [m.group(1) for ln in lines if (m := re.search(r"import (vllm\.\w+)", ln))]
            name = found[-1] if found else exc.name
            if name is None or not name.startswith("vllm.") or name in sys.modules:
                raise
            sys.modules[name] = types.ModuleType(name)
            sys.modules.pop("vllm.platforms.cuda", None)
    raise ImportError("vllm.platforms.cuda")


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


def probe(path: str, table: dict[str, Any]) -> dict[str, Any]:
    """What vLLM's config stage derives for one checkpoint directory."""
    from vllm.config import LoadConfig, ModelConfig

    found: dict[str, Any] = {"startup_errors": []}
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
    except Exception as exc:
        found["startup_errors"].append(_error(exc))
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
    return found


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
        "cases": results,
    }
    Path(out_file).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
