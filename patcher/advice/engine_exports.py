"""What each release read lets other code import from an engine's package, or from a library
an engine imports, and the answer to an import that asks a release for what another release has.

A plugin, a model's own serving code or a launcher (vllm-omni, a platform plugin, a model's
``modeling_*_vllm.py``, sglang-router) is written against one release of the engine and
imports its modules and names; on another release Python says ``No module named
'vllm.inputs.data'`` or ``cannot import name 'is_port_available' from 'sglang.srt.utils'``.
``tools/read_exports.py`` reads, from each release's wheel, every module of the package and
every name each binds at its top level; doctor names the releases read that have what the
import asks for, and where the release of the log keeps the name now.

A library an engine imports breaks the same way the other way round: an engine release written
against outlines 0.0 imports ``outlines.fsm.regex``, which outlines 0.1 no longer has. The
libraries in ``LIBRARIES`` are read the same way from their own wheels (every release on PyPI),
so the answer is the library's releases that have what the engine asks for."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from patcher.advice.catalogue import version_key
from patcher.advice.log_rules import Fix, LogContext
from patcher.advice.packaged import packaged

# The libraries engines import whose every release is read (``exports-LIBRARY.json.gz``). How to
# add one: ``python -m tools.read_exports LIBRARY WHEEL...`` over its wheels from PyPI, add its
# import name here, and a test that writes a log of an import of a module or a name one of its
# releases dropped.
LIBRARIES: tuple[str, ...] = ("outlines",)


@dataclass(frozen=True, slots=True)
class Exports:
    """One engine's reading: the releases in order, each module's releases and each
    module's names' releases, as bit masks over ``releases``."""

    releases: tuple[str, ...]
    modules: dict[str, int]
    # module -> (the names it binds wherever it is, each other name with its own mask)
    names: dict[str, tuple[frozenset[str], dict[str, int]]]

    def holding(self, mask: int) -> tuple[str, ...]:
        """The releases of a mask, in order."""
        return tuple(r for i, r in enumerate(self.releases) if mask >> i & 1)

    def name_mask(self, module: str, name: str) -> int:
        """The releases whose ``module`` binds ``name``, as a mask (0: none read)."""
        always, others = self.names.get(module, (frozenset(), {}))
        return self.modules[module] if name in always else others.get(name, 0)

    def keeping(self, name: str, release: str) -> tuple[str, ...]:
        """The modules of ``release`` that bind ``name``, shortest path first."""
        if release not in self.releases:
            return ()
        bit = 1 << self.releases.index(release)
        found = [m for m in self.names if self.name_mask(m, name) & bit]
        return tuple(sorted(found, key=lambda m: (m.count("."), m)))


@functools.cache
def exports(engine: str) -> Exports | None:
    """The engine's reading (``exports-ENGINE.json.gz``), or None where none is recorded."""
    try:
        data = packaged(f"exports-{engine}.json.gz")
    except FileNotFoundError:
        return None
    names = {m: (frozenset(always), others) for m, (always, others) in data["names"].items()}
    return Exports(tuple(data["releases"]), data["modules"], names)


def _spans(read: Exports, mask: int, near: str | None) -> list[tuple[str, str]]:
    """The runs of consecutive releases read in ``mask``, as their first and last release:
    the one nearest the log's release first (else the latest), then the latest other; none
    where every release read holds it (no release would differ)."""
    if not mask or mask == (1 << len(read.releases)) - 1:
        return []
    runs: list[tuple[int, int]] = []  # first and last index into read.releases
    for at in range(len(read.releases)):
        if not mask >> at & 1:
            continue
        if runs and runs[-1][1] == at - 1:
            runs[-1] = (runs[-1][0], at)
        else:
            runs.append((at, at))
    runs.reverse()  # the latest first
    if near is not None:  # the place of the log's release among the releases read
        here = sum(1 for r in read.releases if version_key(r) < version_key(near))
        runs.sort(key=lambda run: min(abs(run[0] - here), abs(run[1] - here)))
    return [(read.releases[a], read.releases[b]) for a, b in runs[:2]]


def _specifier(engine: str, read: Exports, first: str, last: str) -> str:
    """``pip install`` words for the releases from ``first`` to ``last`` read: bounded by the
    releases read themselves, so a release between two read ones is never assumed."""
    bounds = [
        *([f">={first}"] if first != read.releases[0] else []),
        *([f"<={last}"] if last != read.releases[-1] else []),
    ]
    return f"pip install '{engine}{','.join(bounds)}'"


def _or(engine: str, read: Exports, other: list[tuple[str, str]]) -> list[Fix]:
    """The other run of releases that holds it, where there is one."""
    return [
        Fix("dependency", _specifier(engine, read, a, b), note=f"or {engine} {a} to {b}")
        for a, b in other
    ]


