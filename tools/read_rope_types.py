"""The RoPE scaling types an engine release builds, read with ``ast`` from its ``get_rope``:
the strings its scaling type is compared with (``scaling_type == "llama3"``), recorded per
release as the ``rope_type`` feature, only where the function reads the ``rope_type`` key.

A config.json of the newer layout names its scaling ``{"rope_type": "llama3", ...}`` with no
``type``; transformers before its own release that reads it refuses it ("`rope_scaling` must
be a dictionary with two fields, `type` and `factor`"), and an engine release whose
``get_rope`` reads only ``rope_scaling["type"]`` (vLLM 0.4.3) fails on it after that. So the
way out of the refusal on an engine release that cannot build the type is an engine release
that can (patcher/advice/transformers_rules.py).
"""

from __future__ import annotations

import ast
import zipfile

from patcher.advice.catalogue import ROPE_TYPE_KEY_ONLY as TYPE_ONLY
from tools.wheel_modules import modules

_ROOTS = {"vllm": "vllm/model_executor/layers/", "sglang": "sglang/srt/layers/"}


def _compared(function: ast.FunctionDef) -> set[str]:
    """The strings a name holding ``type`` in it is compared with, by ``==`` or ``in``."""
    found: set[str] = set()
    for node in ast.walk(function):
        if not isinstance(node, ast.Compare) or not isinstance(node.left, ast.Name):
            continue
        if "type" not in node.left.id:
            continue
        for op, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, ast.Eq) and isinstance(right, ast.Constant):
                if isinstance(right.value, str):
                    found.add(right.value)
            elif isinstance(op, ast.In) and isinstance(right, (ast.Set, ast.Tuple, ast.List)):
                found |= {
                    e.value
                    for e in right.elts
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                }
    return found


def rope_types(archive: zipfile.ZipFile, engine: str) -> dict[str, list[str]]:
    """The scaling types the release's ``get_rope`` builds from a ``rope_type`` key."""
    found: set[str] = set()
    for _name, _text, tree in modules(archive, _ROOTS[engine], ("def get_rope",)):
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef) or node.name != "get_rope":
                continue
            reads_key = any(
                isinstance(n, ast.Constant) and n.value == "rope_type" for n in ast.walk(node)
            )
            # a get_rope that reads only rope_scaling["type"] builds none from a rope_type
            # key: recorded as TYPE_ONLY, so that a release without a get_rope of its own
            # (SGLang 0.4.0 calls vLLM's) stays unknown rather than refusing every type
            found |= _compared(node) if reads_key else {TYPE_ONLY}
    return {"rope_type": sorted(found)}
