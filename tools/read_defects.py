"""Defects a release's start-up files carry in their source, read with ``ast``: the lines that
raise an error of Python's own words (no message of the engine's) whenever they run.

- ``optional_import``: a name a module imports inside ``try: ... except ImportError`` and does
  not bind otherwise. Where the import fails (the other package not installed, or a version
  of it without the name), a later use raises ``NameError: name 'X' is not defined`` (SGLang
  0.4.6's ``gptq.py`` took ``check_marlin_supported`` from vLLM so). Recorded as
  ``FILE|NAME|MODULE``.
- ``missing_method``: a call ``logger.X(...)`` where the module's logger has no ``X``: not a
  method of ``logging.Logger`` (with the ones transformers adds to it) and, for a logger the
  engine's own factory makes, no word of that factory's module (vLLM's ``init_logger``). It
  raises ``AttributeError: 'Logger' object has no attribute 'X'`` (vLLM 0.8.5's
  ``awq_marlin.py`` called ``logger.warning_one``). A module whose logger comes from
  elsewhere is not judged.
  Recorded as ``FILE|logger.X``.
- ``root_import``: a module inside the engine's package importing a name from the package's
  root at module level (``from sglang import ServerArgs`` in ``sglang/srt/...``). Where the
  root is itself still importing that module, Python raises ``ImportError: cannot import name
  'X' from partially initialized module 'sglang' (most likely due to a circular import)``
  (SGLang 0.5.3's ``decode_kvcache_offload_manager.py``). Recorded as ``FILE|NAME``.
- ``unbound``: a name a module reads and binds nowhere: no import, definition, assignment or
  argument of the file names it. The line raises ``NameError: name 'X' is not defined``
  whenever it runs (SGLang 0.4.6 to 0.5.2's compressed_tensors.py returns
  ``CompressedTensorsW8A8Int8(...)`` for an int8 W8A8 checkpoint and never imports it). The
  reading is of the whole file, not of each scope: a name bound anywhere in it counts as
  bound; a file that imports ``*`` or reads its names through ``globals()``, ``exec`` or a
  module ``__getattr__`` is passed over. Recorded as ``FILE|NAME``.

- ``always_raises``: an engine's own ``raise`` under ``if P is not None:`` where ``P`` is a
  parameter of the function whose default is a value other than None (``False``, ``0``) and
  that the function never assigns: the guard holds for every value a caller passes, so the
  line raises whenever it runs (vLLM 0.8.5's ``gptq_marlin.py`` refused every MoE model with
  "Apply router weight on input is not supported for fused Marlin MoE method." so).
  Recorded as ``FILE|P=DEFAULT|MESSAGE`` (the message's first 80 characters).

doctor names, for such an error in such a file, the releases read whose file no longer has
the defect (patcher/advice/engine_defects.py)."""

from __future__ import annotations

import ast
import builtins
import fnmatch
import logging
import re
import zipfile

# transformers, which every engine imports at start-up, adds these to every logging.Logger
# (transformers/utils/logging.py: ``logging.Logger.warning_once = warning_once``; read in its
# releases 4.40.0 to 5.25.0, info_once from 4.4x on)
_TRANSFORMERS_ADDS = frozenset({"warning_advice", "warning_once", "info_once"})
_LOGGER_METHODS = frozenset(dir(logging.Logger)) | _TRANSFORMERS_ADDS
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
# the names Python binds in every module, besides the builtins
_MODULE_NAMES = frozenset(
    {"__file__", "__name__", "__doc__", "__spec__", "__path__", "__package__", "__builtins__"}
    | {"__loader__", "__annotations__", "__class__", "__debug__", "__dict__", "__module__"}
    | {"__qualname__"}
)
_PYTHON_NAMES = frozenset(dir(builtins)) | _MODULE_NAMES
# type parameters (Python 3.12's ``def f[T]``), where the interpreter reading has them
_TYPE_PARAMS = tuple(
    getattr(ast, n) for n in ("TypeVar", "ParamSpec", "TypeVarTuple") if hasattr(ast, n)
)


