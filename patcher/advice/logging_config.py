"""doctor's answer when vLLM's own logging setup fails as it is imported: Python's
``logging.config`` says ``Unable to configure handler 'vllm'`` (chained from ``Unknown level:
'X'``). vLLM's ``logger.py`` (every release read, 0.4.3 to 0.34.0) builds a handler named
``vllm`` whose level is ``VLLM_LOGGING_LEVEL`` (``envs.py``: ``INFO`` when the variable is
unset, upper-cased); a variable set to a value ``logging`` has no level for, most often set
empty by a wrapper or container that passes ``-e VLLM_LOGGING_LEVEL=$VAR`` with ``$VAR`` unset,
fails ``dictConfig`` before the engine reads anything. The file ``VLLM_LOGGING_CONFIG_PATH``
names, where set, replaces that configuration and can name the handler wrongly too.
"""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix, LogContext, Rule

# logging.config's own words for a handler it could not build, for vLLM's handler.
HANDLER = re.compile(r"Unable to configure handler 'vllm'")
# logging's refusal of a level name (the root of the chain that ends in the line above).
LEVEL = re.compile(r"Unknown level: '([^']*)'")


def unconfigured(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """vLLM's handler 'vllm' could not be built: the level VLLM_LOGGING_LEVEL gave it."""
    level = m.group(1) if m.re is LEVEL else None
    said = "an empty value" if level == "" else (f"'{level}'" if level else "a value")
    return (
        f"vLLM's logging setup failed before the engine started: its handler 'vllm' takes its "
        f"level from VLLM_LOGGING_LEVEL (INFO when unset), and the environment gave {said} "
        "that Python's logging has no level for (a wrapper or container passing the variable "
        "through empty), or the file VLLM_LOGGING_CONFIG_PATH names defines that handler "
        "wrongly",
        [
            Fix(
                "env",
                "VLLM_LOGGING_LEVEL=INFO",
                note="or unset it (INFO is its default); a container run or wrapper that "
                "passes -e VLLM_LOGGING_LEVEL=$X must leave it out where X is unset",
            ),
            Fix(
                "advice",
                "or, where VLLM_LOGGING_CONFIG_PATH is set, fix the handler 'vllm' in that "
                "file, or unset it",
            ),
        ],
    )


def unknown_level(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """``Unknown level: 'X'`` from logging: vLLM's handler where the log is vLLM's."""
    if ctx.engine == "vllm":
        return unconfigured(m, ctx)
    return (
        f"Python's logging was given the level '{m.group(1)}', which it has no level for",
        [
            Fix(
                "advice",
                "give the log level the command or its environment names one logging knows "
                "(DEBUG, INFO, WARNING, ERROR), or unset the variable that sets it",
            )
        ],
    )


LOGGING_RULES: tuple[Rule, ...] = (
    ("logging-config", HANDLER, unconfigured),
    ("logging-config", LEVEL, unknown_level),
)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
LOGGING_MARKERS = ("configure handler", "Unknown level")
