"""Whether transformers' Auto classes accept a model's own class registered under a ``str`` key,
read from its wheels by running the registration itself:

    python -m tools.read_auto_register WHEEL [WHEEL ...] \
        > snapshots/engines/auto-register-transformers.txt

A model's own code (its ``processing_*.py``, loaded with remote code) often registers its
classes under a name: ``AutoProcessor.register("dots_ocr", DotsVLProcessor)``. Every
``Auto*.register`` ends in ``_LazyAutoMapping.register(key, value)``
(``models/auto/auto_factory.py``); a release whose method reads an attribute of the key without
asking first (``key.__module__``) refuses a ``str`` and the import of that code fails. The
method is taken from the wheel with ``ast`` (annotations and docstring dropped, nothing else
of transformers imported) and called on a stand-in mapping with a ``str`` key; each wheel's
line says whether it returned, or the exception and the source line that raised it
(patcher/advice/auto_register.py answers the failure; its test holds it to this reading).
"""

from __future__ import annotations

import ast
import sys
import traceback
from pathlib import Path
from types import SimpleNamespace

from tools.release_table import member, print_table, release_of

# What the table says it read (its first line).
SOURCE = (
    "transformers wheels from PyPI (pip download --no-deps), {today}: what "
    "_LazyAutoMapping.register (models/auto/auto_factory.py, where every Auto*.register ends)"
    " does with a class registered under a str key, run on a stand-in mapping "
    "(tools/read_auto_register.py; patcher/advice/auto_register.py)"
)
COLUMNS = "a str key"
FILE = "transformers/models/auto/auto_factory.py"
KEY = "NewProcessor"  # a name where a config class is expected, as a model's code passes it


def _register_method(source: str) -> ast.FunctionDef:
    """``_LazyAutoMapping.register`` with its annotations and docstring taken off."""
    tree = ast.parse(source)
    mapping = next(
        n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "_LazyAutoMapping"
    )
    method = next(
        n for n in mapping.body if isinstance(n, ast.FunctionDef) and n.name == "register"
    )
    method.returns = None
    for argument in (*method.args.args, *method.args.kwonlyargs):
        argument.annotation = None
    first = method.body[0] if method.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
        and len(method.body) > 1
    ):
        method.body = method.body[1:]
    return method


def registers_a_name(source: str) -> str:
    """``accepted``, or ``refused: EXCEPTION at line N, `SOURCE```: what the release's
    ``_LazyAutoMapping.register`` does with a ``str`` key on an empty mapping."""
    method = _register_method(source)
    module = ast.Module(body=[method], type_ignores=[])
    namespace: dict[str, object] = {}
    exec(compile(ast.fix_missing_locations(module), "<register>", "exec"), namespace)
    mapping = SimpleNamespace(_reverse_config_mapping={}, _model_mapping={}, _extra_content={})
    try:
        namespace["register"](mapping, KEY, object)  # type: ignore[operator]
    except Exception as raised:  # the refusal is the reading
        at = traceback.extract_tb(raised.__traceback__)[-1].lineno or 1
        kind = type(raised).__name__
        return f"refused: {kind}: {raised} at line {at}, `{source.splitlines()[at - 1].strip()}`"
    return "accepted"


def reading(wheel: Path) -> tuple[str, str]:
    """The wheel's release and what its registration does with a ``str`` key."""
    release, source = release_of(wheel), member(wheel, FILE)
    return release, registers_a_name(source)


def main(argv: list[str]) -> int:
    return print_table(argv, reading, SOURCE, COLUMNS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
