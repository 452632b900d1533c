"""What each release of an engine lets other code import, read from its wheel with ``ast``:
every module of the package (each ``.py`` file, a package's ``__init__.py`` standing for the
package) and every name a module binds at its top level (``def``, ``class``, an assignment,
an ``import``: a name imported into a module can be imported from it).

A plugin, a model's own serving code or a launcher written against one release imports from
another: ``No module named 'vllm.inputs.data'``, ``cannot import name 'is_port_available' from
'sglang.srt.utils'``. doctor names the releases read whose package has the module or the name,
and where the release of the log keeps the name now (patcher/advice/engine_exports.py).

Recorded in ``patcher/advice/exports-ENGINE.json.gz`` (gzip: 6 MB of JSON, 1.2 MB packed):
``releases`` in order; for each module (``modules``) the releases holding it as a bit mask
over that order (bit i: ``releases[i]``); and each module's names (``names``) as
``[ALWAYS, {NAME: MASK}]``: the names held wherever the module is, then each other name with
its own mask.

The libraries engines import (``LIBRARIES`` in patcher/advice/engine_exports.py: outlines) are
read the same way from every release's wheel: an engine written against one release of them
imports a module or a name another release dropped.

Usage: python -m tools.read_exports PACKAGE WHEEL...  (PACKAGE: vllm, sglang or a library of
LIBRARIES; each wheel read anew, the others kept)
"""

from __future__ import annotations

import ast
import gzip
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

from patcher.advice.catalogue import version_key
from patcher.advice.engine_exports import LIBRARIES
from tools import wheel_cli

TARGET = Path(__file__).resolve().parent.parent / "patcher" / "advice"


def module_name(path: str) -> str | None:
    """``vllm/inputs/data.py`` -> ``vllm.inputs.data``; ``vllm/inputs/__init__.py`` ->
    ``vllm.inputs``; None for a file that is not a module of the package."""
    if not path.endswith(".py"):
        return None
    parts = path[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


def bound_names(tree: ast.Module, package: str, stars: list[str] | None = None) -> set[str]:
    """The names a module binds at its top level, in any branch of an ``if`` or ``try`` (an
    import the module makes only where a library is present still binds it there). Of its
    imports, only those from ``package`` itself (a relative one too): code importing
    ``torch`` from an engine's module is not what a plugin does. ``from X import *`` binds
    X's names: each such X of the package is added to ``stars`` (relative ones as written,
    dots first), for ``read_wheel`` to expand."""
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found.add(node.name)
                if node.name == "__getattr__" and not isinstance(node, ast.ClassDef):
                    found.update(served_names(node, tree))
            elif isinstance(node, ast.Import):
                own = [a for a in node.names if a.name.split(".")[0] == package]
                found.update((a.asname or a.name).split(".")[0] for a in own)
            elif isinstance(node, ast.ImportFrom):
                source = node.module or ""
                if node.level or source.split(".")[0] == package:
                    found.update(a.asname or a.name for a in node.names if a.name != "*")
                    if stars is not None and any(a.name == "*" for a in node.names):
                        stars.append("." * node.level + source)
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for leaf in ast.walk(target):
                        if isinstance(leaf, ast.Name):
                            found.add(leaf.id)
            elif isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.With):
                visit(node.body)

    visit(tree.body)
    return found


def _constants(node: ast.expr) -> set[str]:
    """The strings a literal holds: a tuple, list or set's items, a dict's keys."""
    items: list[ast.expr | None] = []
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        items = list(node.elts)
    elif isinstance(node, ast.Dict):
        items = list(node.keys)
    return {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}


def served_names(function: ast.FunctionDef | ast.AsyncFunctionDef, tree: ast.Module) -> set[str]:
    """The names a module's ``__getattr__`` (PEP 562) answers for: the strings an ``if`` of it
    that returns compares its argument with (``if name == "get_tokenizer"``, ``name in ("A", "B")``,
    ``name in _MOVED`` or ``name in _MOVED.keys()`` for a literal the module assigns). A
    release that moved a name often keeps it importable from the old module this way, with a
    warning."""
    if not function.args.args:
        return set()
    argument = function.args.args[0].arg
    literals: dict[str, set[str]] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    literals[target.id] = _constants(statement.value)
    served: set[str] = set()
    # the conditions of the branches that return something: ``return name == "x"`` answers a
    # question, and a branch that only raises (``if name in _REMOVED: raise ...``) refuses
    tests = [
        n.test
        for n in ast.walk(function)
        if isinstance(n, ast.If)
        and any(isinstance(r, ast.Return) for s in n.body for r in ast.walk(s))
    ]
    for node in (inner for test in tests for inner in ast.walk(test)):
        if not (isinstance(node, ast.Compare) and isinstance(node.left, ast.Name)):
            continue
        if node.left.id != argument:
            continue
        for op, other in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, ast.Eq) and isinstance(other, ast.Constant):
                served.update({other.value} if isinstance(other.value, str) else set())
            elif isinstance(op, ast.In):
                if isinstance(other, ast.Call) and isinstance(other.func, ast.Attribute):
                    other = other.func.value  # _MOVED.keys()
                if isinstance(other, ast.Name):
                    served |= literals.get(other.id, set())
                else:
                    served |= _constants(other)
    return served


