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
from dataclasses import replace

from patcher.advice.auto_register import AUTO_REGISTER_MARKERS, AUTO_REGISTER_RULES
from patcher.advice.catalogue import (
    ENGINE_NAMES,
    SERVERS,
    Engine,
    at_or_below,
    config_classes,
    feature_by_release,
    feature_releases,
    releases,
    span_of,
    version_key,
)
from patcher.advice.layer_configs import upgrade_limit
from patcher.advice.log_rules import Fix, LogContext, Rule
from patcher.advice.requirements import required
from patcher.advice.strict_validation import before_strict
from patcher.engines.engine import EngineName

# The placeholder doctor --checkpoint replaces with patcher set of /model_type (judged.py):
# the model type of the config class the engine's class for the checkpoint's architecture is
# written for (the ``model_config`` feature, and transformers' ``config_types``).
MODEL_TYPE_OF_CLASS = "the model type the engine's class for the checkpoint's architecture reads"
MODEL_TYPE_OF_CLASS_NOTE = (
    "patcher doctor LOG --checkpoint CKPT names it, where a release read has a class for the "
    "architecture written for a config class transformers knows"
)
_ROPE_TYPE = re.compile(r"""['"](?:rope_)?type['"]:\s*['"]([\w-]+)['"]""")
_UPPER = re.compile(r"(<=|<|==)\s*(\d+(?:\.\d+)*)")


def _admits_from(specifier: str, least: str) -> bool:
    """Whether a requirement (``transformers<5,>=4.56.0``) admits ``least`` or a later release:
    its upper bounds only (an exclusion such as ``!=5.0.*`` leaves the later ones)."""
    for op, bound in _UPPER.findall(specifier):
        if op == "<" and not version_key(least) < version_key(bound):
            return False
        if op in ("<=", "==") and not version_key(least) <= version_key(bound):
            return False
    return True


def _admitting(engine: Engine, least: str) -> str | None:
    """The first release of the last unbroken run of releases read of ``engine`` whose
    transformers requirement admits ``least`` or later; None when none does. Releases that
    bound nothing before a run that excludes it are no evidence (vLLM 0.12 to 0.19 say
    ``<5``; the releases before them were written before transformers 5 existed)."""
    pins = required(engine, "transformers")
    span = span_of(engine, lambda r: r in pins and _admits_from(pins[r], least))
    return span[0] if span is not None and span[1] is None else None


def _engine_builds(rope_type: str, ctx: LogContext) -> list[Fix]:
    """An engine release whose ``get_rope`` builds ``rope_type`` from the config's
    ``rope_type`` key (the ``rope_type`` feature, tools/read_rope_types.py), where the log's
    engine release is older than the first that does: a newer transformers alone leaves it
    unable to build the scaling the config names."""
    engine = next((e for e in SERVERS if e == ctx.engine), None)
    if engine is None or ctx.version is None:
        return []
    recorded = feature_by_release(engine, "rope_type")
    having = set(feature_releases(engine, "rope_type", rope_type))
    span = span_of(engine, lambda r: r in having)
    if span is None or span[1] is not None or ctx.version >= version_key(span[0]):
        return []
    earlier = [r for r in recorded if version_key(r) <= ctx.version and r not in having]
    if not earlier:
        return []
    requirement = required(engine, "transformers").get(span[0], "")
    return [
        Fix(
            "dependency",
            f"pip install '{engine}>={span[0]}'",
            note=f"{ENGINE_NAMES[engine]} {span[0]} and later build rope_type {rope_type} from "
            f"the config (get_rope, read from each release's wheel; "
            f"{max(earlier, key=version_key)} does not)"
            + (f", and require {requirement}" if requirement else ""),
        )
    ]


