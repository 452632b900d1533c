"""What an engine derives from a checkpoint: the values and the start-up errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from patcher.engines.engine import Engine
from patcher.engines.gpus import Gpu
from patcher.engines.readings import assumed
from patcher.results import JsonResult


@dataclass(frozen=True, slots=True)
class StartupError:
    """An error the engine's config stage raises, in the engine's words, and its fix."""

    message: str
    code: str = "startup-error"
    file: str | None = None
    pointer: str | None = None
    transform: str | None = None
    flag: str | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Derived:
    """One derived value and where it came from (for people)."""

    value: Any
    reason: str
    file: str | None = None
    pointer: str | None = None


@dataclass(frozen=True, slots=True, repr=False)
class EngineView(JsonResult):
    """What one engine version derives from the checkpoint's files, on one GPU if given."""

    engine: Engine
    gpu: Gpu | None
    max_model_len: Derived
    kv_cache_dtype: Derived
    quantization: Derived
    mla: bool
    attention_backends: tuple[str, ...] | None
    startup_errors: tuple[StartupError, ...]
    dtype: Derived = Derived(None, "the config stage failed")  # what --dtype auto resolves to
    # the request defaults taken from generation_config.json (a dict), and the ceiling it puts
    # on every response whatever the request asks (None: no such ceiling)
    sampling_defaults: Derived = Derived(None, "the config stage failed")
    max_tokens_cap: Derived = Derived(None, "the config stage failed")
    eos_token_id: Derived = Derived(None, "not derived")  # the generation config's stop ids
    # What the model cannot judge for these files (an architecture no registry read lists,
    # a config with no model in it, SGLang's attention backends): "starts" is then unknown.
    unknowns: tuple[str, ...] = ()
    # Set when the installed engine's own config code answered (``check --engine-python``):
    # who answered. Its answer counts for any version, read or not.
    answered_by: str | None = None

    @property
    def starts(self) -> bool:
        """Whether the config stage passes (and, with a GPU, a backend accepts the config)."""
        return not self.startup_errors

    @property
    def verdict(self) -> str:
        """``yes``, ``no``, or ``unknown`` where the model does not cover something (a release
        not read included: its start-up errors are then the assumed release's)."""
        if self.answered_by is None and not assumed(self.engine).read:
            return "unknown"
        if self.startup_errors:
            return "no"
        return "unknown" if self.unknowns else "yes"

    def to_json(self) -> dict[str, Any]:
        """What an engine derives from the checkpoint, as JSON (``check --engine``)."""
        return {
            "name": self.engine.name,
            "version": self.engine.version_text,
            "note": None if self.answered_by else assumed(self.engine).note,
            "answered_by": self.answered_by,
            "reading": assumed(self.engine).to_json(),
            "gpu": None
            if self.gpu is None
            else {"name": self.gpu.name, "compute_capability": self.gpu.capability_text},
            "max_model_len": self.max_model_len.value,
            "kv_cache_dtype": self.kv_cache_dtype.value,
            "dtype": self.dtype.value,
            "sampling_defaults": self.sampling_defaults.value,
            "max_tokens_cap": self.max_tokens_cap.value,
            "eos_token_id": self.eos_token_id.value,
            "quantization": self.quantization.value,
            "mla": self.mla,
            "attention_backends": None
            if self.attention_backends is None
            else list(self.attention_backends),
            "starts": self.verdict,
            "unknowns": list(self.unknowns),
            "startup_errors": [
                {
                    "message": e.message,
                    "file": e.file,
                    "pointer": e.pointer,
                    "transform": e.transform,
                    "flag": e.flag,
                    "note": e.note,
                }
                for e in self.startup_errors
            ],
            "reasons": {
                "max_model_len": self.max_model_len.reason,
                "kv_cache_dtype": self.kv_cache_dtype.reason,
                "dtype": self.dtype.reason,
                "sampling_defaults": self.sampling_defaults.reason,
                "max_tokens_cap": self.max_tokens_cap.reason,
                "eos_token_id": self.eos_token_id.reason,
                "quantization": self.quantization.reason,
            },
        }
