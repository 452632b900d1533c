"""The reasons vLLM's quantized-linear kernels give for refusing a layer, read from each
release's wheel with ``ast``: the string (or f-string, its fields kept as ``{expr}``) each
``can_implement`` of ``vllm/model_executor/**/kernels/**`` returns beside ``False``, and, in
``marlin_utils.py``, each ``check_*`` function's such return and each ``ValueError`` its
``verify_*`` functions raise (``check_marlin_supports_shape`` returns that error's text as the
reason). When no kernel of the list takes
a layer, vLLM raises "Failed to find a kernel that can implement the X linear layer. Reasons:"
with these, one per line (patcher/advice/kernel_reasons.py reads them in a log).

Prints one line per reason: the number of releases read that return it, the first and the
last, and the text; ``snapshots/engines/kernel-reasons-vllm.txt`` is its output over the
releases of the catalogue.

Usage: python -m tools.read_kernel_reasons WHEEL...
"""

from __future__ import annotations

import ast
import sys
import zipfile
from pathlib import Path

from patcher.advice.catalogue import version_key


def template(node: ast.expr) -> str | None:
    """The text of a string, f-string, concatenation or ``.format`` call; None otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}"  # type: ignore[attr-defined]
            for v in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = template(node.left), template(node.right)
        return (left or "{...}") + (right or "{...}") if left or right else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return template(node.func.value) if node.func.attr == "format" else None
    return None


def _refusals(function: ast.FunctionDef) -> list[str]:
    """The texts ``function`` returns as the second item of a ``(False, text)`` tuple."""
    found: list[str] = []
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
            items = node.value.elts
            if len(items) == 2 and isinstance(items[0], ast.Constant) and items[0].value is False:
                text = template(items[1])
                if text:
                    found.append(text)
    return found


def _raised(function: ast.FunctionDef) -> list[str]:
    """The texts of the ``ValueError`` s ``function`` raises."""
    found: list[str] = []
    for node in ast.walk(function):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            if isinstance(node.exc.func, ast.Name) and node.exc.func.id == "ValueError":
                text = template(node.exc.args[0])
                if text:
                    found.append(text)
    return found


def read_wheel(wheel: Path) -> set[str]:
    """Every kernel refusal text in one vLLM wheel."""
    found: set[str] = set()
    with zipfile.ZipFile(wheel) as archive:
        for path in archive.namelist():
            kernels = "/kernels/" in path and path.startswith("vllm/model_executor/")
            marlin = path.endswith("/marlin_utils.py")
            if not path.endswith(".py") or not (kernels or marlin):
                continue
            tree = ast.parse(archive.read(path).decode("utf-8", "replace"))
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef) and (
                    node.name == "can_implement" or (marlin and node.name.startswith("check_"))
                ):
                    found.update(_refusals(node))
                if marlin and isinstance(node, ast.FunctionDef) and node.name.startswith("verify_"):
                    found.update(_raised(node))
    return found


def main(argv: list[str] | None = None) -> int:
    """Print each refusal text with the releases read that return it."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print(__doc__)
        return 2
    seen: dict[str, list[str]] = {}
    for name in args:
        wheel = Path(name)
        release = wheel.name.split("-")[1]
        for text in read_wheel(wheel):
            seen.setdefault(text, []).append(release)
    for text, releases in sorted(seen.items()):
        releases.sort(key=version_key)
        print(f"{len(releases):>3} {releases[0]:>11} {releases[-1]:>11}  {text!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
