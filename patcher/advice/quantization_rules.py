"""doctor's answers for a quantization the engine cannot load as asked, read from vLLM's
source: the method named against the one declared (``ModelConfig._verify_quantization``), a
method no release lists, a GPU below the method's capability, a method asked of a checkpoint
that has no config for it (``get_quant_config``), and quantized weights loaded into a model
built without the method (a model's ``load_weights``). ``engine_rules.py`` holds the patterns.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from patcher.advice.catalogue import (
    Engine,
    Matched,
    feature_releases,
    features_named,
    features_of,
    has_feature,
    releases,
    span_where,
    version_key,
    within,
)
from patcher.advice.log_rules import Fix, LogContext


def quantization_mismatch(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """ModelConfig._verify_quantization: ``--quantization`` (or ``gguf``, which vLLM sets for a
    model that is a .gguf file) differs from the config's quant_method, and no method of the
    release overrides the one with the other."""
    declared, given = m.group(1), m.group(2)
    if given == "gguf":
        return (
            f"the model is a GGUF file (vLLM loads it as gguf) beside a config.json whose "
            f"quantization_config declares {declared}: that describes other weights",
            [
                replace(
                    ctx.apply("remove-quantization-config"),
                    note="the GGUF file carries its own quantization",
                )
            ],
        )
    return (
        f"--quantization {given} was given for a checkpoint whose config declares "
        f"{declared}, and no {given} method of this release reads a {declared} config",
        [
            Fix(
                "advice",
                f"drop --quantization {given}",
                note=f"vLLM reads {declared} from the checkpoint's config itself",
            )
        ],
    )


def unknown_quantization(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A quant_method no release read lists, or one this release does not (yet, or any more):
    the releases that list it (``--quantization``'s choices read per release of vLLM, 0.4.3 on,
    and of SGLang; vLLM's readings from 0.10.1)."""
    method = m.group(1)
    engine: Engine = "sglang" if (ctx.engine == "sglang" or "sglang" in m.string) else "vllm"
    span = span_where(engine, "choices:--quantization", lambda name: name == method)
    fixes = [
        Fix(
            "transform",
            f"patcher apply {ctx.checkpoint} remove-quantization-config",
            note="only if the weights are not quantized",
        )
    ]
    if span is None:
        known = list(releases(engine))
        return (
            f"no {engine} release read ({known[0]} on) lists the quantization method {method}: "
            "a misspelt quant_method, or another engine's format; an upgrade is not known to help",
            [
                Fix("advice", "fix quantization_config.quant_method to the method the weights use"),
                *fixes,
            ],
        )
    first, after = span
    bound = within(first, after)
    if ctx.version is not None and after is not None and ctx.version[:3] >= version_key(after):
        return (
            f"this {engine} no longer lists {method} ({engine} {first} to before {after} do, "
            "read from their source)",
            [Fix("dependency", f"pip install '{engine}{bound}'"), *fixes],
        )
    until = f" to before {after}" if after else " and later"
    return (
        f"this {engine} does not know the quantization method {method}, which {engine} "
        f"{first}{until} list (read from their source)",
        [Fix("dependency", f"pip install '{engine}{bound}'"), *fixes],
    )


