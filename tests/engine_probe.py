"""Runs inside a venv that has a real engine installed (never in patcher's own venv).

Usage: ENGINE_VENV/bin/python tests/engine_probe.py CASES.json OUT.json

CASES.json is ``{"case name": "/path/to/checkpoint/dir", ...}``. For each case this runs vLLM's
own config code on CPU and records what it derives; OUT.json gets one object per case plus the
version's attention-backend table. It imports nothing from patcher: it is the ground truth that
patcher's engine model is compared against (tests/test_engine_truth.py).
"""

from __future__ import annotations

import json
import sys
import types
from typing import Any

CAPABILITIES = ("8.0", "8.6", "8.9", "9.0", "10.0", "12.0", "12.1")
MLA_BACKENDS = ("FLASH_ATTN_MLA", "FLASHMLA", "FLASHINFER_MLA", "CUTLASS_MLA", "TRITON_MLA")


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0]


def _cuda_priorities() -> Any:
    try:
        import vllm.platforms.cuda as cuda
    except Exception:
        # vllm._C needs libcuda at import time; the priority table does not.
        sys.modules["vllm._C"] = types.ModuleType("vllm._C")
        import vllm.platforms.cuda as cuda
    return cuda._get_backend_priorities


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
    with open(cases_file, encoding="utf-8") as handle:
        cases: dict[str, str] = json.load(handle)
    import vllm

    table = backend_table()
    results = {name: probe(path, table) for name, path in sorted(cases.items())}
    record = {
        "engine": "vllm",
        "version": vllm.__version__,
        "backend_table": table,
        "cases": results,
    }
    with open(out_file, "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=1, sort_keys=True)
        handle.write("\n")


if __name__ == "__main__":
    main()
