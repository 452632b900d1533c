"""Per-layer (heterogeneous) model configs, read with ``ast``: from transformers' wheels, the
model types whose config class builds a ``per_layer_config`` (``kwargs["per_layer_config"] =
{...}`` in its ``__post_init__``, Gemma 4's from 5.15.0), recorded per release as the
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


def per_layer_types(archive: zipfile.ZipFile) -> dict[str, list[str]]:
    """The model types of a transformers release whose config class builds per-layer
    configs (the class's own ``model_type``)."""
    types = _class_types(archive, "transformers/models/")
    found: set[str] = set()
    for _name, _text, tree in modules(archive, "transformers/models/", (FEATURE,)):
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name in types and _builds_per_layer(node):
                found.add(types[node.name])
    return {FEATURE: sorted(found)}


def reads_per_layer(archive: zipfile.ZipFile, package: str) -> dict[str, list[str]]:
    """``reads`` where the engine's code (``package``: ``"vllm/"``) reads ``per_layer_config``
    off a config anywhere, else ``whole``."""
    for _name, _text, tree in modules(archive, package, (FEATURE,)):
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == FEATURE:
                if isinstance(node.ctx, ast.Load):
                    return {FEATURE: [READS]}
    return {FEATURE: [WHOLE]}
