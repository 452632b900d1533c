"""The built-in transform catalog (``transforms/*.toml``, installed as
``patcher/transforms/builtin``) and lookup of a transform by name or by file path."""

from __future__ import annotations

import difflib
from functools import cache
from pathlib import Path

from patcher.errors import TransformError
from patcher.transforms.definition import Transform, load_transform_file, parse_transform


def catalog_dir() -> Path:
    """Where the built-in transforms are: installed package data, or the source tree."""
    installed = Path(__file__).with_name("builtin")
    if any(installed.glob("*.toml")):
        return installed
    return Path(__file__).resolve().parents[2] / "transforms"


@cache
def builtin_transforms() -> tuple[Transform, ...]:
    """Every built-in transform, sorted by name."""
    found = []
    for path in sorted(catalog_dir().glob("*.toml")):
        found.append(parse_transform(path.read_text(encoding="utf-8"), f"builtin:{path.name}"))
    return tuple(sorted(found, key=lambda t: t.name))


def _nearest(reference: str, names: list[str]) -> list[str]:
    """The built-in name closest to ``reference``, whole or by its start: a typo in the start
    of a long name ("strip-fp9") is nearer to it than to a short name of equal length."""

    def score(name: str) -> float:
        whole = difflib.SequenceMatcher(None, reference, name).ratio()
        start = difflib.SequenceMatcher(None, reference, name[: len(reference)]).ratio()
        # The start must be nearly all there: two letters of "drop" in "nope" are no match.
        return max(whole if whole >= 0.5 else 0.0, start if start >= 0.8 else 0.0)

    best = max(names, key=score, default=None)
    return [best] if best is not None and score(best) > 0 else []


def find_transform(reference: str) -> Transform:
    """A built-in transform by name, or a user's transform file by path."""
    path = Path(reference)
    if reference.endswith(".toml") or "/" in reference:  # never a name ([a-z][a-z0-9-]*)
        if not path.is_file():
            if path.exists():  # a pipe is refused, not waited on
                raise TransformError(
                    "transform file is not a regular file (a folder or a pipe?)",
                    file=reference,
                    hint="save the transform to a file and pass its path",
                )
            raise TransformError("transform file not found", file=reference, hint="patcher list")
        return load_transform_file(path)
    own = catalog_dir() / f"{reference}.toml"
    if own.is_file():  # each built-in lives in NAME.toml: parse that one only
        transform = parse_transform(own.read_text(encoding="utf-8"), f"builtin:{own.name}")
        if transform.name == reference:
            return transform
    for transform in builtin_transforms():
        if transform.name == reference:
            return transform
    if path.is_file():
        return load_transform_file(path)
    close = _nearest(reference, [t.name for t in builtin_transforms()])
    suggestion = f"; did you mean {close[0]!r}?" if close else ""
    raise TransformError(
        f"unknown transform {reference!r}{suggestion}",
        hint=f"patcher show {close[0]}" if close else "patcher list",
    )
