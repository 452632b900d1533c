"""doctor's answers when an engine's model registry has no class for the checkpoint's
architecture: vLLM's and SGLang's registries raise the same words, so the answer is the
engine's whose log it is; the release that lists the class comes from the registries read
(``patcher.engines.registries``), never from a guess."""

from __future__ import annotations

import re
from dataclasses import replace

from patcher.advice.answers import CLASS_NOT_LOADED, CLASS_NOT_LOADED_FIX
from patcher.advice.catalogue import Matched, feature_releases, features_of, version_key
from patcher.advice.config_fields import field_release
from patcher.advice.log_rules import Fix, LogContext
from patcher.engines.engine import EngineName
from patcher.engines.registries import architectures

# Where neither the log nor a --checkpoint names the architecture, the release is the user's to
# find; with the checkpoint, doctor finds it (judged.judge_fixes).
REGISTRY_LISTS = "a vLLM release whose registry lists the checkpoint's architecture"
REGISTRY_LISTS_NOTE = "patcher doctor LOG --checkpoint CKPT names the release that lists it"
# The classes of vLLM's Transformers backend (TransformersForCausalLM,
# TransformersMultiModalForCausalLM, ...), which its fallback warning names from 0.11.
_BACKEND_CLASS_PREFIX = "Transformers"
# A traceback frame in the backend's module (models/transformers.py to 0.13, a package after).
_BACKEND_FRAME = re.compile(r"/vllm/model_executor/models/transformers(?:/\w+)?\.py\b")
# The backend asked for, not fallen back to: --model-impl transformers, or the non-default
# args' and the engine config's model_impl (vLLM 0.8 on).
CHOSEN_BACKEND = re.compile(r"model[_-]impl['\"]?(?::\s*|=|\s+)['\"]?transformers\b")
# The processor method the backend counts a multimodal prompt's tokens with (its
# get_max_image_tokens and _get_mm_fields_config, 0.10.1 to 0.34.0, read): vLLM's only caller.
PROCESSOR_HOOK = "_get_num_multimodal_tokens"
_MISSING_HOOK = re.compile(rf"'(\w+)' object has no attribute '{PROCESSOR_HOOK}'")


def release_for(
    name: str, version: tuple[int, ...] | None, engine: EngineName = "vllm"
) -> Fix | None:
    """The ``engine`` release whose registry (read) lists ``name``: the first, or the last
    where a newer one dropped it; None when no release read lists it."""
    registry = architectures(engine)
    listed = [v for v, names in registry.items() if name in names]
    if not listed:
        return None
    text = ".".join
    dropped = listed[-1] < max(registry)
    if (version is not None and version[:3] > listed[-1]) or (version is None and dropped):
        return Fix(
            "dependency",
            f"pip install '{engine}=={text(map(str, listed[-1]))}'",
            note=f"the last release read that lists {name}",
        )
    if version is not None and version[:3] >= listed[0]:
        return None  # this release lists it: the refusal has another cause
    first = text(map(str, listed[0]))
    return Fix(
        "dependency",
        f"pip install '{engine}>={first}'",
        # a class every release read lists may be older than the reading: say where it starts
        note=f"the releases read that list {name}"
        + (
            f"; registries are read from {first}, so an older release may list it too"
            if listed[0] == min(registry)
            else ""
        ),
    )


def registered_release(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]] | None:
    """An engine's message naming the architecture its Transformers backend could not load
    ("Cannot find model module. 'X' is not a registered model in the Transformers library"):
    vLLM and SGLang try the backend only where the release's registry has no class for X, so
    a release whose registry (read) lists X is the fix; None where none does."""
    engine = m.template.engine
    name = (m.value("arch") or "").strip("'\" ")
    if engine not in ("vllm", "sglang") or not re.fullmatch(r"\w+", name):
        return None
    fix = release_for(name, ctx.version, engine)
    if fix is None or fix.kind != "dependency":
        return None
    return (
        f"this {engine} release's registry has no class for {name}, so it tried its "
        "Transformers backend, which finds no class for it either (nor the config's auto_map "
        f"one); the releases read that list {name} load it with their own",
        [fix],
    )


