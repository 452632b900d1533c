"""The values the engine model computes with, checked before it runs: a length key, a RoPE
factor or type, an MLA size that is not usable is refused naming its JSON pointer."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from patcher.engines import sglang, vllm
from patcher.engines.files import ConfigFiles
from patcher.errors import InputFileError
from patcher.text.document import shown

# The numbers the engine model computes with, in config.json or its text_config: vLLM's and
# SGLang's length keys and the MLA sizes. A string, NaN or 1e400 there makes vLLM's own config
# stage fail with a TypeError or OverflowError; patcher names the value instead.
NUMBER_KEYS = tuple(
    dict.fromkeys(
        (
            *vllm.MAX_LEN_KEYS,
            *sglang.CONTEXT_LENGTH_KEYS,
            "original_max_position_embeddings",
            "kv_lora_rank",
            "qk_rope_head_dim",
        )
    )
)
# A length or size: room for transformers' "no limit" sentinel int(1e30), far from a float's end.
MAX_COUNT = 2**100
MAX_FACTOR = 2**20  # a RoPE factor: a length times it stays a finite float
_ROPE_NUMBERS = {"factor": MAX_FACTOR, "original_max_position_embeddings": MAX_COUNT}


def check_numbers(files: ConfigFiles) -> None:
    """Refuse a number in config.json that the engine model cannot compute with (or a RoPE
    type that is not a name)."""
    found = _number_problem(files.config or {})
    if found is not None:
        pointer, problem = found
        raise InputFileError(
            problem,
            file=files.source,
            pointer=pointer,
            hint="fix the file, then run the command again",
        )


def _number_problem(config: Mapping[str, Any]) -> tuple[str, str] | None:
    """The pointer and the problem of the first unusable number, if any."""
    for prefix, section in (("", config), ("/text_config", config.get("text_config"))):
        if not isinstance(section, dict):
            continue
        for key in NUMBER_KEYS:
            if key not in section:
                continue
            # vLLM copies this one into the RoPE parameters, where null fails as it does there
            null = key != "original_max_position_embeddings"
            problem = _unusable(section[key], MAX_COUNT, null=null)
            if problem is not None:
                return f"{prefix}/{key}", problem
        for rope_key in ("rope_scaling", "rope_parameters"):
            rope = section.get(rope_key)
            if not isinstance(rope, dict):
                continue
            tables = [("", rope)] + [(f"/{k}", v) for k, v in rope.items() if isinstance(v, dict)]
            for inner, table in tables:
                for key in ("rope_type", "type"):
                    if key in table and not isinstance(table[key], str):
                        problem = f'expected a name such as "yarn", found {shown(table[key])}'
                        return f"{prefix}/{rope_key}{inner}/{key}", problem
                for key, limit in _ROPE_NUMBERS.items():
                    # Present, a RoPE number is computed with: null fails as a string would.
                    problem = _unusable(table[key], limit, null=False) if key in table else None
                    if problem is not None:
                        return f"{prefix}/{rope_key}{inner}/{key}", problem
    return None


def _unusable(value: Any, limit: int, *, null: bool = True) -> str | None:
    if value is None and null:
        return None
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and (isinstance(value, int) or math.isfinite(value)) and 0 <= value <= limit:
        return None
    bound = f"{limit:,}" if limit < 10**12 else f"about {float(limit):.0e}"
    return f"expected a number from 0 to {bound}, found {shown(value)}"
