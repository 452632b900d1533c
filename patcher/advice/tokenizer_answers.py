"""doctor's answer to tokenizer files that do not load: the tokenizer the engine's own message
names in place of the checkpoint's, as the log's engine takes it; else the tokenizer class, or
the transformers the checkpoint was saved with."""

from __future__ import annotations

import re

from patcher.advice.catalogue import Engine, Matched, declared
from patcher.advice.log_rules import Fix, LogContext
from patcher.advice.own_remedy import own_remedy
from patcher.advice.tokenizer_attributes import dropped

# "If you are using a LLaMA V1 model consider using 'hf-internal-testing/llama-tokenizer'
# instead of the original tokenizer." (SGLang's hf_transformers_utils.py, 0.4.0 to 0.5.10;
# vLLM's "use '...' instead" before 0.2): the tokenizer to load in place of the model's own,
# whose slow LLaMA tokenizer raised a TypeError (protobuf, sentencepiece).
_INSTEAD = re.compile(r"\bus(?:e|ing)\s+'([\w./:+-]+)'\s+instead of the original tokenizer")
# vLLM's Mistral tokenizer (transformers_utils/tokenizers/mistral.py, 0.6 to 0.11) finds Mistral's
# own tokenizer file (tekken.json, tokenizer.model.vN) among the model's files: "Found 0 files
# matching the pattern ... Make sure that a Mistral tokenizer is present", or more than one.
# It is loaded only where --tokenizer-mode mistral asks for it.
_MISTRAL_NONE = re.compile(r"Make sure that a Mistral tokenizer is present")
_MISTRAL_MANY = re.compile(r"Make sure only one Mistral tokenizer is present")
# Each engine's flag for the tokenizer to load (vLLM's EngineArgs, SGLang's ServerArgs).
_TOKENIZER_FLAGS = ("--tokenizer", "--tokenizer-path")


def named_tokenizer(m: Matched, ctx: LogContext) -> list[Fix]:
    """The tokenizer the message names instead of the model's own, as the flag of the log's
    engine (both engines' where the log does not say which, vLLM's first)."""
    found = _INSTEAD.search(m.line)
    if found is None:
        return []
    engines: tuple[Engine, ...] = ("vllm", "sglang")
    if ctx.engine == "vllm":
        engines = ("vllm",)
    elif ctx.engine == "sglang":
        engines = ("sglang",)
    fixes: list[Fix] = []
    for engine in engines:
        flag = next((f for f in _TOKENIZER_FLAGS if declared(engine, f)), None)
        if flag is not None:
            fixes.append(
                Fix(
                    "flag",
                    f"{flag} {found.group(1)}",
                    note=f"{engine}'s flag; the tokenizer the engine's message names",
                )
            )
    return fixes


def _mistral_files(m: Matched) -> tuple[str, list[Fix]] | None:
    """Mistral's own tokenizer asked for (--tokenizer-mode mistral) and not one such file."""
    if _MISTRAL_NONE.search(m.line):
        return (
            "--tokenizer-mode mistral asks for Mistral's own tokenizer file (tekken.json or "
            "tokenizer.model.vN), and the model's files have none: they are in Hugging Face's "
            "format",
            [
                Fix(
                    "advice",
                    "leave out --tokenizer-mode mistral, and --config-format mistral and "
                    "--load-format mistral with it",
                    note="the default auto modes read Hugging Face's config.json, tokenizer "
                    "and weights; the mistral ones read Mistral's own params.json, tekken.json "
                    "and consolidated.safetensors",
                ),
            ],
        )
    if _MISTRAL_MANY.search(m.line):
        return (
            "more than one of Mistral's own tokenizer files is among the model's files "
            "(the message lists them), and --tokenizer-mode mistral loads exactly one",
            [
                Fix(
                    "advice",
                    "keep one of the files the message lists in the model's folder (the one "
                    "its model card names), or leave out --tokenizer-mode mistral",
                )
            ],
        )
    return None


def explain_tokenizer(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    """Tokenizer files that do not load: the tokenizer the engine names instead, or
    Mistral's own tokenizer asked for, or the tokenizer class, or the transformers."""
    mistral = _mistral_files(m)
    if mistral is not None:
        return mistral
    if (gone := dropped(m.line)) is not None:
        return gone
    named = named_tokenizer(m, ctx)
    if named:
        return (
            "the model's own tokenizer did not load (the slow LLaMA tokenizer's TypeError: "
            "protobuf or sentencepiece); the engine names a tokenizer to load instead",
            named,
        )
    return (
        "the tokenizer files do not load as this transformers reads them",
        [
            *own_remedy(m.line, m.template),
            ctx.apply("set-tokenizer-class", " --set class=PreTrainedTokenizerFast"),
            Fix("dependency", "the transformers the checkpoint was saved with"),
        ],
    )