def _converted_release(name: str, version: tuple[int, ...] | None) -> Fix | None:
    """The vLLM releases that make ``name`` from the same model's class in their registry by
    its suffix (``LlamaForSequenceClassification`` from ``LlamaForCausalLM``: the suffix
    table and the registry's conversion, read per release as ``arch_suffix_converted``); None
    where no release read does, or the log's release already would."""
    suffixes = sorted(features_of("vllm", "arch_suffix_converted"), key=len, reverse=True)
    registry = architectures("vllm")
    for suffix in (s for s in suffixes if name.endswith(s) and name != s):
        stem = name[: -len(suffix)]
        converting = set(feature_releases("vllm", "arch_suffix_converted", suffix))
        for release in sorted(converting, key=version_key):
            major, minor, patch = (version_key(release) + (0, 0, 0))[:3]
            names: frozenset[str] = registry.get((major, minor, patch), frozenset())
            base = next((stem + other for other in suffixes if stem + other in names), None)
            if base is None or base == name:
                continue
            if version is not None and version[:3] >= version_key(release)[:3]:
                return None
            return Fix(
                "dependency",
                f"pip install 'vllm>={release}'",
                note=f"vLLM {release} and later make {name} from {base}, its registry's class "
                f"of the same model (the suffix {suffix}, converted)",
            )
    return None


def _first_read(engine: EngineName) -> str:
    """The oldest release of ``engine`` whose registry was read."""
    return ".".join(map(str, min(architectures(engine))))


def out_of_tree(engine: EngineName) -> Fix | None:
    """How ``engine`` takes a model class no release of it has, from the releases read: vLLM
    registers the classes of installed packages' ``vllm.general_plugins`` entry points
    (vllm/plugins/__init__.py, read with ``VLLM_PLUGINS``, which filters them); SGLang
    imports the package ``SGLANG_EXTERNAL_MODEL_PACKAGE`` names (models/registry.py). None
    where no release read has the mechanism."""
    if engine == "vllm":
        found = feature_releases("vllm", "env", "VLLM_PLUGINS")
        return (
            Fix(
                "advice",
                "install the model's vLLM plugin, where its publisher ships one (the model "
                "card or repository names the package), into the engine's environment",
                note=f"vLLM {found[0]} on registers the model classes of installed packages' "
                "vllm.general_plugins entry points at start (plugins/__init__.py); "
                "VLLM_PLUGINS, where set, must name it",
            )
            if found
            else None
        )
    found = feature_releases("sglang", "env", "SGLANG_EXTERNAL_MODEL_PACKAGE")
    return (
        Fix(
            "env",
            "SGLANG_EXTERNAL_MODEL_PACKAGE=PACKAGE",
            note=f"SGLang {found[0]} on imports the model classes of the package it names "
            "(models/registry.py): the model's SGLang implementation, where its publisher "
            "ships one",
        )
        if found
        else None
    )


