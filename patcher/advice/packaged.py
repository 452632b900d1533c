"""The readings packaged with patcher (``patcher/advice/*.json``, ``*.json.gz``): what the
tools under ``tools/`` read from the engines' wheels and recorded, parsed as they are. Each
reader keeps its own part, cached; a reading not recorded raises ``FileNotFoundError``."""

from __future__ import annotations

import gzip
import json
from importlib import resources
from typing import Any


def packaged(name: str) -> Any:
    """The packaged reading ``name`` (``errors-vllm.json``), parsed; a ``.gz`` one unpacked."""
    raw = resources.files("patcher.advice").joinpath(name).read_bytes()
    return json.loads(gzip.decompress(raw) if name.endswith(".gz") else raw)
