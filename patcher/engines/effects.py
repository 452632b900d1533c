"""Whether a transform's declared effects (``[effects]``) hold in a given engine version.

The edit is compiled in memory; the engine model derives its values from the patched files;
each claimed value is compared with what the engine would derive.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from patcher.engines.engine import Engine
from patcher.engines.files import ConfigFiles, bom_after
from patcher.engines.model import derive
from patcher.engines.view import Derived, StartupError
from patcher.transforms.definition import Transform, substitute

# The vLLM releases whose config code was read (see patcher/engines/vllm.py and
# snapshots/engines/boundaries-vllm.json; 0.32 also live); warnings name the ones among them
# where an edit has no effect.
SAMPLED_VLLM = tuple(
    Engine("vllm", v)
    for v in (
        (0, 10, 1),
        (0, 11, 0),
        (0, 12, 0),
        (0, 13, 0),
        (0, 14, 0),
        (0, 15, 0),
        (0, 16, 0),
        (0, 17, 0),
        (0, 18, 0),
        (0, 19, 0),
        (0, 20, 0),
        (0, 21, 0),
        (0, 22, 0),
        (0, 23, 0),
        (0, 26, 0),
        (0, 27, 0),
        (0, 28, 0),
        (0, 29, 0),
        (0, 30, 0),
        (0, 32, 0),
        (0, 33, 0),
    )
)


@dataclass(frozen=True, slots=True)
class MissedEffect:
    """An effect the transform claims that ``engine`` does not derive from the patched files."""

    engine: Engine
    effect: str
    claimed: Any
    derived: Derived


def patched_files(
    before: ConfigFiles,
    changed: Mapping[str, bytes],
    label: str = "as the transform would leave it",
) -> ConfigFiles:
    """``before`` with other bytes (name -> bytes) put in: the files a plan rewrites, or the
    journal's originals. Messages name config.json with ``label`` when it is one of them."""

    def pick(name: str, old: dict[str, Any] | None) -> dict[str, Any] | None:
        return json.loads(changed[name]) if name in changed else old

    return ConfigFiles(
        pick("config.json", before.config),
        pick("hf_quant_config.json", before.hf_quant),
        f"{before.source} ({label})" if "config.json" in changed else before.source,
        before.weights,
        bom_after(before.bom, changed),
        pick("generation_config.json", before.generation),
    )


@dataclass(frozen=True, slots=True)
class NewRefusal:
    """A start-up error ``engine`` raises on the patched files and not on the files before."""

    engine: Engine
    error: StartupError


@dataclass(frozen=True, slots=True)
class EditVerdict:
    """What an edit does in each engine: the declared effects that do not hold, and the
    start-up errors it brings."""

    missed: tuple[MissedEffect, ...]
    refused: tuple[NewRefusal, ...]


def _holds(effect: str, claimed: Any, derived: Any) -> bool:
    """Whether an engine derives what a transform claims. Stop ids hold when the engine stops
    on each claimed id (SGLang also stops on config.json's own)."""
    if effect == "eos_token_id":
        return _id_set(claimed) <= _id_set(derived)
    return bool(derived == claimed)


def _id_set(value: Any) -> set[str]:
    """One id or a list of them, as a set (of their JSON text: a malformed claim stays hashable)."""
    return {json.dumps(v) for v in (value if isinstance(value, list) else [value])}


def judge_edit(
    transform: Transform,
    params: Mapping[str, Any],
    before: ConfigFiles,
    after: ConfigFiles,
    engines: Iterable[Engine],
) -> EditVerdict:
    """Each engine's view of the files before and after the edit, derived once each."""
    missed: list[MissedEffect] = []
    refused: list[NewRefusal] = []
    for engine in engines:
        view = derive(engine, after)
        for effect, claim in transform.effects.items():
            claimed = substitute(claim, params)
            derived: Derived = getattr(view, effect)
            if derived.value is not None and not _holds(effect, claimed, derived.value):
                missed.append(MissedEffect(engine, effect, claimed, derived))
        old = {e.message for e in derive(engine, before).startup_errors}
        refused += [NewRefusal(engine, e) for e in view.startup_errors if e.message not in old]
    return EditVerdict(tuple(missed), tuple(refused))


def version_ranges(engines: Iterable[Engine]) -> str:
    """``vLLM 0.10.1 to 0.20.0`` for runs of consecutive sampled releases."""
    chosen = {e.version for e in engines}
    runs: list[list[Engine]] = []
    previous_in = False
    for engine in SAMPLED_VLLM:
        if engine.version in chosen:
            if previous_in:
                runs[-1].append(engine)
            else:
                runs.append([engine])
        previous_in = engine.version in chosen
    parts = [
        run[0].version_text if len(run) == 1 else f"{run[0].version_text} to {run[-1].version_text}"
        for run in runs
    ]
    return "vLLM " + ", ".join(parts)
