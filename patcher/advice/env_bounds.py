"""A check against a bound the engine sets from an environment variable.

A kernel's own check names the engine's setting, never the variable behind it: DeepEP's
``x.size(0) <= num_max_dispatch_tokens_per_rank`` (raised from its C++ with no word of
SGLang's) fails when one rank dispatches more tokens than its buffer was made for, and SGLang
makes the buffer ``SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK`` tokens deep (default 128;
0.5.2 and later assert at most 1024). Which setting each release assigns from which variable,
the variable's default and the cap the release asserts are read from its source per release
(tools/read_env_bounds.py: the ``env_bound:``, ``env_default:`` and ``env_cap:`` features).
The answer is the variable, raised; or, where the engine has the flag, a smaller batch.
"""

from __future__ import annotations

import re

from patcher.advice.catalogue import (
    ENGINE_NAMES,
    SERVERS,
    Engine,
    declared,
    feature_by_release,
    feature_releases,
    features_of,
    version_key,
)
from patcher.advice.log_rules import Fix, LogContext, Rule

# "x.size(0) <= num_max_dispatch_tokens_per_rank": a bound the left side must stay under.
# Only an assertion's own condition (C++'s "Assertion error FILE 'cond'", "Assertion exception
# (FILE): cond", Python's bare assert): a message that prints the values ("x (4) must be <= y (2)")
# is the engine's own words, answered by its family.
BOUND = re.compile(
    r"Assert\w*\b.*?(?:(?P<lhs>[\w.()\[\]]+)\s*<=\s*(?P<name>[a-z][a-z0-9]*(?:_[a-z0-9]+){2,})"
    r"\b(?!\s*\()|\b(?P<name2>[a-z][a-z0-9]*(?:_[a-z0-9]+){2,})\s*>=\s*(?P<lhs2>[\w.()\[\]]+))"
)
# The flags whose value is the most tokens one rank sends at start-up: the largest CUDA-graph
# batch captured, and the most requests at once (SGLang's warm-up runs that many).
_BATCH_FLAGS = ("--cuda-graph-max-bs", "--max-cudagraph-capture-size", "--max-running-requests")


def _words(text: str) -> str:
    return re.sub(r"[^A-Z0-9]", "", text.upper())


def _variables(engine: Engine, name: str, line: str) -> list[str]:
    """The variables a release of ``engine`` sets ``name`` from; where several do (each
    all-to-all backend has its own), those whose other words the line names (DeepEP's
    ``deep_ep.cpp``: ``SGLANG_DEEPEP_...``)."""
    every = features_of(engine, f"env_bound:{name}")
    if len(every) < 2:
        return list(every)
    said = _words(line)
    suffix = name.upper()
    named = []
    for variable in every:
        own = variable.removeprefix(f"{engine.upper()}_").removesuffix(f"_{suffix}")
        if own and _words(own) in said:
            named.append(variable)
    # the longest match: SGLANG_DEEPEP_V2_ is named only where "DEEPEPV2" is said
    longest = max((len(_words(v)) for v in named), default=0)
    return [v for v in named if len(_words(v)) == longest] or list(every)


def _of_release(engine: Engine, feature: str, version: tuple[int, ...] | None) -> str | None:
    """A feature's value in the release the log names, or else in the newest release read."""
    by_release = feature_by_release(engine, feature)
    if not by_release:
        return None
    if version is not None:
        for release, value in by_release.items():
            if version_key(release) == version[:3]:
                return value
    return by_release[max(by_release, key=version_key)]


def _raised(default: str | None, cap: str | None) -> str:
    if default is None or not default.isdigit():
        return "<more than the tokens one rank dispatches>"
    wanted = int(default) * 2
    return str(min(wanted, int(cap)) if cap is not None and cap.isdigit() else wanted)


def env_bound(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """The variable behind a bound a check refused; no fix where no release read sets the
    name from the environment (the rule does not hold)."""
    name = m.group("name") or m.group("name2")
    lhs = m.group("lhs") or m.group("lhs2")
    engines = [e for e in SERVERS if ctx.engine in (None, e)]
    fixes: list[Fix] = []
    told: list[str] = []
    for engine in engines:
        for variable in _variables(engine, name, m.string + (ctx.frame or "")):
            default = _of_release(engine, f"env_default:{variable}", ctx.version)
            cap = _of_release(engine, f"env_cap:{variable}", ctx.version)
            releases = feature_releases(engine, f"env_bound:{name}", variable)
            value = _raised(default, cap)
            capped = feature_releases(engine, f"env_cap:{variable}", cap) if cap else ()
            limits = "; ".join(
                part
                for part in (
                    f"read by {ENGINE_NAMES[engine]} {releases[0]} on" if releases else "",
                    f"default {default}" if default else "",
                    f"{capped[0]} on assert at most {cap}" if capped else "",
                )
                if part
            )
            fixes.append(
                Fix(
                    "env" if value.isdigit() else "advice",
                    f"{variable}={value}",
                    note=f"{limits}. Above the most tokens one rank sends; the buffer takes "
                    "more GPU memory",
                )
            )
            told.append(f"{ENGINE_NAMES[engine]} sets {name} from {variable} ({limits})")
            batch = [f for f in _BATCH_FLAGS if declared(engine, f)]
            if batch and "tokens" in name:
                fixes.append(
                    Fix(
                        "advice",
                        f"or fewer tokens per rank: {' / '.join(batch)} at most "
                        f"{default or 'the bound'}",
                        note="the largest batch a CUDA graph is captured for, or the most "
                        "requests the warm-up runs at once",
                    )
                )
    if not fixes:
        return "", []
    return (
        f"a check wants {lhs} <= {name}, and it was more: {'; '.join(told)}",
        fixes,
    )


ENV_BOUND_RULES: tuple[Rule, ...] = (("env-bound", BOUND, env_bound),)
# One plain word of each alternative above, for the line filter (engine_rules._MARKERS).
ENV_BOUND_MARKERS = ("<=", ">=")
