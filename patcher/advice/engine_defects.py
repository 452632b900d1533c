"""doctor's answer to an error in Python's own words that a release's source raises whenever
the line runs: a name imported only where another package imports, or never bound at all
(``NameError``), a logger method no logger has (``AttributeError: 'Logger' object has no
attribute``), a name imported from the package's root while the root is still importing
(``cannot import name 'X' from partially initialized module``). Each is read from the
release's files (tools/read_defects.py) and recorded with the releases that carry it; the
traceback's frame says which file raised, and the releases read without the defect are the
fix."""

from __future__ import annotations

import re

from patcher.advice.catalogue import (
    SERVERS,
    Engine,
    at_or_below,
    feature_releases,
    features_of,
    releases,
    version_key,
)
from patcher.advice.log_rules import Fix, LogContext

# a name of two words or more: a lower-case letter or digit then a capital, or an inner "_"
_DISTINCT = re.compile(r"[a-z0-9][A-Z]|\w_\w")


def _recorded(
    feature: str, frame: str | None, test: str, engines: tuple[Engine, ...]
) -> tuple[Engine, str, str] | None:
    """The engine, file and record of ``feature`` whose record names ``test`` (a name, a
    method) in the traceback frame's file; with no engine frame in the log (an issue's title,
    a cut log), the one record of ``engines`` that names it, where only one does."""
    path = re.search(r'File "([^"]+\.py)"', frame or "")
    named = [
        (engine, file, record)
        for engine in (SERVERS if path is not None else engines)
        for record in features_of(engine, feature)
        for file, _, rest in [record.partition("|")]
        if rest.split("|")[0] == test
    ]
    if path is not None:
        return next((n for n in named if path.group(1).endswith("/" + n[1])), None)
    # without a frame, only a name of two words or more (CompressedTensorsW8A8Int8,
    # check_marlin_supported): a one-word name (Optional, logger) could be any code's own
    if not _DISTINCT.search(test):
        return None
    named = [n for n in named if "/test/" not in n[1] and "/tests/" not in n[1]]
    return named[0] if len({(e, f) for e, f, _ in named}) == 1 else None


def _carried(engine: Engine, feature: str, record: str, ctx: LogContext) -> bool:
    """Whether the release that answers for the log's (the newest read at or below it) carries
    the defect; True where the log names no release of this engine."""
    if ctx.version is None or ctx.engine != engine:
        return True
    answering = at_or_below(releases(engine), ctx.version)
    return answering is None or answering in feature_releases(engine, feature, record)


def _without(engine: Engine, feature: str, record: str) -> Fix | None:
    """The upgrade to the first release read after the last that carries ``record`` (None
    where the newest release read still does)."""
    having = feature_releases(engine, feature, record)
    later = [r for r in releases(engine) if version_key(r) > version_key(having[-1])]
    if not later:
        return None
    first = min(later, key=version_key)
    return Fix(
        "dependency",
        f"pip install '{engine}>={first}'",
        note=f"{engine} {', '.join(having)} {'carries' if len(having) == 1 else 'carry'} it "
        f"(read from their source); {first} does not",
    )


def _carried_defect(
    feature: str, test: str, ctx: LogContext
) -> tuple[Engine, str, str, Fix | None] | None:
    """The engine, file and record of ``feature`` the traceback's frame carries in the log's
    release, with the upgrade past it (None where no release read is without it)."""
    found = _recorded(feature, ctx.frame, test, ctx.engines())
    if found is None or not _carried(found[0], feature, found[2], ctx):
        return None
    engine, file, record = found
    return engine, file, record, _without(engine, feature, record)


def _past(upgrade: Fix | None, still: str) -> list[Fix]:
    """The upgrade past a defect, or, where every release read ``still`` carries it, that
    no config fix helps."""
    if upgrade is not None:
        return [upgrade]
    return [Fix("advice", f"no config fix: every release read still {still}; report it")]


def undefined_name(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """``NameError: name 'X' is not defined`` in an engine file that imports X only where
    another package's import succeeds, or that never binds X at all."""
    name = m.group(1)
    found = _carried_defect("optional_import", name, ctx)
    if found is None:
        return _unbound(name, ctx)
    engine, file, record, upgrade = found
    module = record.split("|")[2]
    package = module.split(".")[0]
    fixes = [] if upgrade is None else [upgrade]
    fixes.append(
        Fix(
            "advice",
            f"or install {package}, at the version this {engine} release names for it, so "
            f"that {module} imports",
        )
    )
    return (
        f"{file} imports {name} from {module} only where that import succeeds, and here it "
        f"failed ({package} missing, or a version of it without {name}): an engine defect of "
        "this release, no config edit helps",
        fixes,
    )


def _unbound(name: str, ctx: LogContext) -> tuple[str, list[Fix]]:
    """``NameError`` for a name the frame's engine file reads and binds nowhere."""
    found = _carried_defect("unbound", name, ctx)
    if found is None:
        return "", []
    _, file, _, upgrade = found
    return (
        f"{file} uses {name} and never imports or defines it (read from the release's "
        "source): an engine defect of this release on this model's path, no config edit helps",
        _past(upgrade, "uses it unbound"),
    )


def missing_logger_method(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """``AttributeError: 'Logger' object has no attribute 'X'`` in an engine file that calls a
    logger method no logger has."""
    method = m.group(1)
    found = _carried_defect("missing_method", f"logger.{method}", ctx)
    if found is None:
        return "", []
    _, file, _, upgrade = found
    return (
        f"{file} calls logger.{method}, which no logger has: an engine bug of this release "
        "(the line runs on this model's path), no config edit helps",
        _past(upgrade, "has the call"),
    )


def circular_import(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """``ImportError: cannot import name 'X' from partially initialized module 'ENGINE'`` in
    an engine file that imports X from the package's root while the root is still importing."""
    name = m.group(1)
    found = _carried_defect("root_import", name, ctx)
    if found is None:
        return "", []
    engine, file, _, upgrade = found
    return (
        f"{file} imports {name} from the {engine} package's root while the root is still "
        "importing it (a circular import): an engine defect of this release, no config edit "
        "helps",
        _past(upgrade, "has the import"),
    )


def _squashed(text: str) -> str:
    """``text`` without its spaces: a message joined from two string literals may lack one
    ("not supported forfused Marlin MoE method") where a report adds it back."""
    return re.sub(r"\s+", "", text)


def always_raised(message: str, ctx: LogContext) -> tuple[str, list[Fix]] | None:
    """The engine's own message, raised in the traceback frame's file under a guard that holds
    for every value (``if P is not None`` where P defaults to False; tools/read_defects.py):
    the release refuses every model on that path, so the releases read without the guard are
    the way out. Without the frame the file is not known, and a message that another file
    raises as a real refusal is not taken for the defect."""
    path = re.search(r'File "([^"]+\.py)"', ctx.frame or "")
    if path is None:
        return None
    said = _squashed(message)
    for engine in SERVERS:
        for record in features_of(engine, "always_raises"):
            file, guard, words = record.split("|", 2)
            start = _squashed(words)[:40]
            if not path.group(1).endswith("/" + file) or not start or start not in said:
                continue
            if not _carried(engine, "always_raises", record, ctx):
                return None
            name, default = guard.split("=", 1)
            return (
                f"{file} raises this whenever the line runs: its guard `{name} is not None` "
                f"holds for every value, {name} defaulting to {default}, never None (read from "
                "the release's source): an engine defect of this release, no config edit helps",
                _past(_without(engine, "always_raises", record), "has the guard"),
            )
    return None
