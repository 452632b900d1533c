"""The JSON files an engine's config stage reads, each parsed once."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from patcher.checkpoint import Checkpoint
from patcher.document import read_json_file
from patcher.errors import InputFileError

ENGINE_FILES = ("config.json", "hf_quant_config.json")


@dataclass(frozen=True, slots=True)
class ConfigFiles:
    """``config.json`` and ``hf_quant_config.json`` as parsed JSON (None when absent)."""

    config: dict[str, Any] | None
    hf_quant: dict[str, Any] | None
    source: str = "config.json"  # where config came from, for messages
    weights: bool = False  # whether *.safetensors files sit beside them (listed, never read)


def _load(checkpoint: Checkpoint, name: str) -> dict[str, Any] | None:
    path = checkpoint.path(name)
    value = read_json_file(path)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InputFileError("expected a JSON object", file=path, pointer="", hint="fix the file")
    return value


def has_safetensors(checkpoint: Checkpoint) -> bool:
    """Whether the checkpoint folder lists a ``*.safetensors`` file (names only: never opened)."""
    try:
        with os.scandir(checkpoint.root) as entries:
            return any(entry.name.endswith(".safetensors") for entry in entries)
    except OSError:
        return False


def read_config_files(checkpoint: Checkpoint) -> ConfigFiles:
    """The files the engine model reads, from the checkpoint as it is now."""
    return ConfigFiles(
        _load(checkpoint, "config.json"),
        _load(checkpoint, "hf_quant_config.json"),
        str(checkpoint.path("config.json")),
        has_safetensors(checkpoint),
    )