def no_quantization_config(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """weight_utils.get_quant_config: ``--quantization X`` for a checkpoint with no
    quantization_config in config.json and none of X's own config files: its weights are not
    X's."""
    method = m.group(1)
    return (
        f"--quantization {method} was given, but the checkpoint has no {method} quantization "
        "config (config.json's quantization_config, or the method's own config file): its "
        f"weights are not {method}-quantized",
        [
            Fix(
                "advice",
                f"drop --quantization {method}",
                note="serve the weights as they are (vLLM reads a quantized checkpoint's method "
                "from its config itself)",
            ),
            Fix(
                "advice",
                f"quantize the checkpoint with {method}'s tool first, or use a {method} checkpoint",
            ),
        ],
    )


# The parameters only a quantization method's create_weights makes (AWQ and GPTQ: qweight,
# qzeros, g_idx; compressed-tensors: weight_packed; block FP8: weight_scale_inv): a model
# built without the method has no such parameter, and its load_weights looks it up.
_QUANT_PARAMS = {
    "qweight": "awq or gptq",
    "qzeros": "awq or gptq",
    "g_idx": "gptq",
    "weight_packed": "compressed-tensors",
    "weight_scale_inv": "fp8",
}


# An MoE router ("mlp.gate", "router"): vLLM builds most unquantized whatever the checkpoint
# holds (qwen2_moe.py, deepseek_v2.py, mixtral.py: ``ReplicatedLinear(..., quant_config=None)``)
# and leaves qwen3_moe.py's to the method's config, which may skip it.
_ROUTER = re.compile(r"(?:^|\.)(?:gate|router)$")


def quantized_weights(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A parameter only a quantization method makes, looked up in a model that has none there:
    a model built unquantized (no quantization_config where the engine reads it), or, where
    the log shows the model built quantized or the layer is an MoE router, a layer the engine
    builds unquantized that the checkpoint quantized."""
    name, suffix = m.group(1), m.group(2)
    method = _QUANT_PARAMS[suffix]
    first = method.split()[0]
    layer = name.rsplit(".", 1)[0]
    flag = Fix(
        "flag",
        f"--quantization {first}",
        note=f"the method the checkpoint was quantized with ({method})",
    )
    built = ctx.quantization not in (None, "None")
    if built or (_ROUTER.search(layer) and ctx.quantization is None):
        under = f" under {ctx.quantization}" if built else ""
        fixes = [
            Fix(
                "advice",
                "an engine release that quantizes this layer as the checkpoint does, or a "
                "checkpoint that leaves it unquantized",
            )
        ]
        if not built:
            fixes.append(
                replace(
                    flag,
                    kind="advice",
                    note="only if the log shows quantization=None (no quantization_config found)",
                )
            )
        return (
            f"the checkpoint quantizes {layer} ({method}), a layer this release builds "
            f"unquantized{under} (an MoE router, or a layer the method leaves out): an engine gap "
            "for this checkpoint's layout; no config edit helps",
            fixes,
        )
    return (
        f"the checkpoint holds {method} weights ({name}) but the model was built unquantized: "
        "the engine found no quantization_config where it reads one (config.json's top level; "
        "a multimodal checkpoint may keep it under text_config)",
        [
            flag,
            Fix(
                "advice",
                "or copy the nested quantization_config to config.json's top level "
                f"(patcher set {ctx.checkpoint} config.json /quantization_config VALUE)",
            ),
        ],
    )


def quantization_gpu(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A method whose minimum compute capability is above the GPU's. The minimum is each
    release's ``get_min_capability`` (read per release: vLLM's fp8 asked 89 in 0.4, 80 from
    0.5 with the Marlin fallback, 75 from 0.14), so a release that asks no more than this GPU
    has runs the method on it; where none read does, it is a hardware limit."""
    method, need, have = m.group(1), int(m.group(2)), int(m.group(3))
    engine: Engine = "sglang" if (ctx.engine == "sglang" or "sglang" in m.string) else "vllm"
    span = span_where(engine, f"min_capability:{method}", lambda cap: int(cap) <= have)
    if span is not None:
        first, after = span
        bound = within(first, after)
        return (
            f"{method} needs compute capability {need} in this {engine}, the GPU has {have}; "
            f"{engine} {first}{' to before ' + after if after else ' and later'} ask at most "
            f"{have} of it (get_min_capability, read per release)",
            [
                Fix("dependency", f"pip install '{engine}{bound}'"),
                Fix("advice", "or another GPU, or a checkpoint in a format this GPU runs"),
            ],
        )
    read = has_feature(engine, f"min_capability:{method}")
    return (
        f"{method} needs compute capability {need}, this GPU has {have}: a hardware limit, no "
        "config edit helps"
        + (f" (no {engine} release read asks {have} or less of it)" if read else ""),
        [Fix("advice", "another GPU, or a checkpoint in a format this GPU runs")],
    )


def modelopt_algo(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """A ModelOpt quant_algo this release's loader does not read."""
    return (
        f"this vLLM's ModelOpt loader does not read the algorithm {m.group(1)}; which release "
        "does is not in patcher's reading",
        [Fix("advice", "a vLLM release whose ModelOpt loader lists it; do not edit quant_algo")],
    )


# base_config.py's get_from_keys (vLLM, SGLang): none of the keys a method's from_config asks
# for is in the checkpoint's quantization_config.
_MISSING_KEYS = re.compile(r"Cannot find any of (\[[^\]]*\]) in the model's quantization config")


def required_keys_dropped(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]] | None:
    """A quantization_config key the log's release requires of a method and a later release
    read does not (``quant_requires:<method>``, tools/read_quantization.py): that release.
    The method is the one the log built the model with, else every method of the raising
    releases that requires exactly these keys; None where no read release drops them."""
    found = _MISSING_KEYS.search(m.line)
    engine = m.template.engine
    if found is None or engine == "transformers":
        return None
    try:
        keys = ast.literal_eval(found.group(1))
    except (ValueError, SyntaxError):
        return None
    joined = ",".join(str(k) for k in keys)
    methods = (
        [ctx.quantization]
        if ctx.quantization and ctx.quantization != "None"
        else [
            f.split(":", 1)[1]
            for f in features_named(engine, "quant_requires:")
            if joined in features_of(engine, f)
        ]
    )
    order = sorted(releases(engine), key=version_key)
    for method in methods:
        requiring = feature_releases(engine, f"quant_requires:{method}", joined)
        if not requiring:
            continue
        having = {
            r
            for f in features_named(engine, "quant_class:")
            for r in feature_releases(engine, f, method)
        }
        since = ctx.version or version_key(requiring[0])
        later = [
            r
            for r in order
            if version_key(r) > since
            and version_key(r) > version_key(requiring[-1])
            and r in having
        ]
        if later:
            return (
                f"this release's {method} method requires {found.group(1)} in the checkpoint's "
                f"quantization_config, which the checkpoint does not have; {engine} "
                f"{later[0]} and later (read) no longer ask for it",
                [
                    Fix(
                        "dependency",
                        f"pip install '{engine}>={later[0]}'",
                        note=f"the first release read whose {method} config does not require "
                        f"{found.group(1)}",
                    )
                ],
            )
    return None
