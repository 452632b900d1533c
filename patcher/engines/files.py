"""The JSON files an engine's config stage reads, each parsed once."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from patcher.checkpoint import Checkpoint
from patcher.document import read_json_file, shown
from patcher.errors import InputFileError

ENGINE_FILES = ("config.json", "hf_quant_config.json")
# The numbers the engine model computes with, in config.json or its text_config: vLLM's and
# SGLang's length keys and the MLA sizes. A string, NaN or 1e400 there makes vLLM's own config
# stage fail with a TypeError or OverflowError; patcher names the value instead.
NUMBER_KEYS = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
    "model_max_length",
    "max_target_positions",
    "max_sequence_length",
    "max_seq_length",
    "seq_len",
    "original_max_position_embeddings",
    "kv_lora_rank",
    "qk_rope_head_dim",
)
# A length or size: room for transformers' "no limit" sentinel int(1e30), far from a float's end.
MAX_COUNT = 2**100
MAX_FACTOR = 2**20  # a RoPE factor: a length times it stays a finite float
_ROPE_NUMBERS = {"factor": MAX_FACTOR, "original_max_position_embeddings": MAX_COUNT}


@dataclass(frozen=True, slots=True)
class ConfigFiles:
    """``config.json`` and ``hf_quant_config.json`` as parsed JSON (None when absent)."""

    config: dict[str, Any] | None
    hf_quant: dict[str, Any] | None
    source: str = "config.json"  # where config came from, for messages


def _load(checkpoint: Checkpoint, name: str) -> dict[str, Any] | None:
    path = checkpoint.path(name)
    value = read_json_file(path)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InputFileError("expected a JSON object", file=path, pointer="", hint="fix the file")
    return value


def read_config_files(checkpoint: Checkpoint) -> ConfigFiles:
    """The files the engine model reads, from the checkpoint as it is now."""
    return ConfigFiles(
        _load(checkpoint, "config.json"),
        _load(checkpoint, "hf_quant_config.json"),
        str(checkpoint.path("config.json")),
    )


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
            problem = _unusable(section.get(key), MAX_COUNT)
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
