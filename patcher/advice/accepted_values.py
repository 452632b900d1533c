"""Whether a later release accepts the value a message refuses, from the values it lists.

A refusal that lists what the release accepts ("Currently, MiniCPMV only supports versions 2.0,
2.5, 2.6, 4.0. Got version: (4, 5)") takes that list from a collection in the engine's source;
the catalogue's ``accepts`` (tools/read_accepts.py) holds each collection's elements per release
read. Where the refused value, as the log fills another hole of the same message, is an element
in a later release, that release is the fix, read from the engine's files; where no release
read lists it, nothing is said here (the message's family answers).
"""

from __future__ import annotations

import functools
import re

from patcher.advice.catalogue import Engine, Matched, feature_releases, features_of, version_key
from patcher.advice.log_rules import Fix, LogContext


def _plain(text: str) -> str:
    """A value as a log prints it and as the source writes it, alike: no quotes, no spaces."""
    return re.sub(r"[\s'\"]", "", text)


@functools.cache
def _lists(engine: Engine, file: str) -> dict[str, dict[str, str]]:
    """Each hole of ``file``'s messages that lists a collection: its elements (plain) and the
    feature name each is read under."""
    found: dict[str, dict[str, str]] = {}
    prefix = f"{file}::"
    for name in features_of(engine, "accepts"):
        if name.startswith(prefix):
            hole, value = name[len(prefix) :].split("::", 1)
            found.setdefault(hole, {})[_plain(value)] = name
    return found


def later_accepts(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]] | None:
    """The first release read whose source lists the value the log's message refuses, where
    the log's release (when it names one) does not."""
    engine = m.template.engine
    if engine == "transformers":
        return None
    # only the holes of this message that list a collection, not another message's of the file
    holes = set(m.template.parts[1::2])
    if not holes:
        return _later_than_listed(m, ctx)
    lists = {h: e for h, e in _lists(engine, m.template.file).items() if h in holes}
    if not lists:
        return None
    for hole, got in m.values:
        if hole in lists or not got.strip():
            continue
        for listed, elements in lists.items():
            feature = elements.get(_plain(got))
            if feature is None:
                continue
            accepting = sorted(feature_releases(engine, "accepts", feature), key=version_key)
            if all(r in accepting for r in m.template.releases):
                continue  # every release with this message lists the value: not what it refused
            if ctx.version is not None and any(
                version_key(r)[:3] <= ctx.version[:3] for r in accepting
            ):
                return None  # the log's release lists it already: the refusal is another one
            return (
                f"this release does not accept {got.strip()} ({listed} lists what it does); "
                f"{engine} {accepting[0]} and later list it (read from "
                f"{m.template.file.rsplit('/', 1)[-1]})",
                [
                    Fix(
                        "dependency",
                        f"pip install '{engine}>={accepting[0]}'",
                        note=f"the first {engine} release read whose source accepts "
                        f"{got.strip()} there",
                    )
                ],
            )
    return None


def _as_written(element: str) -> str:
    """A collection's element as a message writes it: a version tuple ``(4,5)`` is ``4.5``."""
    numbers = re.fullmatch(r"\((\d+(?:,\d+)+)\)", element)
    return numbers.group(1).replace(",", ".") if numbers else element


# "supports [versions] A, B, and C": the values a refusal writes out after what it supports
_SUPPORTS = re.compile(
    r"\bsupports?\b(?:\s+[A-Za-z]+){0,2}?\s+((?:[\w.]+(?:,?\s+(?:and|or)\s+|,\s*))+[\w.]+)"
)


def _later_than_listed(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]] | None:
    """A message that writes out what it takes ("Currently, MiniCPMV only supports versions
    2.0, 2.5, and 2.6"), where a later release of the same file reads a collection holding
    all of those and more: the first release with more, and what each adds. The value refused
    is not in the words; the checkpoint's own (its config) is one of those added, or none."""
    engine = m.template.engine
    if engine == "transformers":
        return None
    run = _SUPPORTS.search(m.template.text)
    if run is None:
        return None
    listed = set(re.split(r",?\s+(?:and|or)\s+|,\s*", run.group(1)))
    raising = {version_key(r) for r in m.template.releases}
    for hole, elements in _lists(engine, m.template.file).items():
        written = {_as_written(e): feature for e, feature in elements.items()}
        if not listed <= set(written):  # every value written out is the collection's
            continue
        added: dict[str, str] = {}
        for value, feature in written.items():
            if value in listed:
                continue
            accepting = sorted(feature_releases(engine, "accepts", feature), key=version_key)
            if accepting and version_key(accepting[0]) > max(raising, default=()):
                added[value] = accepting[0]
        if (
            not added
            or any(  # the log's own release holds more already: another refusal
                ctx.version is not None and version_key(r)[:3] <= ctx.version[:3]
                for r in added.values()
            )
        ):
            continue
        first = min(added.values(), key=version_key)
        in_order = sorted(added.items(), key=lambda a: (version_key(a[1]), a[0]))
        shown = ", ".join(f"{v} from {r}" for v, r in in_order)
        return (
            f"this release takes only {', '.join(sorted(listed))} there; later releases take "
            f"more ({shown}: {hole} in {m.template.file.rsplit('/', 1)[-1]}), and the "
            "checkpoint's config names one of them",
            [
                Fix(
                    "dependency",
                    f"pip install '{engine}>={first}'",
                    note=f"the first {engine} release read that takes more than this one",
                )
            ],
        )
    return None
