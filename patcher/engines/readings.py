"""What patcher has read of each engine release, and which read release answers for a version.

vLLM: every release in ``vllm_releases.json`` beside this module, read from its wheel's own
source by ``python -m tools.read_release vllm X.Y.Z`` (its DeepSeek-MLA model types and memory
defaults here, its model registry in ``vllm_architectures.json``, its version rules and
attention backends under ``snapshots/engines/``). SGLang: 0.5.23, whose config code was run in
a venv (``tools/record_engines.py``).

A version is *read* when that exact release was (a local build tag such as ``+cpu`` or a
``.postN`` aside). Any other version (newer than the newest read, older than the oldest, a
patch release between two read ones, a pre-release or dev build) is answered with the rules of
the read release before it (the oldest, for an older one), and every answer says so: never a
plain "yes" for a release patcher has not read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

from patcher.engines.engine import Engine, EngineName, Version

# The SGLang releases read, with the day each was (snapshots/engines/sglang-0.5.23.json).
SGLANG_READ: dict[Version, str] = {(0, 5, 23): "2026-11-30"}


@dataclass(frozen=True, slots=True)
class Reading:
    """One vLLM release as read from its source: what the engine model takes from it."""

    version: Version
    read_on: str
    quantization_methods: frozenset[str]  # QuantizationMethods: config/model.py refuses others
    mla_model_types: frozenset[str]
    # is_deepseek_mla takes a config with compress ratios (DeepSeek-V4) as MLA by head_dim
    mla_compressed_by_head_dim: bool
    block_size: int  # the KV-cache block size on CUDA when none is given
    gpu_memory_utilization: float  # its default without the extensible KV cache
    # The utilization the extensible KV cache (on by default on CUDA) resolves to when none
    # is given; None where the release has no extensible KV cache.
    extensible_kv_cache_utilization: float | None
    # ModelOpt's get_quant_method quantizes the LM head (ParallelLMHead): before, a
    # checkpoint's quantized lm_head tensors have no parameter to load into
    modelopt_quantized_lm_head: bool = False
    # The names --tool-call-parser and --reasoning-parser take (their parser registries)
    tool_parsers: frozenset[str] = frozenset()
    reasoning_parsers: frozenset[str] = frozenset()
    # The SM versions its own kernels (the _C extension's kernel images) are compiled for:
    # 80 is 8.0; empty where the wheel's binaries were not read
    cuda_archs: frozenset[int] = frozenset()

    @property
    def default_utilization(self) -> float:
        """``gpu_memory_utilization`` on a CUDA GPU when the launch gives none."""
        return self.extensible_kv_cache_utilization or self.gpu_memory_utilization


def _version(text: str) -> Version:
    major, minor, patch = (int(part) for part in text.split("."))
    return major, minor, patch


@cache
def vllm_readings() -> dict[Version, Reading]:
    """Every vLLM release read, oldest first."""
    text = resources.files("patcher.engines").joinpath("vllm_releases.json").read_text()
    found = {}
    for version, read in json.loads(text)["releases"].items():
        memory = read["memory"]
        found[_version(version)] = Reading(
            _version(version),
            read["read_on"],
            frozenset(read["quantization_methods"]),
            frozenset(read["mla_model_types"]),
            read["mla_compressed_by_head_dim"],
            memory["block_size"],
            memory["gpu_memory_utilization"],
            memory["extensible_kv_cache_utilization"],
            read.get("modelopt_quantized_lm_head", False),
            frozenset(read.get("tool_parsers", ())),
            frozenset(read.get("reasoning_parsers", ())),
            frozenset(int(sm) for sm in read.get("cuda_archs", ())),
        )
    return dict(sorted(found.items()))


def releases_read(name: EngineName) -> tuple[Version, ...]:
    """The releases of ``name`` that were read, oldest first."""
    return tuple(vllm_readings()) if name == "vllm" else tuple(sorted(SGLANG_READ))


def _text(version: Version) -> str:
    return ".".join(map(str, version))


@dataclass(frozen=True, slots=True)
class Assumed:
    """The read release whose rules answer for an engine version, and whether it is that
    version itself."""

    engine: Engine
    release: Version

    @property
    def release_text(self) -> str:
        """The release assumed, as ``0.34.0``."""
        return _text(self.release)

    @property
    def read(self) -> bool:
        """Whether the engine version itself was read."""
        return not self.engine.pre and self.release == self.engine.version

    @property
    def note(self) -> str | None:
        """None for a release read; else which release's rules are assumed, and why."""
        if self.read:
            return None
        read = releases_read(self.engine.name)
        name, assumed = self.engine.name, _text(self.release)
        version = self.engine.version_text + self.engine.pre
        if self.engine.pre and self.engine.version in read:
            why = "a pre-release or dev build"
        elif self.engine.version > read[-1]:
            why = f"newer than {_text(read[-1])}, the newest read"
        elif self.engine.version < read[0]:
            why = f"older than {_text(read[0])}, the oldest read"
        else:
            why = "a release between two read ones" + (", a pre-release" if self.engine.pre else "")
        return f"{name} {version} was not read ({why}); {assumed}'s rules are assumed"

    def to_json(self) -> dict[str, object]:
        """``{"read": bool, "rules_of": "X.Y.Z", "note": str | None}``."""
        return {"read": self.read, "rules_of": _text(self.release), "note": self.note}


def assumed(engine: Engine) -> Assumed:
    """The read release that answers for ``engine``: itself when read, else the newest read
    release before it, else the oldest read."""
    read = releases_read(engine.name)
    before = [v for v in read if v <= engine.version]
    return Assumed(engine, before[-1] if before else read[0])


def reading(engine: Engine) -> Reading:
    """The vLLM reading that answers for ``engine`` (see :func:`assumed`)."""
    return vllm_readings()[assumed(engine).release]


def newest_read(name: EngineName) -> tuple[Version, str]:
    """The newest release of ``name`` read, and the day it was read."""
    if name == "vllm":
        newest = vllm_readings()[releases_read("vllm")[-1]]
        return newest.version, newest.read_on
    version = releases_read("sglang")[-1]
    return version, SGLANG_READ[version]
