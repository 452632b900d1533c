"""Per-layer (heterogeneous) model configs, read with ``ast``: from transformers' wheels, the
model types whose config class builds a ``per_layer_config`` (``kwargs["per_layer_config"] =
{...}`` in its ``__post_init__``, Gemma 4's from 5.15.0) and those of the composite configs
holding one as a sub-config (``gemma4`` for ``gemma4_text``), recorded per release as the
``per_layer_config`` feature, one name per model type; from vLLM's (and SGLang's) wheels,
whether the engine's own code reads ``per_layer_config`` at all (``config.per_layer_config[i]``),
recorded as the same feature under the name ``reads`` (``whole`` where it does not: a release
read for it either way).

transformers raises ``AmbiguousGlobalPerLayerAttributeError`` (``integrations/heterogeneity``)
when code reads such a config's per-layer attribute (``head_dim``) whole; an engine release
written before the model's config became per-layer reads it whole and fails as it builds its
model config. patcher/advice/layer_configs.py names the transformers release before the first
that builds per-layer configs, and the first engine release read that reads them.

    python -m tools.read_errors --features transformers W.whl   # the transformers side
    python -m tools.read_errors --features vllm W.whl           # the engine side
"""

from __future__ import annotations

import ast
import zipfile

from tools.read_own_configs import _class_types
from tools.wheel_modules import modules

FEATURE = "per_layer_config"
READS = "reads"
WHOLE = "whole"
OPT_IN = "allow_global_per_layer_attribute_access"


def _builds_per_layer(node: ast.ClassDef) -> bool:
    """Whether a config class's own code sets ``per_layer_config``: a subscript store
    (``kwargs["per_layer_config"] = ...``), an attribute store or a keyword argument."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Subscript) and isinstance(inner.ctx, ast.Store):
            key = inner.slice
            if isinstance(key, ast.Constant) and key.value == FEATURE:
                return True
        if isinstance(inner, ast.Attribute) and inner.attr == FEATURE:
            if isinstance(inner.ctx, ast.Store):
                return True
        if isinstance(inner, ast.keyword) and inner.arg == FEATURE:
            return True
    return False


def _sub_configs(node: ast.ClassDef) -> set[str]:
    """The classes a composite config class names in its ``sub_configs`` mapping (its text
    and vision configs: ``{"text_config": Gemma4TextConfig, ...}``; from 5.2x
    ``sub_configs_defaults``, a value also a ``SubConfigSpec(config_class=...)``)."""
    named: set[str] = set()
    for stmt in node.body:
        if not isinstance(stmt, ast.Assign | ast.AnnAssign) or not isinstance(stmt.value, ast.Dict):
            continue
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        if any(isinstance(t, ast.Name) and t.id.startswith("sub_configs") for t in targets):
            for value in stmt.value.values:
                named |= {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    return named


def per_layer_types(archive: zipfile.ZipFile) -> dict[str, list[str]]:
    """The model types of a transformers release whose config class builds per-layer
    configs (the class's own ``model_type``), and those of the composite configs that hold
    one as a sub-config (``gemma4`` for its ``gemma4_text``): a checkpoint names the
    composite's type."""
    types = _class_types(archive, "transformers/models/")
    layered: set[str] = set()
    composites: dict[str, set[str]] = {}
    for name, _text, tree in modules(archive, "transformers/models/", ("class ",)):
        if "/configuration_" not in name:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef) or node.name not in types:
                continue
            if _builds_per_layer(node):
                layered.add(node.name)
            subs = _sub_configs(node)
            if subs:
                composites[node.name] = subs
    holding = {name for name, subs in composites.items() if subs & layered}
    return {FEATURE: sorted({types[name] for name in layered | holding})}


def reads_per_layer(archive: zipfile.ZipFile, package: str) -> dict[str, list[str]]:
    """``reads`` where the engine's code (``package``: ``"vllm/"``) reads ``per_layer_config``
    off a config anywhere, or sets transformers' ``allow_global_per_layer_attribute_access``
    (the opt-in to whole reads); else ``whole``."""
    for _name, _text, tree in modules(archive, package, ("per_layer",)):
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == FEATURE:
                if isinstance(node.ctx, ast.Load):
                    return {FEATURE: [READS]}
            # or it opts into reading them whole, knowing the config is per layer
            if isinstance(node, ast.Attribute) and node.attr == OPT_IN:
                return {FEATURE: [READS]}
    return {FEATURE: [WHOLE]}
