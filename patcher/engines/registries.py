"""What each vLLM and SGLang release read lists: its model registry (the architectures), and,
for vLLM, with the quantization methods and DeepSeek-MLA model types ``readings`` holds, the
judgements on them.

``vllm_architectures.json`` beside this module, made by ``python -m tools.read_release``: the
keys of ``_VLLM_MODELS`` in each release's ``model_executor/models/registry.py``, read from its
wheel (which ``ModelRegistry.get_supported_archs()`` returns: held to the lists a venv of 0.16.0
and 0.33.0 returned and the live 0.32.0 CPU build printed, tests/engines/test_registry.py),
stored as each release's additions to and removals from the one read before it. The releases
before those the engine model reads (0.2.7 to 0.10.0) are read for their registry alone
(``python -m tools.read_release vllm --registry-only``; before 0.6.3 the keys of ``_MODELS`` in
``models/__init__.py``), so that doctor names the release that added or dropped a class. Read
on first use, so no command that does not judge an architecture pays for it.

``sglang_architectures.json``, made by ``python -m tools.read_release sglang VERSION``: the
``__name__`` of each ``EntryClass`` of the modules in each release's ``srt/models/`` (which
``import_model_classes`` keys its registry by), in the same form.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from patcher.engines.engine import Engine, EngineName, Version
from patcher.engines.readings import assumed, reading, vllm_readings


@cache
def architectures(engine: EngineName = "vllm") -> dict[Version, frozenset[str]]:
    """The registry of each release of ``engine`` (vllm, sglang) read."""
    data = resources.files("patcher.engines").joinpath(f"{engine}_architectures.json")
    text = data.read_text()
    names: frozenset[str] = frozenset()
    found: dict[Version, frozenset[str]] = {}
    for version, step in json.loads(text)["releases"].items():
        names = (names - set(step["removed"])) | set(step["added"])
        major, minor, patch = (int(part) for part in version.split("."))
        found[(major, minor, patch)] = names
    return found


def unknown_architectures(engine: Engine, architectures_: object) -> list[str] | None:
    """The names of ``architectures_`` that the registry of the release answering for
    ``engine`` does not list (a release not read is answered by the one before it, never by a
    union of releases); None when ``architectures_`` is not a list."""
    if not isinstance(architectures_, list):
        return None
    known = architectures()[assumed(engine).release]
    return [a for a in architectures_ if isinstance(a, str) and a not in known]


def registry_elsewhere(engine: Engine, name: str) -> str | None:
    """Where ``name`` is in the registry of another release read, what to do about it; None
    when no release read lists it."""
    listed = [v for v, names in architectures().items() if name in names]
    if not listed:
        return None
    text = ".".join
    if listed[0] > engine.version:
        return f"{name} is listed from vLLM {text(map(str, listed[0]))}: upgrade vLLM"
    return f"{engine} no longer lists {name} (last in {text(map(str, listed[-1]))}): use that vLLM"


def unknown_method_note(engine: Engine, method: str) -> str:
    """Why ``engine`` does not take ``method``, from the releases read that list it."""
    listed = [v for v, r in vllm_readings().items() if method in r.quantization_methods]
    text = ".".join
    if not listed:
        return f"no vLLM release read lists {method} (a misspelling, or another engine's format)"
    if listed[-1] < engine.version:
        return (
            f"{engine} no longer loads {method} checkpoints (last listed in "
            f"{text(map(str, listed[-1]))}): use that vLLM or another checkpoint"
        )
    return f"{method} is listed from vLLM {text(map(str, listed[0]))}: upgrade vLLM"


def is_deepseek_mla(engine: Engine, text: Mapping[str, Any]) -> bool:
    """ModelArchConfigConvertor.is_deepseek_mla (ModelConfig's before 0.33): the model types
    the release lists (read from its source, ``readings``), with a ``kv_lora_rank``; from
    DeepSeek-V4's release, a config with compress ratios by its ``head_dim`` instead."""
    read = reading(engine)
    if text.get("model_type") not in read.mla_model_types:
        return False
    compressed = text.get("compress_ratios") or (
        isinstance(text.get("compress_rates"), dict) and text.get("layer_types")
    )
    if read.mla_compressed_by_head_dim and compressed:
        return text.get("head_dim") is not None
    return text.get("kv_lora_rank") is not None
