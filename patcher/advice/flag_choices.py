"""doctor's answer to argparse refusing a flag (``error: unrecognized arguments: --x``) or a
flag's value (``error: argument --x: invalid choice: 'v' (choose from ...)``, Lib/argparse.py):
the choices listed are the installed release's. For vLLM's ``--tool-call-parser`` and
``--reasoning-parser`` the name is looked up in the parser registries read per release
(``vllm_releases.json``), for the release that registers it.
"""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix, LogContext
from patcher.engines.parser_flags import parses, registered_since
from patcher.engines.readings import vllm_readings


def invalid_choice(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """argparse's refusal of a value its choices lack (``error: argument --x: invalid choice:
    'v' (choose from ...)``): the choices are this release's; a parser name is looked up in
    the releases read."""
    flag, value = m.group(1).split("/")[-1], m.group(2)
    cause = f"{flag} {value} is not one of this release's choices (the message lists them)"
    # vLLM's CLI is "vllm serve" (api_server.py before it); SGLang's registries are not read
    vllm = ctx.engine == "vllm" or (ctx.engine is None and re.search(r"vllm|api_server", m.string))
    if not parses(flag) or not vllm:
        return (cause, [Fix("advice", f"{flag} with one of the values the message lists")])
    since = registered_since(flag, value)
    if since is None:
        return (
            f"{cause}; no vLLM release read (0.10.1 on) registers {value}: a misspelt name, "
            "or another engine's",
            [Fix("advice", f"{flag} with one of the names the message lists")],
        )
    first = ".".join(map(str, since))
    read = (
        f"every vLLM release read ({first} on) registers {value}"
        if since == next(iter(vllm_readings()))
        else f"vLLM {first} and later register {value}"
    )
    return (
        f"{cause}; {read} (read from their source)",
        [
            Fix("dependency", f"pip install 'vllm>={first}'"),
            Fix("advice", f"or {flag} with one of the names this release lists"),
        ],
    )


def unrecognized_arguments(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """argparse's refusal of flags its parser does not define (``error: unrecognized
    arguments: --x v``). vLLM's FlexibleArgumentParser takes ``--x_y`` as ``--x-y``; SGLang's
    plain argparse does not, so there an underscore spelling is the dashed flag misspelt."""
    words = m.group(1).split()
    vllm = ctx.engine == "vllm" or (ctx.engine is None and re.search(r"vllm|api_server", m.string))
    fixes: list[Fix] = []
    for at, word in enumerate(words):
        if not word.startswith("--"):
            continue
        flag, _, given = word.partition("=")
        value = given or (
            words[at + 1] if at + 1 < len(words) and not words[at + 1].startswith("--") else ""
        )
        if "_" in flag and not vllm:
            fixes.append(
                Fix(
                    "flag",
                    f"{flag.replace('_', '-')} {value}".rstrip(),
                    note="the flag as the parser declares it, with dashes",
                )
            )
        else:
            fixes.append(
                Fix(
                    "advice",
                    f"leave out {flag}",
                    note="this release's parser does not define it; a later release may (which "
                    "is not read)",
                )
            )
    named = ", ".join(w for w in words if w.startswith("--"))
    return (f"the engine's command-line parser does not define {named}", fixes)