def catches_import(handler: ast.ExceptHandler) -> bool:
    """Whether an ``except`` handler catches an import's failure (a bare ``except`` too)."""
    kinds = handler.type
    if kinds is None:
        return True
    names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
    return any(isinstance(n, ast.Name) and n.id in _IMPORT_ERRORS for n in names)


def _bound(nodes: list[ast.stmt]) -> set[str]:
    """The names statements bind (assignments, imports, definitions), at any depth."""
    found: set[str] = set()
    for node in (n for stmt in nodes for n in ast.walk(stmt)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
    return found


def _module_statements(tree: ast.Module) -> list[ast.stmt]:
    """The module's own statements, through its top-level ``if`` blocks (a platform's imports)."""
    found: list[ast.stmt] = []
    pending = list(tree.body)
    while pending:
        stmt = pending.pop(0)
        found.append(stmt)
        if isinstance(stmt, ast.If):
            pending[:0] = [*stmt.body, *stmt.orelse]
    return found


def optional_imports(tree: ast.Module) -> list[tuple[str, str]]:
    """Each name imported only under ``try: ... except ImportError`` (with its module), that
    neither the handler nor any other module-level statement binds."""
    statements = _module_statements(tree)
    found: list[tuple[str, str]] = []
    for stmt in statements:
        if not isinstance(stmt, ast.Try) or not any(map(catches_import, stmt.handlers)):
            continue
        elsewhere = _bound([s for s in statements if s is not stmt and not isinstance(s, ast.If)])
        elsewhere |= _bound([h for handler in stmt.handlers for h in handler.body])
        for node in (n for s in stmt.body for n in ast.walk(s)):
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    name = alias.asname or alias.name
                    if name != "*" and name not in elsewhere:
                        found.append((name, node.module))
    return found


def logger_calls(tree: ast.Module) -> set[str]:
    """The methods the module calls on a name ``logger``."""
    return {
        node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "logger"
    }


def logger_source(tree: ast.Module) -> str | None:
    """Where the module's ``logger`` comes from: ``"logging"`` for ``logging.getLogger(...)``,
    the module of the factory it imports (``vllm.logger`` for ``init_logger(...)``), or None
    where it binds it otherwise (then its calls are not judged)."""
    imported = {
        alias.asname or alias.name: node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    for stmt in tree.body:
        if not (
            isinstance(stmt, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "logger" for t in stmt.targets)
            and isinstance(stmt.value, ast.Call)
        ):
            continue
        func = stmt.value.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "logging"
            and func.attr == "getLogger"
        ):
            return "logging"
        if isinstance(func, ast.Name) and func.id in imported:
            return imported[func.id]
        return None
    return None


def root_imports(tree: ast.Module, package: str) -> set[str]:
    """The names a module imports from ``package``'s root at module level (not under ``if
    TYPE_CHECKING:``, which never runs)."""
    checked = {
        id(node)
        for stmt in tree.body
        if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test)
        for node in ast.walk(stmt)
    }
    return {
        alias.name
        for stmt in _module_statements(tree)
        if id(stmt) not in checked
        if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module == package
        for alias in stmt.names
    }


def _all_bound(tree: ast.Module) -> set[str] | None:
    """Every name the module binds in any scope (``_bound``'s assignments, imports and
    definitions, and arguments, handlers' names, ``global``, patterns, type parameters), or
    None where not all its names are written in it (a star import, ``globals()``, ``exec``, a
    module ``__getattr__``)."""
    names = _bound(tree.body)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in ("globals", "exec", "locals", "vars"):
                return None
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names |= set(node.names)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        elif _TYPE_PARAMS and isinstance(node, _TYPE_PARAMS):
            names.add(node.name)
    if "__getattr__" in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}:
        return None
    return names


def unbound(tree: ast.Module) -> set[str]:
    """The names the module reads and binds nowhere, Python's own names aside."""
    bound = _all_bound(tree)
    if bound is None:
        return set()
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return read - bound - _PYTHON_NAMES


