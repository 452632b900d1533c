"""The version checks libraries beside an engine make against each other as they are
imported, read from their own wheels with ``ast``:

    python -m tools.read_dependency_checks [--registry] WHEEL [WHEEL ...] \
        > snapshots/engines/dependency-checks.txt

- flashinfer-python: whether ``flashinfer/jit/env.py`` raises when the ``flashinfer-cubin`` or
  ``flashinfer-jit-cache`` package installed beside it is another release ("flashinfer-cubin
  version (A) does not match flashinfer version (B)"), and the variable that bypasses it;
- kernels: whether its ``LayerRepository`` refuses a repository named with neither a version
  nor a revision ("Either a revision or a version must be specified.");
- transformers: how many kernel repositories ``integrations/hub_kernels.py`` builds at import
  with neither (each one raises under such a kernels), the kernels releases its
  ``import_utils.py`` accepts (``KERNELS_MIN_VERSION``, ``KERNELS_MAX_VERSION``), and the
  requirements it checks as it is imported (``dependency_versions_check.py``), refusing
  another release with "{requirement} is required for a normal functioning of this module,
  but found {pkg}=={got}" (``utils/versions.py``);
- with ``--registry``: the flashinfer-cubin releases PyPI has (``pip index versions``).

patcher/advice/dependency_checks.py answers these refusals; its test holds it to this reading.
"""

from __future__ import annotations

import ast
import datetime
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from tools.read_messages import templates_in
from tools.wheel_modules import modules

_MISMATCH = re.compile(r"(flashinfer-cubin|flashinfer-jit-cache) version \(")
_BYPASS = re.compile(r"Set (\w+)=1 to bypass")
UNVERSIONED = "Either a revision or a version must be specified."
REQUIRED = " is required for a normal functioning of this module, but found "
_REPOSITORIES = {"LayerRepository", "FuncRepository"}
_KERNELS_BOUND = re.compile(r'KERNELS_(MIN|MAX)_VERSION\s*=\s*"([^"]+)"')


def _raised(text: str, file: str) -> list[tuple[str, int]]:
    """The exceptions a module's source raises with a message, as the catalogue reads them
    (tools/read_messages.py): each message's words (its fields left out) and its line."""
    return [
        ("".join(t["parts"][::2]), t["line"])
        for t in templates_in(text, file)
        if not t["exception"].startswith("log.")
    ]


def _caught(tree: ast.Module, function: str) -> bool:
    """Whether the module calls ``function`` only inside a ``try`` (a warning, not a failure)."""
    calls = tried = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            for inner in ast.walk(ast.Module(body=node.body, type_ignores=[])):
                if isinstance(inner, ast.Call) and getattr(inner.func, "id", None) == function:
                    tried += 1
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == function:
            calls += 1
    return calls > 0 and calls == tried


def flashinfer(archive: zipfile.ZipFile) -> str:
    """For flashinfer-cubin and flashinfer-jit-cache: whether flashinfer raises at import when
    the one installed is another release (``fatal``), raises and catches it (``caught``: 0.7
    warns and ignores the package) or does not check (``no``); the variable that bypasses
    the check, the command the message names (``flashinfer download-kernels``, 0.7), and
    whether a cubin not on disk is downloaded as it is needed (``FLASHINFER_CUBINS_REPOSITORY``
    in ``flashinfer/jit/cubin_loader.py``: what runs without the flashinfer-cubin package)."""
    found: dict[str, str] = {}
    bypass = command = "-"
    for name, text, tree in modules(archive, "flashinfer/", ("does not match",)):
        named = _BYPASS.search(text)
        bypass = named.group(1) if named else bypass
        if "`flashinfer download-kernels`" in text:
            command = "flashinfer download-kernels"
        functions = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)]
        for message, line in _raised(text, name):
            match = _MISMATCH.search(message)
            if match is None or match.group(1) in found:
                continue
            # the function the raise is in: called only inside a try, it warns
            around = [f for f in functions if f.lineno <= line <= (f.end_lineno or f.lineno)]
            caught = bool(around) and _caught(tree, around[-1].name)
            found[match.group(1)] = "caught" if caught else "fatal"
    names = archive.namelist()
    loader = "flashinfer/jit/cubin_loader.py"
    fetches = loader in names and "FLASHINFER_CUBINS_REPOSITORY" in archive.read(loader).decode()
    return "\t".join(
        [found.get(p, "no") for p in ("flashinfer-cubin", "flashinfer-jit-cache")]
        + [bypass, command, "yes" if fetches else "no"]
    )


