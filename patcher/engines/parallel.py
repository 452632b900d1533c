"""The parallel sizes a config allows: vLLM's ModelConfig.verify_with_parallel_config.

Every vLLM release read (0.10.1 to 0.34.0) refuses a tensor-parallel size that does not divide
the model's attention heads, before any weight is loaded: "Total number of attention heads (N)
must be divisible by tensor parallel size (T)." No config edit is the fix; another size is.
"""

from __future__ import annotations

from typing import Any

from patcher.engines.files import ConfigFiles
from patcher.engines.target import Engine
from patcher.engines.view import StartupError


def _heads(config: dict[str, Any]) -> tuple[int, str] | None:
    text = config.get("text_config")
    model, where = (text, "/text_config") if isinstance(text, dict) else (config, "")
    heads = model.get("num_attention_heads")
    if isinstance(heads, int) and not isinstance(heads, bool) and heads > 0:
        return heads, f"{where}/num_attention_heads"
    return None


def tensor_parallel_error(
    engine: Engine, files: ConfigFiles, tensor_parallel: int | None
) -> StartupError | None:
    """vLLM's refusal of a tensor-parallel size that does not divide the attention heads,
    with the sizes that would (None: it divides, or the model is not vLLM's to judge)."""
    if engine.name != "vllm" or not tensor_parallel or tensor_parallel < 2:
        return None
    found = _heads(files.config) if isinstance(files.config, dict) else None
    if found is None or found[0] % tensor_parallel == 0:
        return None
    heads, pointer = found
    sizes = [n for n in (1, 2, 4, 8, 16, 32, 64) if heads % n == 0]
    return StartupError(
        f"Total number of attention heads ({heads}) must be divisible by tensor parallel size "
        f"({tensor_parallel}).",
        code="tensor-parallel-heads",
        file="config.json",
        pointer=pointer,
        note=f"a hardware plan, not a file edit: --tensor-parallel-size "
        f"{' or '.join(map(str, sizes))} divides {heads} heads",
    )
