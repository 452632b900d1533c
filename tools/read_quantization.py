"""What a release's quantization code asks, read from the wheel with ``ast``: the compute
capability each ``--quantization`` method and each compressed-tensors scheme asks of the GPU,
the method each config class is, and the Marlin paths whose weight shards the release pads to
the kernel's tiles. ``tools/read_errors.py`` records them with the release's errors."""

from __future__ import annotations

import ast
import zipfile
from collections.abc import Iterable


def _returned(function: ast.FunctionDef) -> object:
    """The constant ``function`` returns, when its only return is one; else None."""
    returns = [n.value for n in ast.walk(function) if isinstance(n, ast.Return) and n.value]
    only = returns[0] if len(returns) == 1 else None
    return only.value if isinstance(only, ast.Constant) else None


def _quantization_classes(
    archive: zipfile.ZipFile, engine: str
) -> Iterable[tuple[str, str, dict[str, ast.FunctionDef]]]:
    """Each quantization config class in ``<engine>/**/quantization/`` whose ``get_name``
    returns a constant: its class name, that method name, and its methods."""
    for source in archive.namelist():
        if not (source.startswith(f"{engine}/") and "/quantization/" in source):
            continue
        if not source.endswith(".py"):
            continue
        text = archive.read(source).decode("utf-8", "replace")
        if "get_name" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.ClassDef):
                continue
            methods = {f.name: f for f in node.body if isinstance(f, ast.FunctionDef)}
            name = _returned(methods["get_name"]) if "get_name" in methods else None
            if isinstance(name, str):
                yield node.name, name, methods


def min_capabilities(archive: zipfile.ZipFile, engine: str) -> dict[str, list[str]]:
    """The compute capability each quantization method asks of the GPU, keyed
    ``min_capability:<method>`` (x10: 89 is 8.9): the constant ``get_min_capability`` of the
    config class whose ``get_name`` returns the method, in ``<engine>/**/quantization/``.
    ``_get_quantization_config`` (vLLM's ``config/``, SGLang's ``model_loader/loader.py``)
    refuses a GPU below it ("The quantization method fp8 is not supported for the current
    GPU. Minimum capability: 90"), and releases lowered it (vLLM's fp8: 89 in 0.4, 80 with the
    Marlin fallback in 0.5, 75 later), so a GPU refused by one release may run the method in
    another. A method whose capability is computed is left out (not known)."""
    found: dict[str, list[str]] = {}
    for _cls, name, methods in _quantization_classes(archive, engine):
        if "get_min_capability" in methods:
            capability = _returned(methods["get_min_capability"])
            if isinstance(capability, int):
                found[f"min_capability:{name}"] = [str(capability)]
    return found


def scheme_capabilities(archive: zipfile.ZipFile, engine: str) -> dict[str, list[str]]:
    """The compute capability each compressed-tensors scheme asks of the GPU, keyed
    ``scheme_capability:<Scheme>`` (x10): the constant ``get_min_capability`` of each class in
    ``<engine>/**/compressed_tensors/schemes/``. ``CompressedTensorsConfig`` refuses a GPU
    below it with a message that names the numbers and not the scheme ("Quantization scheme
    is not supported for the current GPU. Min capability: 80. Current capability: 75."), and
    releases lowered some (vLLM's WNA16: 80 to 0.11, 75 from 0.12). A scheme whose capability
    is computed, or returned on more than one path, is left out (not known)."""
    found: dict[str, list[str]] = {}
    for source in archive.namelist():
        if "/compressed_tensors/schemes/" not in source or not source.endswith(".py"):
            continue
        if not source.startswith(f"{engine}/"):
            continue
        text = archive.read(source).decode("utf-8", "replace")
        if "get_min_capability" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                for method in node.body:
                    if isinstance(method, ast.FunctionDef) and method.name == "get_min_capability":
                        capability = _returned(method)
                        if isinstance(capability, int) and not isinstance(capability, bool):
                            found[f"scheme_capability:{node.name}"] = [str(capability)]
    return found


def quantization_classes(archive: zipfile.ZipFile, engine: str) -> dict[str, list[str]]:
    """The method (``--quantization``) each quantization config class is, keyed
    ``quant_class:<Class>``: a message that names a class ("For FP4 quantization, use
    ModelOptFp4Config", SGLang's modelopt_quant.py) is that method's flag."""
    return {
        f"quant_class:{cls}": [name] for cls, name, _m in _quantization_classes(archive, engine)
    }


def required_keys(archive: zipfile.ZipFile, engine: str) -> dict[str, list[str]]:
    """The quantization_config keys each method's ``from_config`` requires, keyed
    ``quant_requires:<method>``: the key lists of its ``get_from_keys(config, [...])`` calls,
    each list's keys joined by ``,`` (any one of them will do; ``get_from_keys_or``, with a
    default, requires nothing). A list the base class's ``get_from_keys`` finds none of is
    refused in its words ("Cannot find any of ['adapter_name_or_path'] in the model's
    quantization config."), and a method's requirements change between releases (vLLM's
    bitsandbytes asked for a QLoRA adapter until it read pre-quantized checkpoints)."""
    found: dict[str, list[str]] = {}
    for _cls, name, methods in _quantization_classes(archive, engine):
        if "from_config" not in methods:
            continue
        lists = []
        for node in ast.walk(methods["from_config"]):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get_from_keys"
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.List)
            ):
                continue
            keys = [e.value for e in node.args[1].elts if isinstance(e, ast.Constant)]
            if keys and all(isinstance(k, str) for k in keys):
                lists.append(",".join(keys))
        if lists:
            found[f"quant_requires:{name}"] = sorted(set(lists))
    return found


# Where vLLM pads a weight shard up to the Marlin kernel's tiles (the kernel refuses a shard
# that is not a multiple: "size_n = 2736 is not divisible by tile_n_size = 64"): the padding
# helper the release defines, and whether any other module calls it.
MARLIN_UTILS = "vllm/model_executor/layers/quantization/utils/marlin_utils.py"
MARLIN_PADS = {"dense": "marlin_padded_nk", "moe": "marlin_moe_padded_intermediate"}


def marlin_pads(archive: zipfile.ZipFile) -> dict[str, list[str]]:
    """The Marlin paths (``dense`` linear layers, ``moe`` experts) whose weight shards the
    release pads to the kernel's tiles: the helper defined in ``marlin_utils.py`` and called
    from another module of the release, keyed ``marlin_pads``."""
    names = set(archive.namelist())
    if MARLIN_UTILS not in names:
        return {"marlin_pads": []}
    utils = archive.read(MARLIN_UTILS).decode("utf-8", "replace")
    callers = [
        archive.read(n).decode("utf-8", "replace")
        for n in names
        if n.startswith("vllm/") and n.endswith(".py") and n != MARLIN_UTILS
    ]
    return {
        "marlin_pads": sorted(
            path
            for path, helper in MARLIN_PADS.items()
            if f"def {helper}(" in utils and any(helper in text for text in callers)
        )
    }
