"""The values a refusal lists as accepted, read per release from the engine's own source.

A message that refuses a value often lists what the release accepts, from a module-level
collection: ``raise ValueError(f"Currently, MiniCPMV only supports versions
{supported_versions}. Got version: {version}")`` with ``supported_versions`` joined from
``_SUPPORT_VERSION``'s keys (vllm/model_executor/models/minicpmv.py). Which values a later
release accepts is then the collection's literal elements in that release: MiniCPM-V 4.5's
``(4, 5)`` from 0.11.0. So doctor can name the first release that accepts the value a log
refuses, from the reading, never from the wording.

Read with ``ast``: for each message hole (an f-string's interpolated expression) that names a
module-level dict, set, list or tuple literal, directly (``{sorted(SUPPORTED)}``) or through a
local assigned from one (``supported = ", ".join(... for v in _SUPPORT_VERSION)``), each
element (a dict's keys) as its source text. Recorded as the catalogue's feature ``accepts``:
``FILE::HOLE::VALUE`` -> the releases whose source accepts VALUE there.
"""

from __future__ import annotations

import ast
import fnmatch
import zipfile
from collections.abc import Iterable, Iterator


def _collections(tree: ast.Module) -> dict[str, list[str]]:
    """Module-level names bound to a literal collection, with its elements' source text."""
    found: dict[str, list[str]] = {}
    for node in tree.body:
        target: ast.expr | None = None
        value: ast.expr | None = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        if not isinstance(target, ast.Name) or value is None:
            continue
        if isinstance(value, ast.Dict):
            elements = [k for k in value.keys if k is not None]
        elif isinstance(value, ast.Set | ast.List | ast.Tuple):
            elements = list(value.elts)
        else:
            continue
        if elements and all(isinstance(e, ast.Constant | ast.Tuple) for e in elements):
            found[target.id] = [ast.unparse(e) for e in elements]
    return found


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _holes(function: ast.AST) -> Iterator[ast.FormattedValue]:
    """The holes of the messages raised in ``function``."""
    for node in ast.walk(function):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            for arg in node.exc.args:
                for value in ast.walk(arg):
                    if isinstance(value, ast.FormattedValue):
                        yield value


def accepted(source: str, file: str) -> Iterator[str]:
    """``FILE::HOLE::VALUE`` for each value a message's hole lists from a collection."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    collections = _collections(tree)
    if not collections:
        return
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        assigned: dict[str, set[str]] = {}
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                if isinstance(node.targets[0], ast.Name):
                    assigned.setdefault(node.targets[0].id, set()).update(_names(node.value))
        for hole in _holes(function):
            named = _names(hole.value)
            for local in list(named):
                named |= assigned.get(local, set())
            sources = [c for c in named if c in collections]
            if len(sources) != 1:
                continue  # none, or two lists joined: not one set of accepted values
            text = ast.unparse(hole.value)
            hole_name = text if len(text) <= 60 else text[:57] + "..."
            for element in collections[sources[0]]:
                yield f"{file}::{hole_name}::{element}"


def accepts(archive: zipfile.ZipFile, patterns: Iterable[str]) -> dict[str, list[str]]:
    """The feature ``accepts`` of the release in ``archive``: its start-up files (``patterns``,
    read_errors.START_UP's) read with :func:`accepted`."""
    patterns = tuple(patterns)
    found: set[str] = set()
    for name in archive.namelist():
        if name.endswith(".py") and any(fnmatch.fnmatch(name, p) for p in patterns):
            found.update(accepted(archive.read(name).decode("utf-8", "replace"), name))
    return {"accepts": sorted(found)}
