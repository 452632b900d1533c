"""The answer to a flag, or a combination of flags, the engine refuses at start-up: the flags
the message names or tells in words, the remedy it names itself, and the few refusals whose way
out the engine's source shows elsewhere (an environment variable, a release)."""

from __future__ import annotations

import re

from patcher.advice.answers import flags_named
from patcher.advice.architectures import REGISTRY_LISTS, REGISTRY_LISTS_NOTE, release_for
from patcher.advice.catalogue import (
    Engine,
    Matched,
    declared,
    flags,
    releases,
    templates,
    version_key,
)
from patcher.advice.log_rules import Fix, LogContext
from patcher.advice.own_remedy import as_flag, own_remedy

# vLLM 0.20 to 0.33 (config/vllm.py): what the V2 model runner lacks is refused only where
# VLLM_USE_V2_MODEL_RUNNER=1 forces it (0.20 names the variable in the message); from 0.23,
# left unset, vLLM picks the V1 runner by itself for those features (``use_v2_model_runner``).
_RUNNER_V2 = re.compile(r"(?:Model Runner V2|VLLM_USE_V2_MODEL_RUNNER) does not yet support")
# "`limit_mm_per_prompt` is only supported for multimodal models" (vLLM's ModelConfig, 0.6 to
# 0.9): the release took the model as text-only; its registry does not list the architecture
# as multimodal (or it fell back to the Transformers text backend).
_MULTIMODAL_ONLY = re.compile(r"`?([a-z][a-z0-9_]+)`? is only supported for multimodal models")
# "chunked prefill cannot be used with prefix caching now" (vLLM 0.4, 0.5): two features told
# in words; each is the flag whose words hold them.
_EXCLUSIVE = re.compile(
    r"\b([a-z][a-z ]{3,40}?) (?:cannot be used with|is not compatible with|"
    r"can't be used with) ([a-z][a-z ]{3,40}?)(?: now| yet| together)?[.,;]",
    re.IGNORECASE,
)


# Two flags a message refuses together, by name.
_BOTH_FLAGS = re.compile(
    r"(--[a-z][\w-]*) and (--[a-z][\w-]*) (?:cannot|can't|must not) be (?:enabled|used|set|"
    r"given|specified)(?: at the same time| together)"
)


def _flag_for(words: str, engine: str) -> str | None:
    """The engine's flag that switches on the feature ``words`` tell ("prefix caching":
    ``--enable-prefix-caching``), from the flags its messages name; a ``--no-X`` they name
    is argparse's negation of ``--X``. None when no flag or several do."""
    named = flags("sglang" if engine == "sglang" else "vllm")
    known = named | {"--" + f[5:] for f in named if f.startswith("--no-")}
    wanted = words.lower().split()
    forms = (wanted, ["enable", *wanted])
    found = sorted(f for f in known if f[2:].split("-") in forms)
    return found[0] if len(found) == 1 else None


# "Disabling sliding window is not supported for models with rope_scaling" (vLLM's ModelConfig):
# a feature the command line switched, told as the switching.
_SWITCHED = re.compile(r"\b(Disabling|Enabling) ([a-z][a-z ]{2,40}?) is not supported", re.I)


def refused_switch(line: str, engine: str) -> Fix | None:
    """Leaving out the flag whose switching the message refuses, when one flag of the engine's
    is that switch (``--disable-sliding-window``); None otherwise."""
    said = _SWITCHED.search(line)
    if said is None:
        return None
    verb = "disable" if said.group(1).lower() == "disabling" else "enable"
    flag = _flag_for(f"{verb} {said.group(2)}", engine)
    if flag is None or not flag[2:].startswith(verb):
        return None
    return Fix("advice", f"leave out {flag}", note="the engine refuses that switch here")


_NEEDED = re.compile(
    r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+) must be (?:provided|set|specified|given)\b"
)


