"""doctor's rules for the failures of transformers' own code the engines call: a model type
this transformers does not map (``AutoConfig``'s words, or a bare ``KeyError`` from older
releases), a legacy RoPE check a model's config class makes, and a config class an engine
registers that transformers now ships itself (answered with the first engine release whose
transformers requirement starts at the release that ships it, then the older transformers).
Each answer is read from the transformers releases read (``errors-transformers.json``: the
model types each maps, and each model's config class's messages per release).
"""

from __future__ import annotations

import re

from patcher.advice.catalogue import (
    ENGINE_NAMES,
    SERVERS,
    Engine,
    config_classes,
    feature_releases,
    releases,
    version_key,
)
from patcher.advice.log_rules import Fix, LogContext, Rule
from patcher.advice.requirements import required


def _rope_two_fields(_m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    from patcher.advice.catalogue import no_longer_raised, stopped_by_model

    said = "`rope_scaling` must be a dictionary with two fields"
    after = no_longer_raised("transformers", said, ctx.config_file)
    fixes = [Fix("advice", "rewriting rope_scaling is a last resort: the config is right")]
    # Each model's config class stopped raising it in its own release; the traceback's
    # configuration_*.py names the model, else every model's release is told.
    per_model = (
        "" if ctx.config_file else "; ".join(f"{m} {r}" for m, r in stopped_by_model(said).items())
    )
    if after is not None:
        fixes.insert(
            0,
            Fix(
                "dependency",
                f"pip install 'transformers>={after}'",
                note=(
                    f"per model: {per_model}"
                    if per_model
                    else "the first release read whose config class no longer raises this"
                ),
            ),
        )
    return (
        "an old transformers cannot read a rope_scaling of the newer layout (a rope_type, "
        "such as Llama 3.1's llama3): the config is right, the library is old",
        fixes,
    )


def _own_config(model_type: str, ctx: LogContext, line: str) -> list[Fix]:
    """The engine releases that read ``model_type`` with a config class of their own (their
    ``_CONFIG_REGISTRY``, read per release as ``own_config``): those start whatever
    transformers is installed. The log's engine only, where it is known (pydantic's "Value
    error, " is vLLM's config); a release the log names that already has it is no way out."""
    said = ctx.engine or ("vllm" if line.lstrip().startswith("Value error,") else None)
    engines = [e for e in SERVERS if said in (None, e)]
    fixes = []
    for name in engines:
        having = feature_releases(name, "own_config", model_type)
        if not having:
            continue
        if ctx.version is not None and name == "vllm" and ctx.version >= version_key(having[0]):
            continue
        fixes.append(
            Fix(
                "dependency",
                f"pip install '{name}>={having[0]}'",
                note=f"{ENGINE_NAMES[name]} {having[0]} and later read {model_type} with a config "
                "class of their own, whatever transformers is installed",
            )
        )
    return fixes


def _transformers_model_type(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    from patcher.advice.catalogue import model_types, releases

    span = model_types().get(m.group(1))
    own = _own_config(m.group(1), ctx, m.string)
    if span is None:
        read = list(releases("transformers"))
        return (
            f"no transformers release read ({read[0]} to {read[-1]}) knows model type "
            f"{m.group(1)}: an upgrade of it is not known to help; no config edit helps",
            [
                *own,
                Fix("flag", "--trust-remote-code", note="if the checkpoint ships its own code"),
                *(
                    ()
                    if own
                    else (
                        Fix("advice", "an engine release that registers this model type's config"),
                    )
                ),
            ],
        )
    upgrade = Fix(
        "dependency",
        f"pip install 'transformers>={span[0]}'",
        note="in the engine's environment, within the engine release's own bounds",
    )
    return (
        f"this transformers does not know model type {m.group(1)}, which transformers "
        f"{span[0]} and later know (read from their source, up to {span[1]}): it is older "
        "than the model"
        + (
            ", and an engine release that reads it with its own config class starts it"
            if own
            else ""
        ),
        # the engine's own class first: its release pins the transformers it was written for
        [*own, upgrade],
    )


def _config_mapping_key(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """transformers before 4.4x looked a model type up in ``CONFIG_MAPPING`` and let its
    ``KeyError`` out (configuration_auto.py ``_LazyConfigMapping.__getitem__``): a bare model
    type that a later read release knows. Any other key is not this rule's (no fix)."""
    from patcher.advice.catalogue import model_types

    if m.group(1) not in model_types():
        return "", []
    return _transformers_model_type(m, ctx)


def _written_for(engine: Engine, least: str) -> tuple[str, str] | None:
    """The first release read of ``engine`` whose transformers requirement starts at ``least``
    or later (``transformers==4.51.1``): a release written for the transformers that ships the
    class, so one that no longer registers its own copy."""
    pins = required(engine, "transformers")
    for release in releases(engine):
        bounds = re.findall(r"(?:==|>=|~=)\s*(\d+(?:\.\d+)*)", pins.get(release, ""))
        if bounds and max(map(version_key, bounds)) >= version_key(least):
            return release, pins[release]
    return None


def _class_clash(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    # transformers' auto classes refuse a second registration of a class they now ship: the
    # engine registers its own copy, written for an older transformers
    name = m.group(1).rsplit(".", 1)[-1]
    check = Fix(
        "dependency",
        "pip check",
        note="in the engine's environment: it names the transformers release the engine "
        "requires; install that one",
    )
    span = config_classes().get(name)
    first_read = next(iter(releases("transformers")), None)
    if span is None or span[0] == first_read:
        return (
            f"transformers is newer than this engine release expects: it now ships "
            f"{m.group(1)}'s model itself, which the engine registers too; no checkpoint edit "
            "helps",
            [check],
        )
    fixes = [
        Fix(
            "dependency",
            f"pip install 'transformers<{span[0]}'",
            note="this engine release with the transformers it was written for; a model that "
            f"needs transformers {span[0]} or later will not load with it",
        ),
        check,
    ]
    owner = m.group(1).split(".", 1)[0]
    engine: Engine | None = "sglang" if owner == "sglang" else "vllm" if owner == "vllm" else None
    later = _written_for(engine, span[0]) if engine is not None else None
    if engine is not None and later is not None:
        # first: it keeps the newer transformers, which newer models need
        fixes.insert(
            0,
            Fix(
                "dependency",
                f"pip install '{engine}>={later[0]}'",
                note=f"the first {engine} release read written for transformers {span[0]} or "
                f"later (it requires {later[1]}), whose own configs no longer clash",
            ),
        )
    return (
        f"transformers {span[0]} and later ship {name} themselves (read from their "
        "CONFIG_MAPPING_NAMES), and this engine release registers its own copy, written for "
        "an older transformers: no checkpoint edit helps",
        fixes,
    )


TRANSFORMERS_RULES: tuple[Rule, ...] = (
    (
        "rope-scaling-fields",
        re.compile(r"`rope_scaling` must be a dictionary with two fields, `type` and `factor`"),
        _rope_two_fields,
    ),
    (
        "transformers-too-old",
        re.compile(r"has model type `(\w+)` but Transformers does not recognize this architecture"),
        _transformers_model_type,
    ),
    (
        "config-mapping-key",
        re.compile(r"KeyError: '([a-z][a-z0-9_]*)'\s*$"),
        _config_mapping_key,
    ),
    (
        "transformers-class-clash",
        re.compile(r"'<class '([\w.]+)'>' is already used by a Transformers model"),
        _class_clash,
    ),
)
# A line is tried against the rules only when it holds one of these (one per rule above;
# the bare KeyError is an error word every line filter keeps).
TRANSFORMERS_MARKERS = (
    "must be a dictionary with two fields",
    "but Transformers does not recognize",
    "is already used by a Transformers model",
)
