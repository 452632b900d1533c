"""The fields transformers' model config classes have, per release wheel, read with ``ast``:
for every class in ``transformers/models/*/configuration_*.py`` (and the base
``PretrainedConfig`` in ``configuration_utils.py``), the names its body defines (methods,
properties, class attributes, ``attribute_map``'s aliases) and the ``self.NAME`` its methods
assign, with those of the classes it derives from in the same release. An engine reads
``config.NAME``; a transformers whose class lacks the name answers "'XConfig' object has no
attribute 'NAME'", and the way out is a transformers release whose class has it
(patcher/advice/config_fields.py).

Only the fields whose presence differs between the releases read that have the class are
kept (a field every one of them has cannot be the release's fault), as the span of release
indices that have it.

    python -m tools.read_config_fields transformers-4.33.3-py3-none-any.whl ... > \\
        patcher/advice/config-fields-transformers.json
"""

from __future__ import annotations

import ast
import json
import re
import sys
import zipfile

from packaging.version import Version

BASE_MODULE = "transformers/configuration_utils.py"
CONFIG_MODULE = re.compile(r"^transformers/models/\w+/configuration_\w+\.py$")


def _keys(value: ast.expr | None) -> set[str]:
    """The string keys of a dict literal."""
    if not isinstance(value, ast.Dict):
        return set()
    return {k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _set_on_self(loop: ast.For) -> bool:
    """Whether the loop's body calls ``setattr(self, ...)``."""
    return any(
        isinstance(c, ast.Call)
        and isinstance(c.func, ast.Name)
        and c.func.id == "setattr"
        and bool(c.args)
        and _is_self(c.args[0])
        for c in ast.walk(loop)
    )


def _own(node: ast.ClassDef) -> set[str]:
    """The names a class body defines and the ``self.NAME`` its methods assign: by
    assignment, by ``setattr(self, "NAME", ...)``, or by ``setattr`` over the items of a dict
    literal one of its methods returns (``PretrainedConfig``'s generation defaults, 4.x)."""
    returned = {
        f.name: set().union(*(_keys(r.value) for r in ast.walk(f) if isinstance(r, ast.Return)))
        for f in node.body
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    names: set[str] = set()
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(item.name)
        elif isinstance(item, ast.Assign):
            for target in item.targets:
                if isinstance(target, ast.Name):
                    names.add(target.id)
                    if target.id == "attribute_map":
                        names |= _keys(item.value)
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Name)
            and sub.func.id == "setattr"
            and len(sub.args) >= 2
            and _is_self(sub.args[0])
            and isinstance(sub.args[1], ast.Constant)
            and isinstance(sub.args[1].value, str)
        ):
            names.add(sub.args[1].value)
        if (
            isinstance(sub, ast.For)
            and isinstance(sub.iter, ast.Call)
            and isinstance(sub.iter.func, ast.Attribute)
            and sub.iter.func.attr == "items"
            and isinstance(method := sub.iter.func.value, ast.Call)
            and isinstance(method.func, ast.Attribute)
            and _is_self(method.func.value)
            and _set_on_self(sub)
        ):
            names |= returned.get(method.func.attr, set())
        targets: list[ast.expr] = []
        if isinstance(sub, ast.Assign):
            targets = list(sub.targets)
        elif isinstance(sub, (ast.AnnAssign, ast.AugAssign)):
            targets = [sub.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and _is_self(target.value):
                names.add(target.attr)
    return names


def read(wheel: str) -> tuple[str, dict[str, set[str]]]:
    """The release a transformers wheel is and each config class's fields in it."""
    release = re.sub(r"^transformers-([^-]+)-.*$", r"\1", wheel.rsplit("/", 1)[-1])
    own: dict[str, set[str]] = {}
    bases: dict[str, list[str]] = {}
    with zipfile.ZipFile(wheel) as archive:
        modules = [m for m in archive.namelist() if m == BASE_MODULE or CONFIG_MODULE.match(m)]
        for module in modules:
            for node in ast.parse(archive.read(module).decode()).body:
                if isinstance(node, ast.ClassDef) and (
                    node.name.endswith("Config") or module == BASE_MODULE
                ):
                    own[node.name] = _own(node)
                    bases[node.name] = [b.id for b in node.bases if isinstance(b, ast.Name)]

    def fields(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        found = set(own.get(name, ()))
        for base in bases.get(name, ()):
            if base not in seen:
                found |= fields(base, seen | {name})
        return found

    return release, {
        name: fields(name) for name in own if name.endswith("Config") and name in bases
    }


def spans(indices: list[int]) -> str:
    """``[0, 1, 2, 5]`` as ``"0-2,5"``."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in runs)


def main(wheels: list[str]) -> None:
    read_ = sorted((read(w) for w in wheels), key=lambda r: Version(r[0]))
    releases = [r for r, _ in read_]
    classes: dict[str, dict[str, str]] = {}
    for name in sorted({c for _, found in read_ for c in found}):
        having = [i for i, (_, found) in enumerate(read_) if name in found]
        varying: dict[str, str] = {}
        every = sorted(set().union(*(read_[i][1][name] for i in having)))
        for field in every:
            present = [i for i in having if field in read_[i][1][name]]
            if present != having and not field.startswith("_"):
                varying[field] = spans(present)
        classes[name] = {"": spans(having), **varying}
    json.dump(
        {
            "source": "tools/read_config_fields.py over the transformers wheels named",
            "releases": releases,
            "classes": classes,
        },
        sys.stdout,
        indent=0,
        sort_keys=True,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
