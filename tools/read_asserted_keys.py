"""The keys an engine's start-up code asserts a dict holds, and the releases that read the same
key with a default instead, read from each release's wheel with ``ast``::

    assert "factor" in rope_scaling                        # vLLM 0.5's _get_and_verify_max_len
    scaling_factor = rope_scaling.get("factor", 1.0)       # the same function from 0.6.3

A failed ``assert`` prints no words, only its source line in the traceback (``assert "factor" in
rope_scaling`` / ``AssertionError``): the model's config lacks a key this release requires and a
later one takes as absent (Qwen2-VL's ``rope_scaling`` of type ``mrope``, which transformers
4.45 rewrites to ``default`` with no factor). doctor reads the traceback's file and line against
this reading (patcher/advice/asserted_keys.py).

Recorded in ``patcher/advice/asserted-keys-ENGINE.json``: ``releases`` in order; ``asserted``:
for each start-up file of the package (tools/read_errors.START_UP) each asserted ``"key" in
name`` (as ``name['key']``) with the releases that assert it there; ``defaulted``: each such
``name['key']`` with the releases that read it with a default in any start-up file (the code
moves between files: vLLM's config.py became the config/ package in 0.10).

Usage: python -m tools.read_asserted_keys ENGINE WHEEL...  (each wheel read anew, the others
kept)
"""

from __future__ import annotations

import ast
import fnmatch
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

from patcher.advice.catalogue import version_key
from tools import wheel_cli
from tools.read_errors import START_UP

TARGET = Path(__file__).resolve().parent.parent / "patcher" / "advice"


def asserted(tree: ast.Module) -> set[tuple[str, str]]:
    """Each ``(name, key)`` of an ``assert "key" in name`` in the module."""
    found: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.Assert) else None
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.In):
            key = test.left
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                found.add((ast.unparse(test.comparators[0]), key.value))
    return found


def defaulted(tree: ast.Module) -> set[tuple[str, str]]:
    """Each ``(name, key)`` of a ``name.get("key", default)`` in the module."""
    found: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "get" or len(node.args) != 2:
            continue
        key = node.args[0]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            found.add((ast.unparse(node.func.value), key.value))
    return found


def read_wheel(wheel: Path, engine: str) -> dict[str, dict[str, set[tuple[str, str]]]]:
    """Each start-up file of the engine in the wheel with its asserted and defaulted keys."""
    found: dict[str, dict[str, set[tuple[str, str]]]] = {}
    with zipfile.ZipFile(wheel) as archive:
        for path in archive.namelist():
            if not any(fnmatch.fnmatch(path, pattern) for pattern in START_UP[engine]):
                continue
            text = archive.read(path).decode("utf-8", errors="replace")
            if "assert " not in text and ".get(" not in text:
                continue
            try:
                tree = ast.parse(text)
            except SyntaxError:
                continue
            found[path] = {"asserted": asserted(tree), "defaulted": defaulted(tree)}
    return found


def record(engine: str, wheels: list[Path]) -> Path:
    """Read each wheel into ``asserted-keys-ENGINE.json``; the releases read before kept."""
    target = TARGET / f"asserted-keys-{engine}.json"
    old: dict[str, Any] = json.loads(target.read_text()) if target.exists() else {}
    releases = set(old.get("releases", []))
    # (file, "asserted"|"defaulted", "name[key]") -> releases
    held: dict[tuple[str, str, str], set[str]] = {
        (path, "asserted", name): set(rels)
        for path, names in old.get("asserted", {}).items()
        for name, rels in names.items()
    }
    held |= {("*", "defaulted", name): set(rels) for name, rels in old.get("defaulted", {}).items()}
    for wheel in wheels:
        release = wheel.name.split("-")[1]
        releases.add(release)
        for seen in held.values():
            seen.discard(release)
        for path, kinds in read_wheel(wheel, engine).items():
            for kind, pairs in kinds.items():
                for name, key in pairs:
                    held.setdefault((path, kind, f"{name}[{key!r}]"), set()).add(release)
        print(f"{wheel.name}: read", file=sys.stderr)
    asserted_names = {name for _path, kind, name in held if kind == "asserted"}
    files: dict[str, dict[str, list[str]]] = {}
    anywhere: dict[str, set[str]] = {}
    for (path, kind, name), seen in sorted(held.items()):
        if seen and kind == "asserted":
            files.setdefault(path, {})[name] = sorted(seen, key=version_key)
        elif seen and name in asserted_names:  # a key some release asserts, read with a default
            anywhere.setdefault(name, set()).update(seen)
    out = {
        "engine": engine,
        "source": f"{engine}'s wheels, read with ast by tools/read_asserted_keys.py",
        "releases": sorted(releases, key=version_key),
        "asserted": files,
        "defaulted": {
            name: sorted(seen, key=version_key) for name, seen in sorted(anywhere.items())
        },
    }
    target.write_text(json.dumps(out, indent=1) + "\n")
    return target


def main(argv: list[str] | None = None) -> int:
    """Read the wheels given into the engine's asserted-keys file."""
    return wheel_cli.run(__doc__, record, ("vllm", "sglang"), argv)


if __name__ == "__main__":
    raise SystemExit(main())