def kernels(archive: zipfile.ZipFile) -> str:
    """Whether kernels refuses a repository named with neither a version nor a revision."""
    for name, source, _tree in modules(archive, "kernels/", (UNVERSIONED,)):
        if any(message == UNVERSIONED for message, _line in _raised(source, name)):
            return "yes"
    return "no"


def transformers(archive: zipfile.ZipFile) -> str:
    """How many kernel repositories transformers builds at import with neither a version nor a
    revision, and the kernels releases it accepts."""
    try:
        hub = ast.parse(archive.read("transformers/integrations/hub_kernels.py").decode())
    except KeyError:
        return "-\t-"
    bare = 0
    stack: list[ast.AST] = [hub]
    while stack:  # module level only: a function's calls run when called, not at import
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            if isinstance(child, ast.Call):
                func = child.func
                called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                keywords = {k.arg for k in child.keywords}
                if called in _REPOSITORIES and not keywords & {"revision", "version"}:
                    bare += 1
            stack.append(child)
    bounds = dict(
        _KERNELS_BOUND.findall(archive.read("transformers/utils/import_utils.py").decode())
    )
    accepted = ",".join(
        f"{op}{bounds[key]}" for key, op in (("MIN", ">="), ("MAX", "<")) if key in bounds
    )
    return f"{bare}\t{accepted or '-'}\t{_checked_at_import(archive)}"


def _checked_at_import(archive: zipfile.ZipFile) -> str:
    """The packages transformers checks the release of as it is imported
    (``pkgs_to_check_at_runtime`` in ``dependency_versions_check.py``), each against its own
    requirement in ``dependency_versions_table.py``, with ``utils/versions.py`` refusing
    another: "{requirement} is required for a normal functioning of this module, but found
    {pkg}=={got}" (or "-" where it raises no such message)."""
    if "transformers/utils/versions.py" not in archive.namelist():
        return "-"
    versions = archive.read("transformers/utils/versions.py").decode()
    if not any(REQUIRED in m for m, _line in _raised(versions, "transformers/utils/versions.py")):
        return "-"
    check = ast.parse(archive.read("transformers/dependency_versions_check.py").decode())
    table = ast.parse(archive.read("transformers/dependency_versions_table.py").decode())
    deps: dict[str, str] = {}
    for node in ast.walk(table):
        if isinstance(node, ast.Dict):
            deps.update(
                {
                    k.value: v.value
                    for k, v in zip(node.keys, node.values, strict=True)
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
                }
            )
    for node in check.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pkgs_to_check_at_runtime" for t in node.targets
        ):
            names = [e.value for e in ast.walk(node.value) if isinstance(e, ast.Constant)]
            return " ".join(deps.get(str(n), str(n)) for n in names if isinstance(n, str))
    return "-"


_READERS = {"flashinfer_python": flashinfer, "kernels": kernels, "transformers": transformers}
_HEADERS = {
    "flashinfer_python": "# flashinfer-python\tflashinfer-cubin of another release\t"
    "flashinfer-jit-cache of another release\tbypass variable\tcommand named\tdownloads cubins",
    "kernels": "# kernels\trefuses an unversioned repository",
    "transformers": "# transformers\tunversioned repositories built at import\tkernels accepted"
    "\trequirements checked at import",
}


def _key(version: str) -> list[int | str]:
    return [int(p) if p.isdigit() else p for p in re.split(r"[.+]", version)]


def main(argv: list[str]) -> int:
    registry = "--registry" in argv
    wheels = [Path(a) for a in argv if a != "--registry"]
    rows: dict[str, list[tuple[str, str]]] = {name: [] for name in _READERS}
    for wheel in wheels:
        project, version = wheel.name.split("-")[:2]
        with zipfile.ZipFile(wheel) as archive:
            rows[project].append((version, _READERS[project](archive)))
    today = datetime.date.today().isoformat()
    print(
        f"# wheels from PyPI (pip download --no-deps), {today}: the version checks libraries "
        "beside an engine make against each other as they are imported "
        "(tools/read_dependency_checks.py; patcher/advice/dependency_checks.py)"
    )
    for project, found in rows.items():
        if not found:
            continue
        print(_HEADERS[project])
        for version, row in sorted(found, key=lambda r: _key(r[0])):
            print(f"{version}\t{row}")
    if registry:
        listed = subprocess.run(
            [sys.executable, "-m", "pip", "index", "versions", "flashinfer-cubin"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        versions = re.search(r"Available versions: (.+)", listed)
        assert versions is not None, listed
        ordered = sorted(versions.group(1).split(", "), key=_key)
        print(f"# flashinfer-cubin on PyPI (pip index versions, {today})")
        print("\t".join(ordered))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