def sglang_architecture(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """SGLang's registry has no class for the architectures ``m.group(1)`` names: one that
    failed to import (an earlier 'Ignore import error' line), or one the release lacks (the
    release whose registry lists it, from the reading)."""
    if ctx.import_failed:
        return (
            f"SGLang could not import the model class for {m.group(1)} (an earlier 'Ignore "
            "import error when loading sglang.srt.models...' line: a compiler, Triton or "
            "dependency failure), so it is missing from the list; this is not a config problem",
            [Fix("advice", "fix the import error that line names (gcc, Triton, a package)")],
        )
    names = re.findall(r"'([^']+)'", m.group(1)) or [m.group(1)]
    # SGLang's log names no version: a release that lists it is named only where some read
    # release does not (the failing one may be older, or newer and have dropped it)
    releases = [f for f in (release_for(n, None, "sglang") for n in names) if f is not None]
    # a class no release read has comes only from outside SGLang
    outside = [] if releases else [f for f in (out_of_tree("sglang"),) if f is not None]
    return (
        f"this SGLang has no model class for {m.group(1)}"
        + ("" if releases else f"; no SGLang release read ({_first_read('sglang')} on) lists it"),
        [
            *releases[:1],
            *outside,
            ctx.apply("set-architectures", " --set architecture=NAME"),
            Fix(
                "advice",
                "only when the weights match NAME's layout (a class of the same family)",
            ),
        ],
    )


def unnamed_architecture(ctx: LogContext) -> tuple[str, list[Fix]]:
    """``Model architectures [] are not supported``: the config names no class at all
    (``architectures`` missing or empty, vLLM warns "No model architectures are specified"
    first), so no release or plugin is the answer; the class must be given."""
    return (
        "the checkpoint's config.json names no model class (its architectures list is missing "
        "or empty; a multimodal config may name only its language model's, in a sub-config), "
        "so the engine has nothing to look up",
        [
            replace(
                ctx.apply("set-architectures", " --set architecture=NAME"),
                note="NAME: the model's class in the engine's supported-models list (the "
                "model card names it)",
            ),
            Fix("flag", '--hf-overrides \'{"architectures": ["NAME"]}\''),
        ],
    )


def architecture(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """``Model architectures [...] are not supported for now``: vLLM's registry, or SGLang's,
    which raises the same words."""
    names = re.findall(r"'([^']+)'", m.group(1))
    if not names and not ctx.import_failed:
        return unnamed_architecture(ctx)
    listed = set(re.findall(r"'([^']+)'", m.string[m.end() :]))
    # SGLang's registry raises the same words (models/registry.py, 0.4.0 to 0.5.23): in an
    # SGLang log, SGLang's answer, never a vLLM release. A log that does not say whose it is
    # tells by the supported list it prints: classes no vLLM release read has are not vLLM's.
    engine = ctx.engine
    if engine is None and listed:
        known = frozenset().union(*architectures("vllm").values())
        engine = "sglang" if len(listed - known) >= 2 else "vllm"
    if engine == "sglang" or ctx.import_failed:
        return sglang_architecture(m, ctx)
    if names and set(names) <= listed:  # in its own supported list: the class did not load
        return CLASS_NOT_LOADED, [CLASS_NOT_LOADED_FIX]
    releases = [
        f
        for f in (release_for(n, ctx.version) or _converted_release(n, ctx.version) for n in names)
        if f is not None
    ]
    # a class no release read has comes only from outside vLLM
    outside = [] if releases else [f for f in (out_of_tree("vllm"),) if f is not None]
    if engine is None:  # the words are SGLang's too: a vLLM release only if it is vLLM
        releases = [
            Fix("advice", f"if this is vLLM: {f.text}", note=f.note) for f in releases + outside
        ]
        outside = []
    return (
        ("this vLLM" if engine else "this engine (vLLM, or SGLang: both raise these words)")
        + f" has no model class for {m.group(1)}"
        + ("" if releases else f"; no vLLM release read ({_first_read('vllm')} on) lists it"),
        [
            *releases[:1],
            *outside,
            replace(
                ctx.apply("set-architectures", " --set architecture=NAME"),
                note="only where the weights have NAME's layout (a class of the same family)",
            ),
            Fix("flag", '--hf-overrides \'{"architectures": ["NAME"]}\''),
        ],
    )


def config_attribute(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """``AttributeError: 'Gemma3Config' object has no attribute 'vocab_size'``: the engine
    reads a field the model's config class does not have where the engine's release predates
    its support of the model (vLLM 0.7.3 on Gemma 3, whose config nests the text model's
    fields). The answer is the releases whose registry (read) lists the family's classes
    (``Gemma3For...``, or the stem itself: ``Llama_Nemotron_Nano_VL``). Where the release
    already lists them, or no release read lists one, the field is missing for another reason
    and the rule does not hold (no fix). Where the log names no release, the answer holds on
    the condition the user checks (``pip show``), unless the traceback runs through vLLM's
    Transformers backend, which a release takes only for an architecture its registry lacks."""
    stem, field = m.group(1).rstrip("_"), m.group(2)
    moved = field_release(f"{m.group(1)}Config", field)
    if moved is not None:  # the class has the field in other transformers releases (read)
        cause, fix = moved
        return f"the model's config class {m.group(1)}Config has no {field}: {cause}", [fix]
    engine: EngineName = "sglang" if ctx.engine == "sglang" else "vllm"
    registry = architectures(engine)
    family = sorted(
        {
            n
            for names in registry.values()
            for n in names
            if n == stem or re.match(rf"{stem}_?For[A-Z]", n)
        }
    )
    listing = [v for v, names in registry.items() if any(n in names for n in family)]
    if not listing or (ctx.version is not None and ctx.version[:3] >= min(listing)):
        return ("", [])
    first = ".".join(map(str, min(listing)))
    fallback = ctx.frame is not None and "/models/transformers" in ctx.frame
    # Without a release in the log the answer holds on a condition the user checks, unless
    # the traceback itself shows the registry lacks the model (the Transformers backend).
    unsure = ctx.version is None and not fallback
    condition = f"; where pip show {engine} names an older one" if unsure else ""
    said = f"the model's config class {m.group(1)}Config has no {field}, which "
    if ctx.version is None:
        cause = said + (
            f"the {engine} release reads where it predates its support for the model (a config "
            f"that nests the text model's fields); the {engine} releases read list the model "
            f"({family[0]}) from {first} on"
        )
        if fallback:
            cause += (
                ": the traceback runs through vLLM's Transformers backend, which a release "
                "takes for an architecture its registry lacks"
            )
    elif ctx.version[:3] < min(registry):  # a release older than any registry read
        cause = said + (
            f"this {engine} release reads: it predates the registries read "
            f"({_first_read(engine)} on), which list the model ({family[0]})"
        )
    else:
        cause = said + (
            f"this {engine} release reads: the release predates its support for the model "
            f"({family[0]})"
        )
    return (
        cause,
        [
            Fix(
                "dependency",
                f"pip install '{engine}>={first}'",
                note=f"the releases read that list {', '.join(family[:3])}{condition}",
            )
        ],
    )


def from_backend(
    root: str,
    version: tuple[int, ...] | None,
    *,
    fell_back: str | None,
    resolved: str | None,
    frame: str | None,
    chosen: bool,
) -> tuple[str, tuple[Fix, ...]] | None:
    """An error no rule knows, where the log says vLLM ran the model through its Transformers
    backend: its fallback warning (``fell_back``), the backend's own class resolved (0.11 on),
    a traceback ``frame`` in the backend's module, or a processor without the backend's hook.
    A command that chose the backend (``chosen``: --model-impl transformers) is no fallback:
    only the warning or the hook then says so."""
    own_class = resolved if resolved and resolved.startswith(_BACKEND_CLASS_PREFIX) else None
    in_module = frame is not None and _BACKEND_FRAME.search(frame) is not None
    if chosen:
        own_class, in_module = None, False
    if fell_back is None and own_class is None and not in_module and not _MISSING_HOOK.search(root):
        return None
    return through_fallback(fell_back or own_class, version, root)


def through_fallback(
    name: str | None, version: tuple[int, ...] | None, root: str = ""
) -> tuple[str, tuple[Fix, ...]] | None:
    """An error no rule knows, after vLLM's warning that it runs ``name`` through its
    Transformers backend (the release's registry has no class for it): the backend's error,
    and the release whose registry (read) lists ``name``, where one does. From 0.11 the warning
    names the backend's own class (``TransformersMultiModalForCausalLM``), and a traceback
    through the backend's module (``name`` None) says the same: the release is then the one
    that lists the checkpoint's architecture, which ``doctor --checkpoint`` names."""
    if name is None or name.startswith(_BACKEND_CLASS_PREFIX):
        return _through_backend(name, root)
    fix = release_for(name, version)
    if fix is None or fix.kind != "dependency" or "==" in fix.text:
        return None
    return (
        f"this vLLM has no class of its own for {name}: it ran the model through its "
        "Transformers backend (its warning above), and the error is that backend's",
        (fix,),
    )


def _through_backend(name: str | None, root: str) -> tuple[str, tuple[Fix, ...]]:
    """The backend's error where the log does not name the model's own architecture; a
    processor without the hook the backend counts multimodal tokens with, said as such."""
    ran = f" ({name})" if name else ""
    hook = _MISSING_HOOK.search(root)
    cause = (
        f"this vLLM ran the model through its Transformers backend{ran}, the fallback where "
        "its registry has no class of its own for the checkpoint's architecture, and the "
        "error is that backend's"
    )
    if hook is not None:
        cause += (
            f": the backend counts a multimodal model's tokens with the processor's "
            f"{PROCESSOR_HOOK} (transformers' ProcessorMixin; every vLLM read from 0.10.1 calls "
            f"it), which this model's processor, {hook.group(1)}, does not have, so no setting "
            "of this release serves it"
        )
    return cause, (Fix("advice", REGISTRY_LISTS, note=REGISTRY_LISTS_NOTE),)