def _defaults(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.expr]:
    """Each parameter of ``fn`` that has a default, with it."""
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    with_default = [a.arg for a in positional][len(positional) - len(args.defaults) :]
    named = dict(zip(with_default, args.defaults, strict=True))
    named |= {
        a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None
    }
    return named


def always_raises(tree: ast.Module) -> list[tuple[str, str, str]]:
    """Each ``raise`` under ``if P is not None:`` where ``P`` is a parameter of the enclosing
    function with a default other than None that the function never assigns: the parameter,
    its default, and the raised message's first string."""
    found: list[tuple[str, str, str]] = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        defaults = {
            name: default
            for name, default in _defaults(fn).items()
            if isinstance(default, ast.Constant) and default.value is not None
        }
        assigned = {
            n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        for node in ast.walk(fn):
            test = node.test if isinstance(node, ast.If) else None
            if not (
                isinstance(test, ast.Compare)
                and isinstance(test.left, ast.Name)
                and test.left.id in defaults
                and test.left.id not in assigned
                and len(test.ops) == 1
                and isinstance(test.ops[0], ast.IsNot)
                and isinstance(test.comparators[0], ast.Constant)
                and test.comparators[0].value is None
            ):
                continue
            assert isinstance(node, ast.If)
            for stmt in (s for s in node.body if isinstance(s, ast.Raise)):
                words = [
                    c.value
                    for c in ast.walk(stmt)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                ]
                if words:
                    default = ast.unparse(defaults[test.left.id])
                    found.append((test.left.id, default, words[0][:80]))
    return found


def defects(archive: zipfile.ZipFile, patterns: tuple[str, ...]) -> dict[str, list[str]]:
    """The defects of a wheel's files matching ``patterns`` (see the module's docstring)."""
    names = set(archive.namelist())
    words: dict[str, frozenset[str] | None] = {"logging": frozenset()}

    def added(module: str) -> frozenset[str] | None:
        """The words of the engine's module a logger factory comes from: the methods it adds
        to its loggers (vLLM's ``warning_once``); None for a module not in the wheel."""
        if module not in words:
            path = module.replace(".", "/")
            file = next((f for f in (f"{path}.py", f"{path}/__init__.py") if f in names), None)
            text = archive.read(file).decode(errors="replace") if file else None
            words[module] = frozenset(re.findall(r"\w+", text)) if text is not None else None
        return words[module]

    optional: set[str] = set()
    missing: set[str] = set()
    rooted: set[str] = set()
    unbound_names: set[str] = set()
    raising: set[str] = set()
    for name in sorted(names):
        if not any(fnmatch.fnmatch(name, p) for p in patterns):
            continue
        try:
            tree = ast.parse(archive.read(name))
        except (SyntaxError, ValueError):
            continue
        optional |= {f"{name}|{n}|{module}" for n, module in optional_imports(tree)}

        source = logger_source(tree)
        extra = added(source) if source is not None else None
        if extra is not None:
            missing |= {f"{name}|logger.{m}" for m in logger_calls(tree) - _LOGGER_METHODS - extra}
    for name in sorted(names):  # every module of the package: any can close the circle
        package = name.split("/")[0]
        if not name.endswith(".py") or name.count("/") < 1 or name == f"{package}/__init__.py":
            continue
        try:
            tree = ast.parse(archive.read(name))
        except (SyntaxError, ValueError):
            continue
        unbound_names |= {f"{name}|{n}" for n in unbound(tree)}
        raising |= {f"{name}|{p}={d}|{m}" for p, d, m in always_raises(tree)}
        # a submodule (``from vllm import envs``) imports even from a partial root
        rooted |= {
            f"{name}|{n}"
            for n in root_imports(tree, package)
            if f"{package}/{n}.py" not in names and f"{package}/{n}/__init__.py" not in names
        }
    return {
        "optional_import": sorted(optional),
        "missing_method": sorted(missing),
        "root_import": sorted(rooted),
        "unbound": sorted(unbound_names),
        "always_raises": sorted(raising),
    }