def _log_release(ctx: LogContext, engine: str, read: Exports) -> str | None:
    """The log's release of ``engine``, where it names one read."""
    if ctx.version is None or ctx.engine != engine:
        return None
    at = ".".join(str(p) for p in ctx.version)
    return next((r for r in read.releases if version_key(r) == ctx.version), at)


def _imported_names(ctx: LogContext, module: str) -> tuple[str, ...]:
    """The names the failing ``from MODULE import ...`` line asks for, where the log shows it."""
    if ctx.imported is None:
        return ()
    head, _, names = ctx.imported.partition(" import ")
    if head.removeprefix("from ").strip() != module:
        return ()
    cleaned = names.replace("(", " ").replace(")", " ").replace("\\", " ")
    return tuple(n.split(" as ")[0].strip() for n in cleaned.split(",") if n.strip())[:3]


def _kept_now(engine: str, read: Exports, names: tuple[str, ...], release: str) -> list[Fix]:
    """Where the log's ``release`` keeps each name asked for (a name of that spelling), for
    an import that can be changed instead of the release."""
    fixes: list[Fix] = []
    for name in names:
        kept = read.keeping(name, release)[:2]
        if kept:
            fixes.append(
                Fix(
                    "advice",
                    f"or change the import: {engine} {release} binds {name} in "
                    + " and ".join(kept)
                    + " (importable from there)",
                )
            )
    return fixes


def module_elsewhere(module: str, ctx: LogContext) -> tuple[str, list[Fix]] | None:
    """``No module named 'ENGINE.X'``: the releases read that have X, where some do and the
    log's release (where it shows one) does not; None otherwise."""
    engine = module.split(".")[0]
    read = exports(engine)
    if read is None:
        return None
    mask = read.modules.get(module, 0)
    near = _log_release(ctx, engine, read)
    if near in read.holding(mask):
        return None  # the release has it: the Python imports another (a source folder)
    names = _imported_names(ctx, module)
    asked = mask
    for name in names:  # the releases whose module has every name the import asks for
        asked &= read.name_mask(module, name)
    spans = _spans(read, asked or mask, near)
    if not spans:
        return None
    shown = f"{engine} {near}" if near else f"the {engine} installed"
    what = module + (f" with {', '.join(names)}" if names and asked else "")
    return _answer(engine, read, (f"{shown} has no {module}", "it", what), spans, names, near)


def name_elsewhere(name: str, module: str, ctx: LogContext) -> tuple[str, list[Fix]] | None:
    """``cannot import name 'N' from 'ENGINE.X'``: the releases read whose X has N, where some
    do and the log's release does not; where none does, the modules that have N."""
    engine = module.split(".")[0]
    read = exports(engine)
    if read is None or module not in read.modules:
        return None
    near = _log_release(ctx, engine, read)
    held = read.name_mask(module, name)
    if near in read.holding(held):
        return None
    spans = _spans(read, held, near)
    shown = f"{engine} {near}" if near else f"the {engine} installed"
    if not spans:
        moved = _kept_now(engine, read, (name,), near) if near else []
        if held or not moved:
            return None
        return (
            f"{shown}'s {module} has no {name}, which code written for another release "
            f"imports; no {engine} release read has it there",
            moved,
        )
    lacking = f"{shown}'s {module} has no {name}"
    return _answer(engine, read, (lacking, "it there", f"{module}.{name}"), spans, (name,), near)


def _answer(
    engine: str,
    read: Exports,
    said: tuple[str, str, str],
    spans: list[tuple[str, str]],
    names: tuple[str, ...],
    near: str | None,
) -> tuple[str, list[Fix]]:
    """The answer to an import of another release: ``said`` is what the release lacks, how
    the cause refers to it, and what the note calls it."""
    lacking, it, what = said
    (first, last), *other = spans
    if engine in LIBRARIES:
        importer = (
            f"which the engine (or code beside it) imports: it was written against another {engine}"
        )
        named = "a release of these is what the engine's import needs"
    else:
        importer = (
            "which code written for another release imports (a plugin, a model's own serving "
            "code, a launcher)"
        )
        named = "the release the plugin or script names is the one it was written for"
    return (
        f"{lacking}, {importer}: the {engine} releases read from {first} to {last} have {it}",
        [
            Fix(
                "dependency",
                _specifier(engine, read, first, last),
                note=f"{what} is in {engine} {first} to {last} (read from each release's "
                f"wheel); {named}",
            ),
            *_or(engine, read, other),
            *(_kept_now(engine, read, names, near) if near else []),
        ],
    )
