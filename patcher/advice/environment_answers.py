"""The answers of the families whose way out lies outside the engine's flags and the
checkpoint: a package to install (the one the message names), and an environment variable the
release reads (its switch for the package, or the variable the message names)."""

from __future__ import annotations

import re

from patcher.advice.catalogue import Engine, Matched, feature_releases, version_key
from patcher.advice.log_rules import Fix, LogContext
from patcher.advice.own_remedy import ENV_NAME, own_remedy
from patcher.advice.requirements import distribution, required


def explain_dependency(m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
    """A package missing or too old: the one the message names; and where the release reads a
    switch for it (vLLM's ``VLLM_USE_DEEP_GEMM``, envs.py), the switch off."""
    fixes = own_remedy(m.line, m.template)
    missing = re.search(r"No module named '?([\w.]+)", m.line)
    if missing:
        fixes.append(Fix("dependency", f"pip install {missing.group(1).split('.')[0]}"))
    unloaded = re.search(r"Unable to load (\w+) which is required", m.line)  # vLLM 0.5.0: Ray
    if unloaded and not any(f.text == f"pip install {unloaded.group(1).lower()}" for f in fixes):
        fixes.append(Fix("dependency", f"pip install {unloaded.group(1).lower()}"))
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
    minimum = re.search(
        r"([\w.-]+) with minimum required version ([\w.]+) is not installed", m.line
    )
    if minimum is not None:
        fixes[:0] = _minimum(minimum.group(1), minimum.group(2), m.template.engine)
    return (
        "a package the engine needs is missing or too old in its environment",
        fixes or [Fix("dependency", "install the package the message names")],
    )


def _minimum(package: str, version: str, engine: Engine) -> list[Fix]:
    """SGLang's ``assert_pkg_version``: the package at that version; and where the package is
    published under another name that later read releases require (flashinfer as
    flashinfer_python), the release that checks the new name."""
    fixes = [Fix("dependency", f"pip install '{package}>={version}'")]
    if engine == "transformers":
        return fixes
    spelled: dict[bool, list[tuple[str, str]]] = {True: [], False: []}
    for release, requirement in required(engine, package).items():
        name = distribution(requirement)
        spelled[name.replace("-", "_") == package.replace("-", "_")].append((release, name))
    if spelled[False] and spelled[True]:
        first, new = min(spelled[False], key=lambda pair: version_key(pair[0]))
        if version_key(first) > max(version_key(r) for r, _ in spelled[True]):
            fixes.insert(
                0,
                Fix(
                    "dependency",
                    f"pip install '{engine}>={first}'",
                    note=f"{package} is published as {new} now; {engine} {first} and later "
                    "require that name",
                ),
            )
    return fixes


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
