"""doctor's answer when the engine imports a name a library it depends on does not have:
``ImportError: cannot import name 'X' from 'flashinfer.sampling'``. The engine release was
written against another version of that library. Each release's wheel states the versions it
requires (``Requires-Dist``, read per release into the catalogue's ``requires``), so the answer
is that requirement: for the log's release where it names one, else ``pip check``, which
compares the installed versions with the installed engine's."""

from __future__ import annotations

import re
import shlex

from patcher.advice.catalogue import (
    Engine,
    at_or_below,
    feature_releases,
    features_of,
    version_key,
)
from patcher.advice.engine_exports import LIBRARIES, name_elsewhere
from patcher.advice.log_rules import Fix, LogContext

_ENGINES: tuple[Engine, ...] = ("vllm", "sglang")


def normal(name: str) -> str:
    """A distribution's or an import's name as one key: flashinfer_python, flashinfer-python
    and flashinfer (the import) are one library; sgl-kernel and sgl_kernel too."""
    key = re.sub(r"[-_.]+", "_", name.lower())
    return key.removesuffix("_python")


def distribution(requirement: str) -> str:
    """The distribution a requirement names (``flashinfer_python`` of
    ``flashinfer_python==0.2.3``)."""
    named = re.match(r"[A-Za-z0-9][\w.-]*", requirement)
    return named.group(0) if named else requirement


def required(engine: Engine, library: str) -> dict[str, str]:
    """Each release read of ``engine`` with its requirement on ``library``, under any of its
    spellings (the specifier as its wheel states it); releases without one are left out."""
    found: dict[str, str] = {}
    for requirement in features_of(engine, "requires"):
        if normal(distribution(requirement)) != normal(library):
            continue
        for release in feature_releases(engine, "requires", requirement):
            # the strictest one a release states (== over >=), for extras that differ
            if release not in found or "==" in requirement:
                found[release] = requirement
    return found


def required_at(engine: Engine, library: str, version: tuple[int, ...]) -> tuple[str, str] | None:
    """The requirement on ``library`` of the read release that answers for ``version`` (the
    newest read at or below it), with that release; None where no such release states one."""
    pins = required(engine, library)
    at = at_or_below(pins, version) if pins else None
    return (at, pins[at]) if at is not None else None


def _engine_of(ctx: LogContext) -> tuple[Engine, ...]:
    if ctx.frame is not None:
        for engine in _ENGINES:
            if f"/{engine}/" in ctx.frame:
                return (engine,)
    return ctx.engines()


def _engine_name(
    name: str, module: str, m: re.Match[str], ctx: LogContext
) -> tuple[str, list[Fix]]:
    """A name of the engine's own package: Python's "(unknown location)" is a namespace
    package (a folder of the engine's name without ``__init__.py``, the working directory's
    checkout) standing for the release; else the releases read that have the name there."""
    engine = module.split(".")[0]
    if m.string[m.end() :].lstrip().startswith("(unknown location)"):
        return (
            f"the {engine} Python imports is a folder named {engine} without __init__.py (a "
            f"checkout or a folder in the working directory), not the {engine} installed",
            [
                Fix(
                    "advice",
                    f"start it from another directory; python -c 'import {engine}; "
                    f"print({engine}.__path__)' tells which folder it finds",
                )
            ],
        )
    elsewhere = name_elsewhere(name, module, ctx)
    if elsewhere is not None:
        return elsewhere
    checkout = re.match(rf"\s*\((\S*)/{engine}/__init__\.py\)", m.string[m.end() :])
    if checkout and not re.search(r"[/\\](?:site|dist)-packages$", checkout.group(1)):
        # the package Python found is a source tree, not an installed release: its compiled
        # extensions are built by installing it, and the installed release is shadowed
        tree = checkout.group(1) or "."
        return (
            f"the {engine} Python imports is the source tree in {tree} (the working directory "
            f"or PYTHONPATH), not the {engine} installed; its compiled parts ({name}) are not "
            "built there",
            [
                Fix("advice", f"start it from another directory than {tree}"),
                Fix("advice", f"or build the tree in place: pip install -e {shlex.quote(tree)}"),
            ],
        )
    return ("", [])


def _release_requires(required_by: dict[Engine, dict[str, str]], ctx: LogContext) -> list[Fix]:
    """What the log's engine release states it requires of the library, where it is read."""
    fixes: list[Fix] = []
    for engine, by_release in required_by.items():
        answering = (
            at_or_below(by_release, ctx.version)
            if ctx.version is not None and ctx.engine == engine
            else None
        )
        if answering is not None:
            fixes.append(
                Fix(
                    "dependency",
                    f"pip install '{by_release[answering]}'",
                    note=f"what {engine} {answering}'s wheel requires (Requires-Dist)",
                )
            )
    return fixes


def missing_name(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """``cannot import name 'X' from 'LIB...'``, LIB a library an engine requires."""
    return _missing(m.group(1), m.group(2), m, ctx)


# Python's words for a module without the attribute asked of it (``vllm.envs.VLLM_USE_V1`` on a
# release that dropped the variable), not for one caught half imported in a circular import.
ATTRIBUTE_MISSING = re.compile(
    r"module '([\w.]+)' has no attribute '(\w+)'(?!\s*\(most likely due to a circular import\))"
)


def missing_attribute(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """``module 'LIB.X' has no attribute 'N'``: what an import of N from LIB.X meets, asked
    of the module after it is imported; answered from the same reading."""
    return _missing(m.group(2), m.group(1), m, ctx)


def _missing(name: str, module: str, m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    library = module.split(".")[0]
    if library in _ENGINES:
        return _engine_name(name, module, m, ctx)
    if library in ("torch", "transformers"):
        return "", []  # the libraries other rules answer for
    required_by = {e: r for e in _engine_of(ctx) if (r := required(e, library))}
    # a library whose every release is read: the releases whose module has the name
    read = name_elsewhere(name, module, ctx) if library in LIBRARIES else None
    if read is not None:
        return read[0], [*read[1], *_release_requires(required_by, ctx)]
    if not required_by:
        return "", []
    fixes = _release_requires(required_by, ctx)
    fixes.append(
        Fix(
            "dependency",
            "pip check",
            note="in the engine's environment: it names the version of "
            f"{library} the installed engine requires; install that one",
        )
    )
    for engine, by_release in required_by.items():
        ordered = sorted(by_release, key=version_key)
        shown = ", ".join(f"{r}: {by_release[r]}" for r in ordered[:3])
        more = f", ... {ordered[-1]}: {by_release[ordered[-1]]}" if len(ordered) > 3 else ""
        fixes.append(Fix("advice", f"{engine} releases read require {shown}{more}"))
    return (
        f"the {library} installed has no {name}, which the engine takes from {module}: it "
        f"is another version of {library} than the engine release was written against",
        fixes,
    )
