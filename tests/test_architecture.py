"""The house: every runtime import of the package (module level and inside functions, not the
``if TYPE_CHECKING:`` ones) goes down the layers, and none closes a circle.

The layers, bottom to top (docs/architecture.md): the leaves (errors, version, progress, units,
results), text, store, transforms, engines, advice, ops, cli, and the faces (the flat
``patcher`` API, ``patcher.api``, ``python -m patcher``).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "patcher"
LEAVES = (
    "patcher.errors",
    "patcher.version",
    "patcher.progress",
    "patcher.results",
    "patcher.units",
)
LAYERS = ("text", "store", "transforms", "engines", "advice", "ops", "cli")
FACES = ("patcher", "patcher.api", "patcher.__main__")


def module_names() -> dict[str, Path]:
    """Every module of the package, by dotted name (a package by its ``__init__``)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                skipped |= {id(inner) for part in node.body for inner in ast.walk(part)}
    return skipped


def runtime_imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports when it runs, functions included. ``from
    patcher import progress`` names the submodule only: the package's ``__init__`` imports
    nothing when it loads."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_nodes(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    named: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            named |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            subs = {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules}
            named |= subs
            if len(subs) < len(node.names):
                named.add(base)
    found = set()
    for target in named:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def rank(name: str) -> int:
    """The layer of a module: 0 the leaves, 1 text ... 7 cli, 8 the faces."""
    if name in LEAVES:
        return 0
    if name in FACES:
        return len(LAYERS) + 1
    layer = name.split(".")[1]
    assert layer in LAYERS, f"{name} sits in no layer: put it in a folder of docs/architecture.md"
    return LAYERS.index(layer) + 1


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = module_names()
    return {name: runtime_imports(name, path, modules) for name, path in modules.items()}


def test_no_import_goes_up_a_layer(graph: dict[str, set[str]]) -> None:
    upward = [
        f"{name} ({rank(name)}) imports {target} ({rank(target)})"
        for name, targets in sorted(graph.items())
        for target in sorted(targets)
        if rank(target) > rank(name)
    ]
    assert not upward, "\n".join(upward)


def test_the_library_never_imports_the_cli(graph: dict[str, set[str]]) -> None:
    into_cli = [
        f"{name} imports {target}"
        for name, targets in graph.items()
        if not name.startswith("patcher.cli") and name != "patcher.__main__"
        for target in targets
        if target.startswith("patcher.cli")
    ]
    assert not into_cli


def test_no_import_circle(graph: dict[str, set[str]]) -> None:
    """No module reaches itself through the imports it runs (depth-first, every module)."""
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> list[str] | None:
        if name in path:
            return [*path[path.index(name) :], name]
        if name in done:
            return None
        for target in sorted(graph[name]):
            circle = visit(target, [*path, name])
            if circle:
                return circle
        done.add(name)
        return None

    for name in sorted(graph):
        circle = visit(name, [])
        assert circle is None, " -> ".join(circle)


def test_the_house_stays_small() -> None:
    """At most 15 modules at the top; no module over 600 lines; each layer a folder."""
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 15, top
    long = {
        str(p.relative_to(ROOT)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600
    }
    assert not long
    assert all((PACKAGE / layer / "__init__.py").is_file() for layer in LAYERS)


def test_the_checker_sees_function_level_and_relative_imports(tmp_path: Path) -> None:
    """The checker itself: an import inside a function counts, a TYPE_CHECKING one does not."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from patcher.ops import sync\n"
        "def f():\n    from patcher.cli import render\n"
    )
    module = tmp_path / "m.py"
    module.write_text(source)
    modules = {"patcher.cli.render": Path(), "patcher.ops.sync": Path()}
    assert runtime_imports("patcher.text.m", module, modules) == {"patcher.cli.render"}


def test_one_exception_boundary_wraps_every_command() -> None:
    """The boundary (known failures exit 1 with their message, bugs 3, interrupts 130) is
    entered in one place, around each command as the app registers it; no command enters it
    itself, so a new command cannot forget it."""
    from patcher.cli import app

    users = [
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "patcher").rglob("*.py")
        if "boundary(" in p.read_text() and p.name != "output.py"
    ]
    assert users == ["patcher/cli/app.py"], users
    assert all(
        c.callback is not None and c.callback.__wrapped__ for c in app.app.registered_commands
    )


def test_every_journalled_write_goes_through_commit() -> None:
    """A checkpoint's journal and files change in one place: store/change.py's commit() is the
    only caller of the session's write-ahead and of its journal save (forget, which removes
    .patcher/ whole, and an overlay's links, which are not the checkpoint's files, aside)."""
    callers = sorted(
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "patcher").rglob("*.py")
        if p.name != "session.py"
        and any(call in p.read_text() for call in (".write_ahead(", "session.save(", ".save(ahead"))
    )
    assert callers == ["patcher/store/change.py"], callers


@pytest.mark.parametrize(
    "argv",
    [
        ["apply", "CKPT", "strip-fp8-kv-cache"],
        ["status", "CKPT"],
        ["plan", "CKPT", "--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--tp", "8"],
    ],
    ids=["apply", "status", "plan"],
)
def test_a_checkpoint_never_climbs_back_up_a_layer(argv: list[str]) -> None:
    """Followed through a command (tools/walk.py), the checkpoint only goes down the layers:
    no lower layer calls back up into a higher one with it, and it visits few modules."""
    from tools.walk import walk

    found = walk(argv)
    assert found["climbs"] == []
    assert 0 < len(found["rooms"]) <= 14, found["rooms"]


_LOADED = """
import sys
from patcher.cli.app import main
sys.argv = ["patcher", *sys.argv[1:]]
try:
    main()
except SystemExit as done:
    assert not done.code, done.code
print(" ".join(sorted(m for m in sys.modules if m.startswith("patcher."))))
"""


def _loaded(*argv: str | Path) -> set[str]:
    """The package's modules a ``patcher`` command loads, run in a process of its own."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _LOADED, *map(str, argv)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return set(done.stdout.strip().splitlines()[-1].split())


def test_a_plain_apply_and_revert_load_only_what_they_use(kimi: Path) -> None:
    """A new entry does not load the rebuild machinery, and reverting it (the kept original
    written back) does not load the JSON scanner or the patch replay: each is several ms of
    every such command's start (docs/benchmark.md). A replacement and a revert under a later
    entry still load them, and work."""
    applied = _loaded("apply", kimi, "strip-fp8-kv-cache", "--json")
    assert "patcher.ops.apply" in applied
    assert not applied & {"patcher.ops.replacing", "patcher.ops.rebuilding"}
    reverted = _loaded("revert", kimi, "--last", "--json")
    assert "patcher.ops.revert" in reverted
    assert not reverted & {"patcher.text.jsontext", "patcher.text.replay"}

    _loaded("apply", kimi, "strip-fp8-kv-cache")
    _loaded("apply", kimi, "set-context-length", "--set", "length=131072")
    under = _loaded("revert", kimi, "strip-fp8-kv-cache")
    assert {"patcher.text.jsontext", "patcher.text.replay"} <= under
