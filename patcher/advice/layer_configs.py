"""doctor's answer to transformers refusing a per-layer attribute read whole
(``AmbiguousGlobalPerLayerAttributeError: 'head_dim' is a per-layer attribute and may vary
across layers``): from some release on, transformers builds a model's config per layer (Gemma
4's from 5.15.0), and an engine release written before reads the attribute off the whole config
as it builds its model config. Two ways out, each read from source: the transformers release
before the first that builds any per-layer config (the ``per_layer_config`` feature of
``errors-transformers.json``, tools/read_layer_configs.py), within the engine release's own
transformers requirement; and the first engine release read whose own code reads
``per_layer_config`` (the same feature of the engine's catalogue: ``reads``, or ``whole`` for a
release read that does not).
"""

from __future__ import annotations

from dataclasses import dataclass

from patcher.advice.catalogue import (
    Engine,
    Matched,
    at_or_below,
    feature_by_release,
    feature_releases,
    features_of,
    version_key,
)
from patcher.advice.log_rules import Fix, LogContext
from patcher.advice.requirements import required_at

FEATURE = "per_layer_config"


def _first_per_layer() -> tuple[str, list[str]] | None:
    """The first transformers release read that builds a per-layer config, with the model
    types each first did so in that release; None when no release read does."""
    types = (t for t in features_of("transformers", FEATURE) if t)
    firsts = {t: feature_releases("transformers", FEATURE, t)[0] for t in types}
    if not firsts:
        return None
    first = min(firsts.values(), key=version_key)
    return first, sorted(t for t, r in firsts.items() if r == first)


def _admits_below(requirement: str | None, bound: str) -> bool:
    """Whether an engine release's transformers requirement leaves a release below ``bound``
    (a lower bound at or past it does not)."""
    if requirement is None:
        return True
    for clause in requirement.split(";")[0].split(","):
        clause = clause.strip().removeprefix("transformers").strip()
        for op in (">=", "==", ">"):
            if clause.startswith(op):
                least = clause[len(op) :].strip()
                if version_key(least) >= version_key(bound):
                    return False
    return True


def explain_per_layer(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    """The cause, the engine release that reads per-layer configs, and the transformers
    release before the first that builds them."""
    attribute = m.value("key") or "the attribute"
    engine: Engine = "sglang" if ctx.engine == "sglang" else "vllm"
    version = ctx.version[:3] if ctx.version else None
    first = _first_per_layer()
    reading = feature_releases(engine, FEATURE, "reads")
    fixes: list[Fix] = []
    newer = (
        reading[0] if reading and (version is None or version < version_key(reading[0])) else None
    )
    if newer is not None:
        read = _read_for(engine)
        fixes.append(
            Fix(
                "dependency",
                f"pip install '{engine}>={newer}'",
                note=f"the first {engine} release read whose code reads per_layer_config "
                f"(read for it: {read[0]} to {read[-1]})",
            )
        )
    if first is not None:
        bound, types = first
        answering = required_at(engine, "transformers", ctx.version) if ctx.version else None
        requirement = answering[1] if answering else None
        if _admits_below(requirement, bound):
            pinned = (requirement or "").removeprefix("transformers==")
            fixes.append(
                Fix(
                    "dependency",
                    f"pip install 'transformers=={pinned}'",
                    note=f"the engine release's own pin, before {bound}: the releases before "
                    f"it build no config per layer ({', '.join(types)} from {bound} on, read)",
                )
                if requirement and requirement.startswith("transformers==")
                else Fix(
                    "dependency",
                    f"pip install 'transformers<{bound}'",
                    note=f"the releases before {bound} build no config per layer "
                    f"({', '.join(types)} from {bound} on, read), where that release knows "
                    "the model",
                )
            )
    built = f"from {first[0]} on " if first else ""
    elsewhere = reading and version is not None and version >= version_key(reading[0])
    cause = (
        f"transformers builds this model's config per layer {built}and refuses {attribute} "
        "read off the whole config; the engine reads it whole as it builds its model config"
        + (" (this release reads per_layer_config elsewhere, not here)" if elsewhere else "")
    )
    return cause, fixes or [
        Fix("advice", "install the transformers release the engine release was tested with")
    ]


def _read_for(engine: Engine) -> list[str]:
    """The releases of ``engine`` read for the feature (reading per-layer configs or not),
    oldest first."""
    return sorted(feature_by_release(engine, FEATURE), key=version_key)


@dataclass(frozen=True, slots=True)
class UpgradeLimit:
    """What per-layer configs change in a transformers upgrade a model type needs, on an
    engine release that reads them whole."""

    bound: str | None  # the first transformers release read that builds the type per layer
    note: str
    engine: Fix | None  # where ``bound`` is None: the engine release that reads them


def upgrade_limit(model_type: str, least: str, ctx: LogContext) -> UpgradeLimit | None:
    """For a transformers upgrade to ``least`` or later that ``model_type`` needs: where the
    log's engine release reads per-layer configs whole and a read transformers release builds
    this model type's config per layer, the bound below that release, or (where it does so from
    ``least`` on, so no transformers serves it on this engine release) the first engine release
    read that reads them; None where nothing limits the upgrade (the engine reads per-layer
    configs, the type's config is never per layer, or the log does not say which release)."""
    if ctx.version is None or ctx.engine not in ("vllm", "sglang"):
        return None
    engine: Engine = "sglang" if ctx.engine == "sglang" else "vllm"
    by_release = feature_by_release(engine, FEATURE)
    answering = at_or_below(by_release, ctx.version)
    layered = feature_releases("transformers", FEATURE, model_type)
    if answering is None or by_release[answering] != "whole" or not layered:
        return None
    reading = feature_releases(engine, FEATURE, "reads")
    reader = f"; {engine} reads them from {reading[0]} (read)" if reading else ""
    note = (
        f"transformers {layered[0]} and later build {model_type}'s config per layer, which "
        f"{engine} {answering} reads whole{reader}"
    )
    if version_key(layered[0]) > version_key(least):
        return UpgradeLimit(layered[0], note, None)
    upgrade = (
        Fix("dependency", f"pip install '{engine}>={reading[0]}'", note=f"with it: {note}")
        if reading
        else None
    )
    return UpgradeLimit(None, note, upgrade)
