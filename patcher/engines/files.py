"""The JSON files an engine's config stage reads, each parsed once."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from patcher.checkpoint import Checkpoint
from patcher.document import json_problem
from patcher.errors import InputFileError

ENGINE_FILES = ("config.json", "hf_quant_config.json")


@dataclass(frozen=True, slots=True)
class ConfigFiles:
    """``config.json`` and ``hf_quant_config.json`` as parsed JSON (None when absent)."""

    config: dict[str, Any] | None
    hf_quant: dict[str, Any] | None


def _load(checkpoint: Checkpoint, name: str) -> dict[str, Any] | None:
    path = checkpoint.path(name)
    if not path.is_file():
        return None
    try:
        value = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise InputFileError(
            f"not valid JSON ({json_problem(exc)})",
            file=path,
            hint="fix the file, then run the check again",
        ) from None
    except OSError as exc:
        raise InputFileError(
            f"cannot read ({exc.strerror})", file=path, hint="fix the file's permissions"
        ) from None
    if not isinstance(value, dict):
        raise InputFileError("expected a JSON object", file=path, pointer="", hint="fix the file")
    return value


def read_config_files(checkpoint: Checkpoint) -> ConfigFiles:
    """The files the engine model reads, from the checkpoint as it is now."""
    return ConfigFiles(_load(checkpoint, "config.json"), _load(checkpoint, "hf_quant_config.json"))
