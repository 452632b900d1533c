"""The tool-call and reasoning parsers a launch names, held to the release's own registries.

vLLM's ``--tool-call-parser`` and ``--reasoning-parser`` take the names its parser registries
hold (``ToolParserManager``, ``ReasoningParserManager``); argparse refuses any other before the
server starts (``error: argument --tool-call-parser: invalid choice: 'x'``). The names are read
per release from its source (``tools/read_source.py`` ``parsers``, in ``vllm_releases.json``).
A release not read is not judged.
"""

from __future__ import annotations

from collections.abc import Sequence

from patcher.engines.engine import Engine, Version
from patcher.engines.launch_flags import flag_words
from patcher.engines.readings import vllm_readings
from patcher.engines.view import StartupError

_REGISTRIES = {"--tool-call-parser": "tool_parsers", "--reasoning-parser": "reasoning_parsers"}


def registered_since(flag: str, name: str) -> Version | None:
    """The first vLLM release read whose registry for ``flag`` (``--tool-call-parser``,
    ``--reasoning-parser``) has ``name``; None when none does, or ``flag`` names no parser."""
    field = _REGISTRIES.get(flag)
    if field is None:
        return None
    return next((v for v, r in vllm_readings().items() if name in getattr(r, field)), None)


def parses(flag: str) -> bool:
    """Whether ``flag`` names a parser whose registry is read per release."""
    return flag in _REGISTRIES


def parser_flag_error(engine: Engine, flags: Sequence[str]) -> StartupError | None:
    """vLLM's refusal of a parser name its release does not register, with the release that
    does (None: every name is registered, or the release was not read)."""
    if engine.name != "vllm" or engine.pre:
        return None
    reading = vllm_readings().get(engine.version)
    if reading is None:
        return None
    for name, value, _words in flag_words(flags, "vllm"):
        field = _REGISTRIES.get(name)
        if field is None or value is None or value in getattr(reading, field):
            continue
        since = registered_since(name, value)
        return StartupError(
            f"argument {name}: invalid choice: '{value}'",
            code="unknown-parser",
            flag=name,
            note=f"vllm {engine.version_text} registers no {value}; "
            + (
                f"vLLM {'.'.join(map(str, since))} and later do (read from their source)"
                if since is not None and since > engine.version
                else "no release read registers it"
                if since is None
                else "an earlier release read did"
            ),
        )
    return None


def parser_words(engine: Engine, flags: Sequence[str]) -> tuple[str, ...]:
    """The words of ``flags`` that name a tool-call or reasoning parser, as given."""
    if engine.name != "vllm":
        return ()
    return tuple(
        w for name, _, words in flag_words(flags, "vllm") if name in _REGISTRIES for w in words
    )
