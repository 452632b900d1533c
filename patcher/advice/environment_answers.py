"""The answers of the families whose way out lies outside the engine's flags and the
checkpoint: a package to install (the one the message names), and an environment variable the
release reads (its switch for the package, or the variable the message names)."""

from __future__ import annotations

import re

from patcher.advice.catalogue import Matched, feature_releases
from patcher.advice.log_rules import Fix, LogContext
from patcher.advice.own_remedy import ENV_NAME, own_remedy


def explain_dependency(m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
    """A package missing or too old: the one the message names; and where the release reads a
    switch for it (vLLM's ``VLLM_USE_DEEP_GEMM``, envs.py), the switch off."""
    fixes = own_remedy(m.line, m.template)
    missing = re.search(r"No module named '?([\w.]+)", m.line)
    if missing:
        fixes.append(Fix("dependency", f"pip install {missing.group(1).split('.')[0]}"))
    named = re.search(r"install(?: or update)? (?:the )?`([\w.-]+)`", m.template.text)
    if named is not None:
        package = named.group(1)
        fixes.append(Fix("advice", f"install {package}", note="the package the message names"))
        engine = m.template.engine
        switch = f"{engine.upper()}_USE_{package.upper().replace('-', '_')}"
        read = feature_releases(engine, "env", switch) if engine != "transformers" else ()
        if set(read) & set(m.template.releases):
            fixes.append(
                Fix(
                    "env",
                    f"{switch}=0",
                    note=f"the release's switch for {package}: off, it runs its other kernels",
                )
            )
    return (
        "a package the engine needs is missing or too old in its environment",
        fixes or [Fix("dependency", "install the package the message names")],
    )


def explain_environment(m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
    """An environment variable decides the path: set or unset the one named."""
    fixes = own_remedy(m.line, m.template)
    if not any(f.kind == "env" for f in fixes):
        fixes += [
            Fix("env", f"unset {name}", note="the message names it")
            for name in dict.fromkeys(ENV_NAME.findall(m.line))
        ]
    return (
        "an environment variable of the engine decides this start-up path",
        fixes or [Fix("advice", "the environment variable the message names")],
    )
