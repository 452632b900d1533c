"""The config class each of an engine release's model classes is written for, read with
``ast``: the annotation of its ``__init__``'s ``config`` parameter (``config: LlavaConfig``),
recorded per release as the ``model_config`` feature, ``<class>=<config class>``; and, from
transformers' wheels, the model type each config class declares (``model_type = "llava"``).

A checkpoint may name a model type no transformers release knows (``llava_mistral``, an early
LLaVA-NeXT export), for an architecture the engine has a class for, written for a config class
transformers does know (SGLang's ``LlavaMistralForCausalLM`` takes a ``LlavaConfig``): its
config.json's ``model_type`` set to that class's type loads it (``patcher set``, which
patcher/advice/judged.py names with ``doctor --checkpoint``).

    python -m tools.read_model_configs transformers WHEEL...   # config_types in the catalogue
"""

from __future__ import annotations

import ast
import json
import sys
import zipfile

from tools.catalogue_file import CATALOGUE, write_catalogue
from tools.read_own_configs import _class_types
from tools.wheel_modules import inherited, is_model_class

_MODELS = {"vllm": "vllm/model_executor/models/", "sglang": "sglang/srt/models/"}
# annotations that name no model's own config (a base class, or the engine's whole config)
_GENERIC = {"PretrainedConfig", "PreTrainedConfig", "VllmConfig", "Any"}


def _annotation(function: ast.FunctionDef) -> str | None:
    """The class name of the ``config`` parameter's annotation, where it names one."""
    for arg in function.args.args + function.args.kwonlyargs:
        if arg.arg != "config" or arg.annotation is None:
            continue
        node = arg.annotation
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value.split(".")[-1]
        elif isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.Name):
            name = node.id
        else:
            return None
        return None if name in _GENERIC else name
    return None


def model_configs(archive: zipfile.ZipFile, engine: str) -> dict[str, list[str]]:
    """Each model class of the release with the config class its ``__init__`` annotates, as
    ``<class>=<config class>`` (``model_config``); a class whose own ``__init__`` does not
    annotate one takes its base's, where the base is in the same release's model files."""

    def annotated(node: ast.ClassDef) -> str | None:
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
                return _annotation(stmt)
        return None

    found = inherited(archive, _MODELS[engine], annotated)
    # the classes an architecture names, not their layers
    return {"model_config": sorted(f"{k}={v}" for k, v in found.items() if is_model_class(k))}


def main(argv: list[str] | None = None) -> int:
    """Record the model type of each config class of the transformers wheels given."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2 or args[0] != "transformers":
        print(__doc__)
        return 2
    target = CATALOGUE / "errors-transformers.json"
    catalogue = json.loads(target.read_text())
    types: dict[str, str] = dict(catalogue.get("config_types", {}))
    for wheel in args[1:]:
        with zipfile.ZipFile(wheel) as archive:
            types.update(_class_types(archive, "transformers/models/"))
    catalogue["config_types"] = dict(sorted(types.items()))
    write_catalogue(target, catalogue)
    print(f"{target}: {len(types)} config classes with their model type")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