def _rope_two_fields(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    from patcher.advice.catalogue import no_longer_raised, stopped_by_model

    said = "`rope_scaling` must be a dictionary with two fields"
    named = _ROPE_TYPE.search(m.string[m.end() :])
    fixes = [Fix("advice", "rewriting rope_scaling is a last resort: the config is right")]
    engine = _engine_builds(named.group(1), ctx) if named else []
    if ctx.config_file:
        after = no_longer_raised("transformers", said, ctx.config_file)
        if after is not None:
            fixes.insert(
                0,
                Fix(
                    "dependency",
                    f"pip install 'transformers>={after}'",
                    note="the first release read whose config class no longer raises this",
                ),
            )
        return _ROPE_CAUSE, [*engine, *fixes]
    # Each model's config class stopped raising it in its own release; without the traceback's
    # configuration_*.py the model is not known, and the log's engine release bounds which of
    # those releases it runs with.
    per_model = stopped_by_model(said)
    if not per_model:
        return _ROPE_CAUSE, [*engine, *fixes]
    beyond: dict[str, str] = {}
    server = next((e for e in SERVERS if e == ctx.engine), None)
    if server is not None and ctx.version is not None:
        for after in set(per_model.values()):
            first = _admitting(server, after)
            if first is None or ctx.version < version_key(first):
                beyond[after] = first or ""
    within_reach = [r for r in per_model.values() if r not in beyond]
    note = "per model: " + "; ".join(f"{model} {r}" for model, r in per_model.items())
    for after, first in sorted(beyond.items(), key=lambda kv: version_key(kv[0])):
        name = ENGINE_NAMES[server or "vllm"]
        note += f"; {after} is beyond this {name} release's requirement" + (
            f" ({name} admits it from {first})" if first else ""
        )
    if within_reach:
        fixes.insert(
            0,
            Fix(
                "dependency",
                f"pip install 'transformers>={max(within_reach, key=version_key)}'",
                note=note,
            ),
        )
    return _ROPE_CAUSE, [*engine, *fixes]


_ROPE_CAUSE = (
    "an old transformers cannot read a rope_scaling of the newer layout (a rope_type, such as "
    "Llama 3.1's llama3): the config is right, the library is old"
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
                note=("" if said else f"if the engine is {ENGINE_NAMES[name]}: ")
                + f"{ENGINE_NAMES[name]} {having[0]} and later read {model_type} with a config "
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
            f"{m.group(1)}: an upgrade of it is not known to help",
            [
                *own,
                Fix("flag", "--trust-remote-code", note="if the checkpoint ships its own code"),
                Fix("advice", MODEL_TYPE_OF_CLASS, note=MODEL_TYPE_OF_CLASS_NOTE),
                *(
                    ()
                    if own
                    else (
                        Fix("advice", "an engine release that registers this model type's config"),
                    )
                ),
            ],
        )
    lacked = _registry_lacks(m.group(1), ctx)
    lacking, with_class = lacked if lacked is not None else (None, None)
    added = [
        f
        for f in [_registry_added(m.group(1), ctx)]
        if f is not None and all(f.text != o.text for o in own)
    ]
    upgrade = Fix(
        "dependency",
        f"pip install 'transformers>={span[0]}'",
        note=_upgrade_note(span[0], with_class, ctx)
        + (", with an engine release that has the model (above)" if lacking else ""),
    )
    # the per-layer limit of the engine release the upgrade runs on: the log's, or the one
    # named above for the model class
    on = ctx if with_class is None else replace(ctx, version=version_key(with_class))
    limit = upgrade_limit(m.group(1), span[0], on)
    if limit is not None and limit.bound is not None:
        # a transformers between the two still builds the config whole
        upgrade = replace(
            upgrade,
            text=f"pip install 'transformers>={span[0]},<{limit.bound}'",
            note=f"{upgrade.note}; {limit.note}",
        )
    elif limit is not None and limit.engine is not None:
        added.insert(0, limit.engine)
    if lacking:
        # the release with the class also reads the type with its own config class: that
        # release alone starts it, whatever transformers is installed
        same = next((f for f in own if f.text == lacking.text), None)
        first = (
            replace(lacking, note=f"{lacking.note}; {same.note}") if same is not None else lacking
        )
        return (
            f"this transformers does not know model type {m.group(1)}, which transformers "
            f"{span[0]} and later know (read from their source, up to {span[1]}), and this "
            f"engine release has no model class for it either: {lacking.note}",
            [first, *(f for f in own if f.text != lacking.text), *([] if same else [upgrade])],
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
        # the engine's own class first (its release pins the transformers it was written for),
        # where the log has said whose it is by the error line: a chained traceback's first
        # error comes before any frame of the engine
        [*own, upgrade, *added]
        if ctx.engine or m.string.lstrip().startswith("Value error,")
        else [upgrade, *own],
    )


def _upgrade_note(least: str, with_class: str | None, ctx: LogContext) -> str:
    """Where the transformers upgrade stands against the engine's own requirement: the
    release the log names, or ``with_class`` (the first release with the model class).
    A requirement that excludes it (vLLM 0.12 to 0.19: ``transformers<5``) is said, with the
    first release read that admits it: pip installs it with a conflict warning."""
    server = _server(ctx)
    if server is None or (with_class is None and ctx.version is None):
        return "in the engine's environment, within the engine release's own bounds"
    pins = required(server, "transformers")
    release = with_class if with_class in pins else at_or_below(pins, ctx.version or ())
    if release is None or _admits_from(pins[release], least):
        return "in the engine's environment, within the engine release's own bounds"
    first = _admitting(server, least)
    name = ENGINE_NAMES[server]
    return (
        f"in the engine's environment, beyond {name} {release}'s own requirement "
        f"({pins[release]}): pip installs it with a conflict warning"
        + (f"; {name}'s requirement admits such a transformers from {first}" if first else "")
    )


def _registry_lacks(model_type: str, ctx: LogContext) -> tuple[Fix, str] | None:
    """The engine release (read) whose registry first lists the model class of ``model_type``,
    where the log's own release is a later one read without it: transformers alone would then
    not start it. The class is named as transformers names it (``Gemma2Config``:
    ``Gemma2ForCausalLM`` or ``Gemma2ForConditionalGeneration``), with that release; None where
    the log does not say which engine release it is, or no release read lists such a class."""
    from patcher.advice.architectures import release_for
    from patcher.engines.registries import architectures

    engine = _server(ctx)
    if engine is None or ctx.version is None:
        return None
    if ctx.version[:3] < min(architectures(engine)):
        return None  # a release before the registries read: what it lists is not known
    registry = architectures(engine)
    found = [
        (min(v for v, names in registry.items() if name in names), name, fix)
        for name in _model_classes(model_type)
        if (fix := release_for(name, ctx.version, engine)) is not None and ">=" in fix.text
    ]
    if not found:
        return None
    # the class the earliest release lists (Qwen3.5's checkpoints name the multimodal class,
    # listed from 0.17, where the text-only one came in 0.27)
    first, name, fix = min(found)
    version = ".".join(map(str, ctx.version))
    return (
        replace(fix, note=f"{ENGINE_NAMES[engine]} {version} has no {name}; {fix.note}"),
        ".".join(map(str, first)),
    )


def _server(ctx: LogContext) -> EngineName | None:
    """The serving engine the log names, if it names one."""
    return "sglang" if ctx.engine == "sglang" else "vllm" if ctx.engine == "vllm" else None


def _model_classes(model_type: str) -> tuple[str, ...]:
    """The model classes transformers names for ``model_type``'s config class
    (``Gemma2Config``: ``Gemma2ForCausalLM``, ``Gemma2ForConditionalGeneration``)."""
    from patcher.advice.catalogue import config_types

    prefix = next((c[: -len("Config")] for c, t in config_types().items() if t == model_type), "")
    return (prefix + "ForCausalLM", prefix + "ForConditionalGeneration") if prefix else ()


def _registry_added(model_type: str, ctx: LogContext) -> Fix | None:
    """Where the log names the engine but not its release: the first release read whose
    registry lists the model class of ``model_type``, as a way out if the log's release is
    older, only where that class came in a release after the first read (a class every release
    read lists says nothing of the log's release)."""
    from patcher.engines.registries import architectures

    engine = _server(ctx)
    if engine is None or ctx.version is not None:
        return None
    registry = architectures(engine)
    order = sorted(registry)
    for name in _model_classes(model_type):
        listed = [v for v in order if name in registry[v]]
        if listed and listed[0] > order[0]:
            first = ".".join(map(str, listed[0]))
            return Fix(
                "dependency",
                f"pip install '{engine}>={first}'",
                note=f"if this {ENGINE_NAMES[engine]} release has no {name}: the releases read "
                "that list it (the log does not say its release)",
            )
    return None


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


def strict_field(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A config field transformers' strict validation refuses: the value set in config.json
    (the float of an int where a float is asked), or a release before the strict ones."""
    field = m.group(1) or m.group(2)
    # "expected float, got int (value: 0)": the same number as a float is the value it takes
    widened = re.search(r"expected float, got int \(value: (-?\d+)\)", m.string)
    value = f"{widened.group(1)}.0" if widened else "VALUE"
    return (
        f"transformers validates each config field strictly (huggingface_hub's @strict): "
        f"config.json's {field} has a type or value its config class refuses (the message "
        "says which); releases before the strict ones read it",
        [
            Fix(
                "transform",
                f"patcher set {ctx.checkpoint} config.json /{field} {value}",
                note=("VALUE of the type the message names; " if value == "VALUE" else "")
                + f"the pointer where config.json holds {field} (a nested config: its path)",
            ),
            before_strict(),
        ],
    )


# huggingface_hub's @strict, which transformers' config classes use from 5.4.0 (read); engine
# rules take it ahead of the families (engine_rules.RULES).
STRICT_RULES: tuple[Rule, ...] = (
    (
        "config-field-validation",
        re.compile(
            r"Validation error for field '(\w+)'|"
            r"\bField '(\w+)' (?:with value .* doesn't match any type in|expected \w+, got)"
        ),
        strict_field,
    ),
)
STRICT_MARKERS = ("Validation error for field", "Field '")

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
    *AUTO_REGISTER_RULES,
)
# A line is tried against the rules only when it holds one of these (one per rule above;
# the bare KeyError is an error word every line filter keeps).
TRANSFORMERS_MARKERS = (
    "must be a dictionary with two fields",
    "but Transformers does not recognize",
    "is already used by a Transformers model",
    *AUTO_REGISTER_MARKERS,
)
