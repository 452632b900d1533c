"""The model types an engine release reads with a config class of its own, read with ``ast``:
the keys of its ``_CONFIG_REGISTRY``, which it consults before transformers' ``AutoConfig``.

Such a model type starts on that release whatever transformers is installed: vLLM 0.17 registers
``qwen3_5_moe`` (``Qwen3_5MoeConfig``) while it pins ``transformers<5``, and no transformers
before 5.2.0 knows the type. So "transformers does not recognize this architecture" has two ways
out, a transformers that knows the type or an engine release that brings its own class
(patcher/advice/transformers_rules.py). Recorded per release as the ``own_config`` feature.

The forms read: vLLM's ``LazyConfigDict(chatglm="ChatGLMConfig", ...)`` and its older dict
literal; SGLang's ``{ChatGLMConfig.model_type: ChatGLMConfig, ...}``, its list of classes keyed
by ``model_type`` after, and ``{cls.model_type: cls for cls in [...]}``, each class's
``model_type`` read from the release's own config modules; and any
``_CONFIG_REGISTRY["x"] = ...`` or ``.update({...})`` after.
"""

from __future__ import annotations

import ast
import zipfile

from tools.wheel_modules import modules

_REGISTRY = "_CONFIG_REGISTRY"


def _class_types(archive: zipfile.ZipFile, package: str) -> dict[str, str]:
    """Each config class's ``model_type``, by class name, over the release's modules."""
    found: dict[str, str] = {}
    for _name, _text, tree in modules(archive, package, ("model_type", "class ")):
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for stmt in node.body:
                targets = (
                    stmt.targets
                    if isinstance(stmt, ast.Assign)
                    else [stmt.target]
                    if isinstance(stmt, ast.AnnAssign)
                    else []
                )
                value = getattr(stmt, "value", None)
                if any(isinstance(t, ast.Name) and t.id == "model_type" for t in targets) and (
                    isinstance(value, ast.Constant) and isinstance(value.value, str)
                ):
                    found.setdefault(node.name, value.value)
    return found


def _key(node: ast.expr | None, classes: dict[str, str]) -> str | None:
    """A registry key: ``"chatglm"``, or ``ChatGLMConfig.model_type`` resolved."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Attribute) and node.attr == "model_type":
        if isinstance(node.value, ast.Name):
            return classes.get(node.value.id)
    return None


def _keys(value: ast.expr, classes: dict[str, str]) -> set[str]:
    """The model types a registry's value (or an ``update``'s argument) holds."""
    found: set[str] = set()
    if isinstance(value, ast.Call):  # LazyConfigDict(chatglm="ChatGLMConfig", ...), dict(...)
        found |= {k.arg for k in value.keywords if k.arg}
        for arg in value.args:
            found |= _keys(arg, classes)
    elif isinstance(value, ast.Dict):
        found |= {k for k in (_key(key, classes) for key in value.keys) if k}
    elif isinstance(value, (ast.List, ast.Tuple)):  # [A, B], keyed by model_type after
        found |= {classes[e.id] for e in value.elts if isinstance(e, ast.Name) and e.id in classes}
    elif isinstance(value, ast.DictComp):  # {cls.model_type: cls for cls in [A, B]}
        for generator in value.generators:
            if isinstance(generator.iter, (ast.List, ast.Tuple)):
                names = [e.id for e in generator.iter.elts if isinstance(e, ast.Name)]
                found |= {classes[n] for n in names if n in classes}
    return found


def own_configs(archive: zipfile.ZipFile, engine: str) -> dict[str, list[str]]:
    """The model types the release registers its own config class for (``own_config``)."""
    package = f"{engine}/"
    classes: dict[str, str] | None = None
    found: set[str] = set()
    for _name, text, tree in modules(archive, package, (_REGISTRY,)):
        if f"{_REGISTRY}:" not in text and f"{_REGISTRY} =" not in text:
            continue
        if classes is None:
            classes = _class_types(archive, package)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name) and target.id == _REGISTRY:
                        found |= _keys(node.value, classes)
                    elif (
                        isinstance(target, ast.Subscript)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == _REGISTRY
                        and (key := _key(target.slice, classes))
                    ):
                        found.add(key)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "update"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == _REGISTRY
            ):
                for arg in node.args:
                    found |= _keys(arg, classes)
    return {"own_config": sorted(found)}