# A setting's bound stated with its number: "max_num_batched_tokens must be <= 65528 when LoRA
# is enabled" (vLLM 0.4's LoRAConfig, the custom LoRA kernel's limit).
_AT_MOST = re.compile(
    r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b[`'\"]? must be (?:<=|<|at most) (\d+)\b"
)


def _bounded(m: Matched) -> tuple[str, list[Fix]] | None:
    """A setting given (or defaulted) above the bound the message states: the setting's flag at
    the bound. vLLM's max_num_batched_tokens defaults to the context length (SchedulerConfig,
    0.4 to 0.5: ``max(max_model_len, 2048)`` without chunked prefill) and is refused below it,
    so the context length is what brings it down."""
    bound = _AT_MOST.search(m.line)
    if bound is None:
        return None
    setting, limit = bound.group(1), bound.group(2)
    flag = as_flag(setting)
    if not declared(m.template.engine, flag):
        return None
    fixes = [Fix("flag", f"{flag} {limit}", note="the bound the message states")]
    if setting == "max_num_batched_tokens" and declared(m.template.engine, "--max-model-len"):
        fixes = [
            Fix("flag", f"{flag} {limit}", note="where the context length is that or less"),
        ]
        fixes.insert(
            0,
            Fix(
                "flag",
                f"--max-model-len {limit}",
                note="max_num_batched_tokens defaults to the context length (vLLM's "
                "SchedulerConfig: max(max_model_len, 2048) without chunked prefill), and a "
                "smaller one is refused below the context length",
            ),
        )
    return (f"{setting} is above the {limit} this release allows here", fixes)


def explain_named_flags(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    """A flag or a combination of flags refused: the flags the message names."""
    fixes = own_remedy(m.line, m.template)
    bounded = None if fixes else _bounded(m)
    if bounded is not None:
        return bounded
    needed = _NEEDED.search(m.line)
    if (
        not fixes
        and needed
        and ctx.validated
        and declared(m.template.engine, as_flag(ctx.validated))
    ):
        # "num_speculative_tokens must be provided with speculative model" under "validation
        # error for SpeculativeConfig": a key of the JSON that --speculative-config takes
        return (
            f"{needed.group(1)} is required in {as_flag(ctx.validated)}, whose config class "
            "refused the command line",
            [
                Fix(
                    "flag",
                    f"{as_flag(ctx.validated)} '{{..., \"{needed.group(1)}\": N}}'",
                    note=f"add {needed.group(1)} to the JSON already given",
                )
            ],
        )
    if _RUNNER_V2.search(m.line):
        return (
            "the V2 model runner, forced by VLLM_USE_V2_MODEL_RUNNER=1, lacks a feature the "
            "command line asks for",
            [
                Fix(
                    "env",
                    "VLLM_USE_V2_MODEL_RUNNER=0",
                    note="the V1 runner has it; from vLLM 0.23, left unset, vLLM chooses V1 by "
                    "itself for what V2 lacks",
                ),
                *fixes,
            ],
        )
    multimodal = _MULTIMODAL_ONLY.search(m.line)
    if multimodal:
        setting = multimodal.group(1)
        flag = as_flag(setting) if as_flag(setting) in flags() else setting
        listed = release_for(ctx.architecture, ctx.version) if ctx.architecture else None
        return (
            "this release takes the model as text-only: its registry does not list the "
            "checkpoint's architecture as multimodal (or it fell back to a text backend)",
            [
                listed or Fix("advice", REGISTRY_LISTS, note=REGISTRY_LISTS_NOTE),
                Fix("advice", f"leave out {flag}", note="only to serve the model as text"),
            ],
        )
    both = _EXCLUSIVE.search(m.line)
    engine = m.template.engine
    pair = (
        (_flag_for(both.group(1), engine), _flag_for(both.group(2), engine))
        if both
        else (None, None)
    )
    named = _BOTH_FLAGS.search(m.line)
    if named is not None and not both:
        # "--enable-auto-tool-choice and --enable-reasoning cannot be enabled at the same
        # time" (vLLM 0.7's cli_args.py): the two flags themselves
        pair = (named.group(1), named.group(2))
    if not fixes and pair[0] and pair[1] and pair[0] != pair[1]:
        fixes = [
            Fix(
                "advice",
                f"leave out one of {pair[0]} / {pair[1]}",
                note="the engine refuses the two together",
            )
        ]
        together = _together_since(engine, pair[0], pair[1], m.template.releases)
        if together is not None:
            fixes.append(
                Fix(
                    "dependency",
                    f"pip install '{engine}>={together}'",
                    note=f"no message of {engine} {together} or later refuses the two together "
                    "(read)",
                )
            )
    return (
        "the engine refuses a flag or a combination of flags at start-up",
        fixes or _switched(m) or flags_named(m.line),
    )


# A boolean setting the message names with its value ("BitAndBytes with enforce_eager = False
# is not supported yet", vLLM 0.5.4's config.py), and the words that make the value the one
# needed rather than the one refused.
_SWITCH = re.compile(
    r"`?\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)`?\s*(?:==?|:|is set to|is)\s*`?(True|False)\b"
)
_NEEDED_VALUE = re.compile(
    r"\b(?:requires?|must be|needs?|only (?:supported|works?|allowed)|set|make sure|ensure)\b",
    re.IGNORECASE,
)


