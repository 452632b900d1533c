"""The bounds a release takes from the environment, read with ``ast``: a setting the engine
assigns from an environment variable (``self.num_max_dispatch_tokens_per_rank =
envs.SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK.get()``), the variable's default, and the
most the release itself allows it (``assert self.num_max_dispatch_tokens_per_rank <= 1024``).

A kernel's own check quotes the setting's name, not the variable's: DeepEP's
``x.size(0) <= num_max_dispatch_tokens_per_rank``, raised from C++ with no word of SGLang's.
doctor names the variable that sets it (patcher/advice/env_bounds.py). Recorded per release as
features:

- ``env_bound:<name>``: the variables the release assigns ``name`` from;
- ``env_default:<VARIABLE>``: its default, where the release states one as a literal;
- ``env_cap:<VARIABLE>``: the largest value the release's own ``assert`` lets it take.

The reads understood: SGLang's ``envs.X.get()`` and ``get_int_env_var("X", d)`` with the
``X = EnvInt(d)`` fields of ``sglang/srt/environ.py``; vLLM's ``envs.X`` with the
``"X": lambda: int(os.getenv("X", "d"))`` entries of ``vllm/envs.py``; ``os.environ.get`` and
``os.getenv`` anywhere.
"""

from __future__ import annotations

import ast
import zipfile

from tools.read_model_classes import ENVS
from tools.wheel_modules import modules

_GETTERS = frozenset({"get_int_env_var", "get_float_env_var", "get_bool_env_var", "getenv"})


def _literal(node: ast.expr | None) -> str | None:
    """A default written as a literal number (``128``, ``"128"``), as text."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)):
        text = str(node.value)
        return text if text.replace(".", "", 1).isdigit() else None
    return None


def _variable(value: ast.expr, prefix: str) -> tuple[str, str | None] | None:
    """The environment variable an expression reads, with the default it gives, if it reads
    one: ``envs.X.get()``, ``envs.X``, ``get_int_env_var("X", d)``, ``os.environ.get("X", d)``,
    ``int(os.getenv("X", d))``."""
    for node in ast.walk(value):
        if isinstance(node, ast.Attribute) and node.attr.startswith(prefix):
            if isinstance(node.value, ast.Name) and node.value.id == "envs":
                return node.attr, None
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        environ_get = (
            name == "get"
            and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Attribute)
            and func.value.attr == "environ"
        )
        first = node.args[0]
        if (name in _GETTERS or environ_get) and isinstance(first, ast.Constant):
            if isinstance(first.value, str) and first.value.startswith(prefix):
                default = node.args[1] if len(node.args) > 1 else None
                return first.value, _literal(default)
    return None


def _target(node: ast.expr) -> str | None:
    """The setting an assignment names: ``self.x`` or ``x``."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _caps(tree: ast.AST) -> dict[str, str]:
    """``assert self.x <= N`` (or ``x <= N``): the most ``x`` may be, by setting."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert) or not isinstance(node.test, ast.Compare):
            continue
        test = node.test
        if len(test.ops) == 1 and isinstance(test.ops[0], (ast.LtE, ast.Lt)):
            name, cap = _target(test.left), _literal(test.comparators[0])
            if name is not None and cap is not None and cap.isdigit():
                found[name] = cap if isinstance(test.ops[0], ast.LtE) else str(int(cap) - 1)
    return found


def _defaults(archive: zipfile.ZipFile, engine: str) -> dict[str, str]:
    """Each variable's default as the release's table of variables states it."""
    path = ENVS[engine]
    if path not in archive.namelist():
        return {}
    prefix = f"{engine.upper()}_"
    found: dict[str, str] = {}
    for node in ast.walk(ast.parse(archive.read(path).decode("utf-8", "replace"))):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            call = node.value
            kind = getattr(call.func, "id", "")
            for t in targets:
                if isinstance(t, ast.Name) and t.id.startswith(prefix) and kind.startswith("Env"):
                    default = _literal(call.args[0]) if call.args else None
                    if default is not None:
                        found[t.id] = default
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(value, ast.Lambda):
                    read = _variable(value.body, prefix)
                    if read is not None and read[0] == key.value and read[1] is not None:
                        found[read[0]] = read[1]
    return found


def env_bounds(archive: zipfile.ZipFile, engine: str) -> dict[str, list[str]]:
    """Per setting the release assigns from an environment variable, the variable
    (``env_bound:<name>``); per variable, its default (``env_default:<VARIABLE>``) and the
    cap the release asserts (``env_cap:<VARIABLE>``)."""
    prefix = f"{engine.upper()}_"
    package = f"{engine}/"
    bound: dict[str, set[str]] = {}
    defaults = _defaults(archive, engine)
    caps: dict[str, str] = {}
    for _name, _text, tree in modules(archive, package, (prefix,)):
        capped = _caps(tree)
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            read = _variable(node.value, prefix)
            if read is None:
                continue
            variable, default = read
            if default is not None:
                defaults.setdefault(variable, default)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for name in filter(None, map(_target, targets)):
                if "_" not in name or name.isupper():  # a module constant, not a setting
                    continue
                bound.setdefault(name, set()).add(variable)
                if name in capped:
                    caps[variable] = capped[name]
    read: dict[str, list[str]] = {f"env_bound:{n}": sorted(v) for n, v in sorted(bound.items())}
    used = {v for variables in bound.values() for v in variables}
    read |= {f"env_default:{v}": [d] for v, d in sorted(defaults.items()) if v in used}
    read |= {f"env_cap:{v}": [c] for v, c in sorted(caps.items())}
    return read
