"""The Python modules of an engine's package inside its wheel, parsed with ``ast``: the one
loop the source readers share (the files under the package, those holding a word read, those
that parse)."""

from __future__ import annotations

import ast
import zipfile
from collections.abc import Callable, Iterator
from typing import TypeVar

T = TypeVar("T")


def modules(
    archive: zipfile.ZipFile, package: str, containing: tuple[str, ...] = ()
) -> Iterator[tuple[str, str, ast.Module]]:
    """Each ``.py`` file under ``package`` (``"sglang/"``) whose text holds every word of
    ``containing``, as (name, text, tree); a file that does not parse is passed over."""
    for name in archive.namelist():
        if not name.startswith(package) or not name.endswith(".py"):
            continue
        text = archive.read(name).decode("utf-8", "replace")
        if not all(word in text for word in containing):
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        yield name, text, tree


def is_model_class(name: str) -> bool:
    """Whether a class is one an architecture names (``...ForCausalLM``, ``...Model``), not
    one of its layers."""
    return "For" in name or name.endswith("Model")


def inherited(
    archive: zipfile.ZipFile, package: str, own: Callable[[ast.ClassDef], T | None]
) -> dict[str, T]:
    """Each class in the files under ``package`` with the value ``own`` gives for it or, where
    it gives none, for the first of its bases in those files in Python's method resolution
    order (C3); a class with neither is left out."""
    values: dict[str, T] = {}
    bases: dict[str, list[str]] = {}
    for _name, _text, tree in modules(archive, package, ("class ",)):
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = [b.id for b in node.bases if isinstance(b, ast.Name)]
                value = own(node)
                if value is not None:
                    values[node.name] = value

    orders: dict[str, list[str]] = {}

    def order(name: str, seen: frozenset[str]) -> list[str]:
        """The class's method resolution order over the classes of the files (C3; a base
        outside them ends its line)."""
        if name in orders:
            return orders[name]
        parents = [b for b in bases.get(name, []) if b in bases and b not in seen]
        lines = [order(b, seen | {name}) for b in parents] + [parents]
        merged: list[str] = [name]
        while any(lines):
            head = next(
                (
                    line[0]
                    for line in lines
                    if line and all(line[0] not in rest[1:] for rest in lines)
                ),
                None,
            )
            if head is None:  # no consistent order (a cycle of same-named classes): left first
                head = next(line[0] for line in lines if line)
            merged.append(head)
            lines = [[c for c in line if c != head] for line in lines]
        orders[name] = merged
        return merged

    resolved = {
        name: next((values[c] for c in order(name, frozenset()) if c in values), None)
        for name in bases
    }
    return {name: value for name, value in resolved.items() if value is not None}