def _switched(m: Matched) -> list[Fix]:
    """The flag that turns a boolean setting the message names to the value it takes: the
    flag itself where the refused value is False (or True is required), "leave out" where it
    is the other way; only a flag a release raising the message declares (read)."""
    named = _SWITCH.search(m.line)
    if named is None or "--" in m.line:  # a flag it names itself is flags_named's
        return []
    flag = as_flag(named.group(1))
    if not declared(m.template.engine, flag, m.template.releases):
        return []
    needed = _NEEDED_VALUE.search(m.line[: named.start()]) is not None
    if (named.group(2) == "True") == needed:
        return [Fix("flag", flag, note=f"sets {named.group(1)} to True")]
    return [Fix("advice", f"leave out {flag}", note=f"leaves {named.group(1)} False")]


def _together_since(
    engine: Engine, first: str, second: str, raising: tuple[str, ...]
) -> str | None:
    """The first release read after the last that raises this refusal where no message of
    that release or a later one names both flags (or their settings): from there the engine
    takes them together, as far as its messages tell."""
    if engine == "transformers" or not raising:
        return None
    later = [
        r for r in releases(engine) if version_key(r) > version_key(max(raising, key=version_key))
    ]
    if not later:
        return None
    names = [(f, f[2:].replace("-", "_")) for f in (first, second)]
    for template in templates(engine):
        if not any(r in later for r in template.releases):
            continue
        if all(flag in template.text or setting in template.text for flag, setting in names):
            return None  # a later release still refuses (or names) the pair
    return later[0]


def explain_reasoning_parser(m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
    """A reasoning parser refused as the engine starts (SGLang's constrained/
    reasoner_grammar_backend.py and parser/reasoning_parser.py, vLLM's vllm/reasoning/): the
    parser named by ``--reasoning-parser`` is not this model's, its think tokens not (single)
    tokens of this vocabulary, or its name not one the release registers."""
    if re.search(
        r"Unsupported model type|must be specified|parser '[^']*' not found|not found in", m.line
    ):
        return (
            "the --reasoning-parser name is not one this release registers",
            [Fix("advice", "--reasoning-parser NAME, a name of this release's own list")],
        )
    if "instance of MistralTokenizer" in m.line:  # vLLM builds it for --tokenizer-mode mistral
        return (
            "the Mistral reasoning parser reads Mistral's own tokenizer, which vLLM loads only "
            "with --tokenizer-mode mistral",
            [
                Fix("flag", "--tokenizer-mode mistral"),
                Fix("advice", "leave out --reasoning-parser"),
            ],
        )
    return (
        "the reasoning parser given does not fit this model: its think tokens are not (single) "
        "tokens of this model's vocabulary, so the parser is another model family's, or the "
        "model does not reason",
        [
            Fix("advice", "leave out --reasoning-parser", note="a model that does not reason"),
            Fix(
                "advice",
                "--reasoning-parser NAME of this model's own family",
                note="its chat template's think tokens tell which",
            ),
        ],
    )
