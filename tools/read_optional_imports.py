"""The names an engine imports only where a library is installed, read from each release's wheel
with ``ast``: a ``try`` whose body imports a name from another package and whose handler for
the import failing (``ImportError``, ``ModuleNotFoundError``, ``Exception`` or a bare
``except``) sets that name to ``None``::

    try:
        from flashinfer import BatchDecodeWithPagedKVCacheWrapper
    except ImportError:
        BatchDecodeWithPagedKVCacheWrapper = None

Code of the release that later calls the name, or reads an attribute of it, fails with
``TypeError: 'NoneType' object is not callable`` or ``AttributeError: 'NoneType' object has no
attribute ...`` on a line the traceback shows, far from the import that failed silently
(vLLM 0.5's model_runner.py under Gemma 2 without flashinfer). doctor reads the traceback's
frame and line against this reading (patcher/advice/optional_imports.py).

Recorded in ``patcher/advice/optional-imports-ENGINE.json``: ``releases`` in order, and for
each file of the package (``vllm/worker/model_runner.py``) each such name with the module it
is imported from and the releases read that set it to None there.

Usage: python -m tools.read_optional_imports ENGINE WHEEL...  (each wheel read anew, the
others kept)
"""

from __future__ import annotations

import ast
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

from patcher.advice.catalogue import version_key
from tools import wheel_cli
from tools.read_defects import catches_import

TARGET = Path(__file__).resolve().parent.parent / "patcher" / "advice"


def _imported(body: list[ast.stmt], package: str) -> dict[str, str]:
    """The names a ``try`` body imports from other packages, each with its module."""
    found: dict[str, str] = {}
    for node in body:
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.split(".")[0] != package:
                found.update({a.asname or a.name: node.module for a in node.names})
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != package:
                    found[alias.asname or alias.name.split(".")[0]] = alias.name
    return found


def _set_to_none(body: list[ast.stmt]) -> set[str]:
    """The names a handler's body assigns ``None`` (``a = None``, ``a = b = None``)."""
    found: set[str] = set()
    for node in body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            if node.value.value is None:
                found.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return found


def optional_names(tree: ast.Module, package: str) -> dict[str, str]:
    """Each name the module sets to None where its import from another package fails, with
    that package's module; at the top level and inside its ``if`` blocks."""
    found: dict[str, str] = {}

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Try):
                imported = _imported(node.body, package)
                for handler in node.handlers:
                    if catches_import(handler):
                        for name in _set_to_none(handler.body) & imported.keys():
                            found[name] = imported[name]
                visit(node.body)
            elif isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)

    visit(tree.body)
    return found


def read_wheel(wheel: Path, engine: str) -> dict[str, dict[str, str]]:
    """Each file of the engine's package in the wheel with its optional names."""
    found: dict[str, dict[str, str]] = {}
    with zipfile.ZipFile(wheel) as archive:
        for path in archive.namelist():
            if not (path.startswith(f"{engine}/") and path.endswith(".py")):
                continue
            try:
                tree = ast.parse(archive.read(path).decode("utf-8", errors="replace"))
            except SyntaxError:
                continue
            names = optional_names(tree, engine)
            if names:
                found[path] = names
    return found


def record(engine: str, wheels: list[Path]) -> Path:
    """Read each wheel into ``optional-imports-ENGINE.json``; the releases read before kept."""
    target = TARGET / f"optional-imports-{engine}.json"
    old: dict[str, Any] = json.loads(target.read_text()) if target.exists() else {}
    releases = set(old.get("releases", []))
    # file -> name -> (module, releases)
    held: dict[str, dict[str, tuple[str, set[str]]]] = {
        f: {n: (m, set(r)) for n, (m, r) in names.items()}
        for f, names in old.get("files", {}).items()
    }
    for wheel in wheels:
        release = wheel.name.split("-")[1]
        releases.add(release)
        for names in held.values():
            for _, seen in names.values():
                seen.discard(release)
        for path, names in read_wheel(wheel, engine).items():
            for name, module in names.items():
                _, seen = held.setdefault(path, {}).setdefault(name, (module, set()))
                held[path][name] = (module, seen | {release})
        print(f"{wheel.name}: read", file=sys.stderr)
    ordered = sorted(releases, key=version_key)
    out = {
        "engine": engine,
        "source": f"{engine}'s wheels, read with ast by tools/read_optional_imports.py",
        "releases": ordered,
        "files": {
            path: {
                name: [module, sorted(seen, key=version_key)]
                for name, (module, seen) in sorted(names.items())
                if seen
            }
            for path, names in sorted(held.items())
            if any(seen for _, seen in names.values())
        },
    }
    target.write_text(json.dumps(out, indent=1, sort_keys=False) + "\n")
    return target


def main(argv: list[str] | None = None) -> int:
    """Read the wheels given into the engine's optional-imports file."""
    return wheel_cli.run(__doc__, record, ("vllm", "sglang"), argv)


if __name__ == "__main__":
    raise SystemExit(main())
