"""doctor's answers when a file the engine reads as JSON is not: transformers' wrapper of
``config.json``'s ``JSONDecodeError`` (its "is not a valid JSON file"), json's own refusal of
a byte-order mark, and a document that is not JSON from its first byte."""

from __future__ import annotations

import re

from patcher.advice.catalogue import feature_span, within
from patcher.advice.log_rules import Fix, LogContext


def bom(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A JSON file the engine read does not parse: a byte-order mark, usually; a file that is
    no config at all where the model path names one (a GGUF file)."""
    if m.group(1) is not None and not m.group(1).endswith(".json"):
        return _not_a_config(m.group(1), ctx)
    fixes = [ctx.apply("strip-bom")]
    if m.group(1) is None:
        cause = "a JSON config file (hf_quant_config.json, read as text) starts with a UTF-8 BOM"
        return cause, fixes
    fixes.append(Fix("advice", "if patcher check finds no byte-order mark: fix the JSON syntax"))
    return (
        f"{m.group(1)} cannot be parsed; a UTF-8 byte-order mark at its start is the usual cause",
        fixes,
    )


def _not_a_config(name: str, ctx: LogContext) -> tuple[str, list[Fix]]:
    """transformers was handed a file as the model's config: the engine took the model path
    for a checkpoint folder or hub name, where it reads GGUF only by the file's suffix."""
    engine = ctx.engines()[0]
    span = feature_span(engine, "choices:--quantization", "gguf")
    if not name.endswith(".gguf"):
        return (
            f"the model path names the file {name}, which the engine read as a JSON config: "
            "it takes a checkpoint folder, a hub name, or a file ending in .gguf",
            [
                Fix(
                    "advice",
                    "a GGUF file: give it the .gguf suffix (the engine tells GGUF by the name); "
                    "else the folder that holds config.json",
                )
            ],
        )
    if span is None:
        return ("this engine reads no GGUF file in any release read", [])
    first, after = span
    bounds = within(first, after)
    return (
        f"this {engine} does not read GGUF: it took {name} for a JSON config. {engine} "
        f"{first}{' to before ' + after if after else ' and later'} read .gguf files (their "
        "--quantization takes gguf; read from their source)",
        [
            Fix("dependency", f"pip install '{engine}{bounds}'"),
            Fix("advice", "or the model's safetensors checkpoint"),
        ],
    )


def not_json(_m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """json's "Expecting value: line 1 column 1": a file that is not JSON from its first byte."""
    # json's own words for a document that is not JSON from its first byte. Any JSON parse
    # says them (an HTTP reply, a wrapper's own file): only in an engine's log (its prefixes,
    # its traceback's paths) are they the engine reading a checkpoint file. Else: no answer.
    if ctx.engine is None:
        return ("", [])
    return (
        "a JSON file the engine reads is empty or not JSON from its first byte (a Git LFS "
        "pointer, an HTML page saved in its place, a cut-off download)",
        [
            Fix("advice", f"patcher check {ctx.checkpoint} names the file; download it again"),
        ],
    )