def _absolute(star: str, module: str, is_package: bool) -> str:
    """A star import's module, relative ones resolved against ``module``."""
    level = len(star) - len(star.lstrip("."))
    if not level:
        return star
    parts = module.split(".") if is_package else module.split(".")[:-1]
    base = parts[: len(parts) - (level - 1)]
    rest = star[level:]
    return ".".join([*base, rest] if rest else base)


def read_wheel(wheel: Path, engine: str) -> dict[str, set[str]]:
    """Each module of ``engine``'s package in the wheel, with the names it binds (a star
    import of another module of the package brings that module's public names)."""
    found: dict[str, set[str]] = {}
    stars: dict[str, list[str]] = {}
    with zipfile.ZipFile(wheel) as archive:
        for path in archive.namelist():
            if not path.startswith(f"{engine}/"):
                continue
            module = module_name(path)
            if module is None:
                continue
            text = archive.read(path).decode("utf-8", errors="replace")
            try:
                tree = ast.parse(text)
            except SyntaxError:
                found.setdefault(module, set())
                continue
            starred: list[str] = []
            found[module] = bound_names(tree, engine, starred)
            is_package = path.endswith("/__init__.py")
            stars[module] = [_absolute(s, module, is_package) for s in starred]
    if engine not in found:
        raise RuntimeError(f"{wheel.name}: no {engine}/__init__.py")
    changed = True
    while changed:  # a star import of a module that star-imports another
        changed = False
        for module, sources in stars.items():
            for source in sources:
                public = {n for n in found.get(source, ()) if not n.startswith("_")}
                if not public <= found[module]:
                    found[module] |= public
                    changed = True
    return found


def _releases_of(mask: int, releases: list[str]) -> set[str]:
    return {r for i, r in enumerate(releases) if mask >> i & 1}


def _mask(held: set[str], releases: list[str]) -> int:
    return sum(1 << i for i, r in enumerate(releases) if r in held)


def _names_entry(by_name: dict[str, set[str]], module: set[str], ordered: list[str]) -> list[Any]:
    """A module's names: first those held wherever the module is (most of them), then each
    other name with its own mask."""
    always = sorted(n for n, h in by_name.items() if h == module)
    others = {n: _mask(h, ordered) for n, h in sorted(by_name.items()) if h and h != module}
    return [always, others]


def record(engine: str, wheels: list[Path]) -> Path:
    """Read each wheel into ``exports-ENGINE.json.gz``; the releases read before are kept."""
    target = TARGET / f"exports-{engine}.json.gz"
    old: dict[str, Any] = {}
    if target.exists():
        old = json.loads(gzip.decompress(target.read_bytes()))
    old_releases: list[str] = old.get("releases", [])
    modules: dict[str, set[str]] = {
        m: _releases_of(v, old_releases) for m, v in old.get("modules", {}).items()
    }
    names: dict[str, dict[str, set[str]]] = {}
    for m, (always, others) in old.get("names", {}).items():
        names[m] = {n: set(modules[m]) for n in always}
        names[m] |= {n: _releases_of(v, old_releases) for n, v in others.items()}
    releases = set(old_releases)
    for wheel in wheels:
        release = wheel.name.split("-")[1]
        read = read_wheel(wheel, engine)
        releases.add(release)
        for held in modules.values():
            held.discard(release)
        for by_name in names.values():
            for held in by_name.values():
                held.discard(release)
        for module, bound in read.items():
            modules.setdefault(module, set()).add(release)
            by_name = names.setdefault(module, {})
            for name in bound:
                by_name.setdefault(name, set()).add(release)
        print(f"{wheel.name}: {len(read)} modules", file=sys.stderr)
    ordered = sorted(releases, key=version_key)
    out = {
        "engine": engine,
        "source": f"{engine}'s wheels, read with ast by tools/read_exports.py",
        "releases": ordered,
        "modules": {m: _mask(h, ordered) for m, h in sorted(modules.items()) if h},
        "names": {
            m: _names_entry(by_name, modules[m], ordered)
            for m, by_name in sorted(names.items())
            if any(by_name.values())
        },
    }
    text = json.dumps(out, separators=(",", ":")) + "\n"
    # gzip without a name or a time in its header: the same reading writes the same bytes
    target.write_bytes(gzip.compress(text.encode(), mtime=0))
    return target


def main(argv: list[str] | None = None) -> int:
    """Read the wheels given into the engine's exports file."""
    return wheel_cli.run(__doc__, record, ("vllm", "sglang", *LIBRARIES), argv)


if __name__ == "__main__":
    raise SystemExit(main())
