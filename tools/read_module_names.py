"""How transformers names the module it imports a local model directory's own code as, read
from its wheels with ``ast``:

    python -m tools.read_module_names WHEEL [WHEEL ...] \
        > snapshots/engines/module-names-transformers.txt

``dynamic_module_utils.get_cached_module_file`` copies a local directory's ``*.py`` files under
``transformers_modules/<submodule>`` and imports ``transformers_modules.<submodule>.<file>``;
``submodule`` is the directory's base name. Where that name is used as it is, a ``.`` in it
("Qwen1.5-7B") splits the import path and Python finds no module
``transformers_modules.Qwen1``; a release that passes the name through a function replacing
``.`` (``_sanitize_module_name``: ``_dot_``) imports it. Each wheel's line says which
(patcher/advice/module_names.py answers the failure; its test holds it to this reading).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from tools.release_table import member, print_table, release_of

# What the table says it read (its first line).
SOURCE = (
    "transformers wheels from PyPI (pip download --no-deps), {today}: whether "
    "dynamic_module_utils passes a local model directory's name through a function replacing "
    "its '.' before importing it as transformers_modules.<name> (tools/read_module_names.py; "
    "patcher/advice/module_names.py)"
)
COLUMNS = "a local directory's name\ta Hub repository's"
FILE = "transformers/dynamic_module_utils.py"


def _replaces_dot(function: ast.FunctionDef) -> bool:
    """Whether ``function`` calls ``.replace(".", ...)`` on a name."""
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "replace"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == "."
        for node in ast.walk(function)
    )


def sanitizes(source: str) -> tuple[bool, bool]:
    """Whether the module passes, through a function of its own that replaces ``.``, a local
    directory's base name (``os.path.basename(...)``: assigned to ``submodule`` directly to
    5.7, through ``local_model_name`` from 5.8) and a Hub repository's parts
    (``map(f, name.split("/"))``)."""
    tree = ast.parse(source)
    replacing = {
        f.name for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and _replaces_dot(f)
    }
    calls = [
        (n.func.id, n)
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    ]
    local = any(
        name in replacing and any("basename" in ast.unparse(a) for a in call.args)
        for name, call in calls
    )
    hub = any(
        name == "map"
        and call.args
        and isinstance(call.args[0], ast.Name)
        and call.args[0].id in replacing
        and ".split(" in ast.unparse(call.args[-1])
        for name, call in calls
    )
    return local, hub


def reading(wheel: Path) -> tuple[str, str, str]:
    """The wheel's release and whether it sanitizes a local directory's name and a Hub
    repository's ("yes", "no")."""
    release, source = release_of(wheel), member(wheel, FILE)
    local, hub = sanitizes(source)
    return release, "yes" if local else "no", "yes" if hub else "no"


def main(argv: list[str]) -> int:
    return print_table(argv, reading, SOURCE, COLUMNS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
