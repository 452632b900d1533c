"""doctor's answer to ``None`` called or read where an engine imported a name only if a library
was installed: ``TypeError: 'NoneType' object is not callable`` on the line
``BatchDecodeWithPagedKVCacheWrapper(`` of vLLM 0.5's model_runner.py, whose module sets that
name to ``None`` when ``from flashinfer import ...`` fails. The import failed silently at start;
the error comes later, where the name is used. ``tools/read_optional_imports.py`` reads each
release's wheel for such names (``optional-imports-ENGINE.json``): the traceback's frame and
the line it shows say which name it was, and the reading says which library it needed."""

from __future__ import annotations

import functools
import re

from patcher.advice.catalogue import Engine
from patcher.advice.diagnosis import Diagnosis
from patcher.advice.families import FAMILIES
from patcher.advice.log_lines import RAISED, engine_file
from patcher.advice.log_rules import Fix
from patcher.advice.packaged import packaged
from patcher.advice.requirements import distribution, required

_FAMILY = next(f for f in FAMILIES if f.name == "dependency")
# The file of the engine's package a traceback frame is in.
_NONE_USED = re.compile(
    r"'NoneType' object is not callable|'NoneType' object has no attribute '(\w+)'"
)


@functools.cache
def optional_imports(engine: str) -> dict[str, dict[str, tuple[str, tuple[str, ...]]]]:
    """Each file's optional names of ``engine`` (file -> name -> (module, releases)); empty
    where none is recorded."""
    try:
        data = packaged(f"optional-imports-{engine}.json")
    except FileNotFoundError:
        return {}
    return {
        path: {name: (module, tuple(releases)) for name, (module, releases) in names.items()}
        for path, names in data["files"].items()
    }


def _distribution(engine: Engine, library: str) -> str:
    """The name to ``pip install`` for an import: the engine's own requirement's spelling
    where a release read requires it (``flashinfer-python`` for ``flashinfer``), else the
    import's name."""
    for requirement in required(engine, library).values():
        return distribution(requirement)
    return library


def by_optional_import(line: str, frame: str | None, code: str | None) -> Diagnosis | None:
    """``None`` called or read on a line whose frame is an engine file that sets the name to
    None where its import fails: that import's library is not installed."""
    raised = RAISED.match(line)
    if raised is None or raised["kind"] not in ("TypeError", "AttributeError"):
        return None
    used = _NONE_USED.search(raised["message"])
    where = engine_file(frame)
    if used is None or where is None or code is None:
        return None
    engine, path = where
    names = optional_imports(engine).get(path, {})
    attribute = used.group(1)
    after = rf"\s*\.\s*{attribute}\b" if attribute else ""  # the attribute read of it
    asked = [n for n in names if re.search(rf"\b{re.escape(n)}\b{after}", code)]
    if len(asked) != 1:
        return None
    (name,) = asked
    module, releases = names[name]
    library = module.split(".")[0]
    package = _distribution(engine, library)
    shown = f"{releases[0]} to {releases[-1]}" if len(releases) > 1 else releases[0]
    cause = (
        f"{library} is not installed (or does not import): {path} imports {name} from {module} "
        f"only where it can and sets it to None otherwise, so the line that uses it fails "
        f"(read in {engine} {shown})"
    )
    fix = Fix(
        "dependency",
        f"pip install {package}",
        note=f"the build that matches the torch and CUDA installed; python -c 'import {module}' "
        "shows why it does not import where it is installed",
    )
    return Diagnosis("-", _FAMILY.name, line.strip(), cause, (fix,), None, _FAMILY)
