"""The parallel sizes a config allows: how vLLM and SGLang split attention heads over GPUs.

Both engines refuse, before any weight is loaded, a tensor-parallel size that does not divide
the attention heads: vLLM in ``ModelConfig.verify_with_parallel_config`` ("Total number of
attention heads (N) must be divisible by tensor parallel size (T)."; every release read,
0.10.1 to 0.34.0), SGLang in each model's attention (``assert self.total_num_heads % tp_size
== 0``, sglang/srt/models/llama.py @ 0.5.23). The KV heads split too (``QKVParallelLinear``
in both engines' ``layers/linear.py``): with at least as many KV heads as GPUs, the GPUs must
divide them; with fewer, they must divide the GPUs (each is replicated). MLA models
(``kv_lora_rank``) have no KV heads to split. No config edit is the fix; another size is.
"""

from __future__ import annotations

from typing import Any

from patcher.engines.engine import Engine
from patcher.engines.files import ConfigFiles
from patcher.engines.view import StartupError

SIZES = (1, 2, 4, 8, 16, 32, 64)


def _model(config: dict[str, Any]) -> tuple[dict[str, Any], str]:
    text = config.get("text_config")
    return (text, "/text_config") if isinstance(text, dict) else (config, "")


def _count(model: dict[str, Any], key: str) -> int | None:
    value = model.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _kv_splits(kv_heads: int, tp: int) -> bool:
    return tp % kv_heads == 0 if tp >= kv_heads else kv_heads % tp == 0


def tensor_parallel_error(
    engine: Engine, files: ConfigFiles, tensor_parallel: int | None
) -> StartupError | None:
    """The engine's refusal of a tensor-parallel size that does not split the attention heads
    or the KV heads, with the sizes that would (None: it splits, or nothing to judge)."""
    if engine.name not in ("vllm", "sglang") or not tensor_parallel or tensor_parallel < 2:
        return None
    if not isinstance(files.config, dict):
        return None
    model, where = _model(files.config)
    heads = _count(model, "num_attention_heads")
    if heads is None:
        return None
    kv_heads = None if "kv_lora_rank" in model else _count(model, "num_key_value_heads")
    sizes = [n for n in SIZES if heads % n == 0 and (kv_heads is None or _kv_splits(kv_heads, n))]
    flag = "--tensor-parallel-size" if engine.name == "vllm" else "--tp-size"
    note = f"a hardware plan, not a file edit: {flag} {' or '.join(map(str, sizes))}"
    tp = tensor_parallel
    if heads % tp:
        message = (
            f"Total number of attention heads ({heads}) must be divisible by tensor parallel "
            f"size ({tp})."
            if engine.name == "vllm"
            else f"AssertionError: total_num_heads ({heads}) % tp_size ({tp}) != 0"
        )
        return StartupError(
            message,
            code="tensor-parallel-heads",
            file="config.json",
            pointer=f"{where}/num_attention_heads",
            note=f"{note} divides {heads} heads",
        )
    if kv_heads is not None and not _kv_splits(kv_heads, tp):
        big, small = (kv_heads, tp) if kv_heads >= tp else (tp, kv_heads)
        return StartupError(
            f"{big} is not divisible by {small}"
            + (" (AssertionError in QKVParallelLinear)" if engine.name == "vllm" else ""),
            code="tensor-parallel-kv-heads",
            file="config.json",
            pointer=f"{where}/num_key_value_heads",
            note=f"{note} splits {kv_heads} KV heads",
        )
    return None
