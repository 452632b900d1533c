"""Which of a vLLM release's model classes have LoRA, pipeline parallelism and a BitsAndBytes
weight mapping, read from the wheel's ``vllm/model_executor/models/*.py`` with ``ast``.

The engines refuse those features by the class's name ("Model GemmaForCausalLM does not support
LoRA", "Model Qwen2ForCausalLM does not support BitsAndBytes quantization yet"), so doctor can
name the first release read whose class has the feature. What marks a class, per release:

- LoRA: the ``SupportsLoRA`` interface among its bases (0.5 on), or a ``supported_lora_modules``
  attribute (0.4, whose loader checks ``hasattr(model_class, "supported_lora_modules")``);
- pipeline parallelism: the ``SupportsPP`` interface (0.6 on);
- BitsAndBytes: the mapping attribute the release's BitsAndBytes loader looks for, read from
  the loader itself (``bitsandbytes_stacked_params_mapping`` to 0.6, ``packed_modules_mapping``
  from 0.7);
- a vision encoder run data-parallel (``--mm-encoder-tp-mode data``): ``supports_encoder_tp_data
  = True`` (0.11 on; ``ModelConfig`` falls back to splitting it by the tensor-parallel size for
  a class without it).

- a checkpoint's ``lm_head.weight`` passed over (``skips_lm_head``): per model file, not per
  class, since the traceback names the file: its ``load_weights`` names ``lm_head`` in a
  string (the tied models' loaders skip the saved copy; one without it raises ``KeyError:
  'lm_head.weight'``).

A class has a feature when it or a base class it names (transitively, across the model files)
carries the mark. With them, for vLLM and SGLang: the server settings a release declares
(:func:`settings`), each flag's closed set of values (:func:`choices`) and the parser names its
``--tool-call-parser`` and ``--reasoning-parser`` take (:func:`parsers`).
``tools/read_errors.py`` records the result with the release's errors.
"""

from __future__ import annotations

import ast
import fnmatch
import re
import shutil
import struct
import tempfile
import zipfile
from collections import Counter
from collections.abc import Iterable
from typing import IO

# 0.34 keeps some model packages in vllm/models/ (fnmatch's * crosses folders)
MODELS = ("vllm/model_executor/models/*.py", "vllm/models/*.py")
LOADERS = "vllm/model_executor/model_loader/*.py"
FEATURES = ("lora", "pp", "bnb", "encoder_tp_data", "skips_lm_head")


def _names(nodes: Iterable[ast.expr]) -> set[str]:
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.Subscript):  # Generic[T] and the like
            found |= _names([node.value])
    return found


def _classes(sources: Iterable[str]) -> dict[str, tuple[set[str], set[str]]]:
    """Each class: the names of its bases and of the attributes its body assigns."""
    classes: dict[str, tuple[set[str], set[str]]] = {}
    for text in sources:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            attributes: set[str] = set()
            for item in node.body:
                if isinstance(item, ast.Assign):
                    attributes |= _names(item.targets)
                elif isinstance(item, ast.AnnAssign):
                    attributes |= _names([item.target])
                value = item.value if isinstance(item, ast.Assign | ast.AnnAssign) else None
                if isinstance(value, ast.Constant) and value.value is True:
                    # a flag set true (``supports_encoder_tp_data = True``), as a mark of its own
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    attributes |= {f"{name}=True" for name in _names(targets)}
            bases, own = classes.get(node.name, (set(), set()))
            classes[node.name] = (bases | _names(node.bases), own | attributes)
    return classes


def _marked(classes: dict[str, tuple[set[str], set[str]]], marks: set[str]) -> list[str]:
    """The classes that carry one of ``marks`` (a base or an attribute), or inherit one."""
    memo: dict[str, bool] = {}

    def has(name: str, seen: frozenset[str]) -> bool:
        if name in memo:
            return memo[name]
        if name not in classes or name in seen:
            return False
        bases, attributes = classes[name]
        found = bool((bases | attributes) & marks) or any(
            has(base, seen | {name}) for base in bases
        )
        memo[name] = found
        return found

    return sorted(name for name in classes if has(name, frozenset()) and name not in marks)


def _skipping_lm_head(files: Iterable[tuple[str, str]]) -> list[str]:
    """The model files (``gemma`` of models/gemma.py) whose ``load_weights`` names the output
    projection ``lm_head`` in a string: the weight loaders that pass over a checkpoint's
    ``lm_head.weight`` where the model ties it to the embeddings (``"lm_head.weight" in name``
    then ``continue``; ``skip_prefixes=["lm_head."]`` from 0.8). A loader without it looks the
    tensor up among its parameters and raises ``KeyError: 'lm_head.weight'``."""
    found: set[str] = set()
    for path, text in files:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "load_weights":
                if any(
                    isinstance(c, ast.Constant)
                    and isinstance(c.value, str)
                    and "lm_head" in c.value
                    for c in ast.walk(node)
                ):
                    found.add(path.rsplit("/", 1)[-1].removesuffix(".py"))
                    break
    return sorted(found)


def _bnb_mark(loaders: Iterable[str]) -> str | None:
    """The mapping attribute the release's BitsAndBytes loader requires of a model class; None
    for a release without that loader (before 0.5)."""
    texts = [t for t in loaders if "does not support BitsAndBytes" in t]
    if not texts:
        return None
    if any("bitsandbytes_stacked_params_mapping" in t for t in texts):
        return "bitsandbytes_stacked_params_mapping"
    return "packed_modules_mapping"


def features(archive: zipfile.ZipFile) -> dict[str, list[str]]:
    """Per feature, the model classes of the release in ``archive`` that have it."""
    names = archive.namelist()
    models = [
        archive.read(n).decode("utf-8", "replace")
        for n in names
        if any(fnmatch.fnmatch(n, p) for p in MODELS)
    ]
    loaders = [
        archive.read(n).decode("utf-8", "replace") for n in names if fnmatch.fnmatch(n, LOADERS)
    ]
    if not models:
        raise RuntimeError("no model file under vllm/model_executor/models/")
    classes = _classes(models)
    return {
        "skips_lm_head": _skipping_lm_head(
            (n, archive.read(n).decode("utf-8", "replace"))
            for n in names
            if any(fnmatch.fnmatch(n, p) for p in MODELS)
        ),
        "lora": _marked(classes, {"SupportsLoRA", "supported_lora_modules"}),
        "pp": _marked(classes, {"SupportsPP"}),
        "bnb": _marked(classes, {mark}) if (mark := _bnb_mark(loaders)) else [],
        # ``--mm-encoder-tp-mode data`` (0.11 on): the vision encoder replicated, not split by
        # the tensor-parallel size; a class without the flag falls back to splitting it
        "encoder_tp_data": _marked(classes, {"supports_encoder_tp_data=True"}),
        "arch_suffix_converted": converted_suffixes(archive),
    }


# vLLM's table of architecture suffixes and the runner and conversion each implies
# (``_SUFFIX_TO_DEFAULTS``: config/model.py, config/__init__.py in 0.10, config.py before).
_SUFFIX_TABLES = ("vllm/config/model.py", "vllm/config/__init__.py", "vllm/config.py")


def converted_suffixes(archive: zipfile.ZipFile) -> list[str]:
    """The architecture suffixes (``ForSequenceClassification``) whose classes the release
    makes from the same model's generative class when its registry lacks them: the suffixes of
    ``_SUFFIX_TO_DEFAULTS`` where the registry resolves an architecture through that table
    (``iter_architecture_defaults`` in models/registry.py, 0.10 on). A release without it
    names only the classes its registry lists."""
    names = set(archive.namelist())
    registry = "vllm/model_executor/models/registry.py"
    if registry not in names:
        return []
    if "iter_architecture_defaults" not in archive.read(registry).decode("utf-8", "replace"):
        return []
    for path in _SUFFIX_TABLES:
        if path not in names:
            continue
        tree = ast.parse(archive.read(path).decode("utf-8", "replace"))
        for node in ast.walk(tree):
            target = (
                node.target
                if isinstance(node, ast.AnnAssign)
                else node.targets[0]
                if isinstance(node, ast.Assign) and len(node.targets) == 1
                else None
            )
            if not (isinstance(target, ast.Name) and target.id == "_SUFFIX_TO_DEFAULTS"):
                continue
            value = node.value
            if isinstance(value, ast.List):
                return sorted(
                    item.elts[0].value
                    for item in value.elts
                    if isinstance(item, ast.Tuple)
                    and isinstance(item.elts[0], ast.Constant)
                    and isinstance(item.elts[0].value, str)
                )
    return []


# The dataclass of every server setting; each field is a flag, ``--`` and the name with dashes
# (vLLM's EngineArgs.add_cli_args, SGLang's arg_utils: "--" + name.replace("_", "-")).
SETTINGS = {
    "vllm": ("vllm/engine/arg_utils.py", "EngineArgs"),
    "sglang": ("sglang/srt/server_args.py", "ServerArgs"),
}


def settings(archive: zipfile.ZipFile, engine: str) -> list[str]:
    """The server settings (the fields of vLLM's ``EngineArgs``, SGLang's ``ServerArgs``) the
    release in ``archive`` declares: each is a command-line flag."""
    path, name = SETTINGS[engine]
    names = archive.namelist()
    found: set[str] = set()
    # SGLang 0.5.2x declares the fields in namespaces, one class per file, that ServerArgs is
    # assembled from (arg_groups/fields/*.py)
    sources = [path] if path in names else []
    sources += [n for n in names if fnmatch.fnmatch(n, "sglang/srt/arg_groups/fields/*.py")]
    for source in sources:
        tree = ast.parse(archive.read(source).decode("utf-8", "replace"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and (node.name == name or source != path):
                found |= {
                    item.target.id
                    for item in node.body
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                }
    return sorted(found)


# Where a release's command-line parser is built: the engine's arguments and the server's own
# (vLLM's entrypoints: make_arg_parser in cli_args.py, the serve subcommand; SGLang's
# server_args.py and its arg_groups), each flag a literal ``add_argument("--x", ...)`` or a
# dataclass field made into one (EngineArgs, ServerArgs, vLLM 0.10's FrontendArgs).
_PARSER_FILES = {
    # not the other subcommands' parsers (cli/openai.py's chat client, preload, snapshot)
    "vllm": (
        "vllm/engine/arg_utils.py",
        "vllm/entrypoints/*cli_args.py",
        "vllm/entrypoints/cli/serve.py",
        "vllm/entrypoints/openai/api_server.py",
    ),
    "sglang": ("sglang/srt/server_args.py", "sglang/srt/arg_groups/*.py"),
}


def cli_flags(archive: zipfile.ZipFile, engine: str) -> dict[str, list[str]]:
    """The flags the release's command-line parser defines, keyed ``flags``: what argparse
    takes, so that a flag it refuses ("unrecognized arguments") can be looked up in the
    releases that define it."""
    found = {"--" + name.replace("_", "-") for name in settings(archive, engine)}
    patterns = _PARSER_FILES[engine]
    for source in archive.namelist():
        if not any(fnmatch.fnmatch(source, p) for p in patterns) or not source.endswith(".py"):
            continue
        tree = ast.parse(archive.read(source).decode("utf-8", "replace"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr == "add_argument" and node.args:
                    found |= {s for a in node.args for s in _strings(a) if s.startswith("--")}
            elif isinstance(node, ast.ClassDef) and node.name.endswith("FrontendArgs"):
                found |= {
                    "--" + item.target.id.replace("_", "-")
                    for item in node.body
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                }
    return {"flags": sorted(found)}


# The registries of the parsers a flag names by value: vLLM's tool_parsers/ and reasoning/
# (``@ToolParserManager.register_module("name")`` to 0.1x, then the lazy
# ``_TOOL_PARSERS_TO_REGISTER = {"name": (file, class)}``), SGLang's ``ToolCallParserEnum`` and
# ``DetectorMap`` (function_call_parser.py, reasoning_parser.py).
PARSER_FLAGS = {"tool": "--tool-call-parser", "reasoning": "--reasoning-parser"}
_SGLANG_MAPS = {"ToolCallParserEnum": "tool", "DetectorMap": "reasoning"}


def _strings(node: ast.expr | None) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [s for item in node.elts for s in _strings(item)]
    return []


def _keys(node: ast.expr | None) -> list[str]:
    return [s for key in node.keys for s in _strings(key)] if isinstance(node, ast.Dict) else []


def parsers(archive: zipfile.ZipFile, engine: str) -> dict[str, list[str]]:
    """The names a release's ``--tool-call-parser`` and ``--reasoning-parser`` accept, keyed
    ``choices:<flag>``: the parsers its registries hold."""
    found: dict[str, set[str]] = {kind: set() for kind in PARSER_FLAGS}
    package = f"{engine}/"
    for source in archive.namelist():
        if not source.startswith(package) or not source.endswith(".py"):
            continue
        kind = (
            "reasoning"
            if "reason" in source
            else "tool"
            if "tool" in source or ("function_call" in source)
            else None
        )
        if kind is None:
            continue
        text = archive.read(source).decode("utf-8", "replace")
        if "register" not in text and not any(name in text for name in _SGLANG_MAPS):
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in ("register_module", "register_lazy_module"):
                    named = [k.value for k in node.keywords if k.arg == "name"]
                    found[kind].update(_strings(node.args[0]) if node.args else [])
                    found[kind].update(s for n in named for s in _strings(n))
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    name = target.id if isinstance(target, ast.Name) else ""
                    if name.endswith("_PARSERS_TO_REGISTER") or name in _SGLANG_MAPS:
                        where = _SGLANG_MAPS.get(name, kind)
                        found[where].update(_keys(node.value))
    return {f"choices:{PARSER_FLAGS[kind]}": sorted(names) for kind, names in found.items()}


def _string_set(node: ast.expr | None) -> list[str]:
    """The strings a definition holds: ``Literal["a", "b"]``, a list, tuple or set of
    strings, or a dict's string keys."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        if node.value.id == "Literal":
            inner = node.slice
            items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            return [s for item in items for s in _strings(item)]
        return []
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [s for item in node.elts for s in _strings(item)]
    return _keys(node)


_TYPING = {
    "Optional",
    "Literal",
    "Union",
    "Any",
    "Callable",
    "Dict",
    "List",
    "Tuple",
    "Type",
    "Set",
}


def _referenced(node: ast.expr | None) -> list[str]:
    """The names of definitions ``node`` refers to (``QUANTIZATION_CHOICES``,
    ``QuantizationMethods``): capitalised, and not typing's own."""
    names = [n.id for n in ast.walk(node) if isinstance(n, ast.Name)] if node else []
    return [n for n in names if n[:1].isupper() and n not in _TYPING and len(n) > 3]


def choices(archive: zipfile.ZipFile, engine: str) -> dict[str, list[str]]:
    """The values each flag with a closed set of them takes, keyed ``choices:<flag>``: the
    ``choices=`` of an ``add_argument`` call (a list, or a name defined as one), and for vLLM
    0.8 on the ``Literal`` type of the ``EngineArgs`` field the flag is made from."""
    path, cls = SETTINGS[engine]
    sources = [n for n in archive.namelist() if n.startswith(f"{engine}/") and n.endswith(".py")]
    wanted: dict[str, set[str]] = {}  # a name defined elsewhere -> the flags it gives choices
    found: dict[str, set[str]] = {}
    args = [path] + [n for n in sources if fnmatch.fnmatch(n, "sglang/srt/arg_groups/*.py")]
    args += [n for n in sources if fnmatch.fnmatch(n, "sglang/srt/arg_groups/fields/*.py")]
    for source in [a for a in args if a in sources]:
        tree = ast.parse(archive.read(source).decode("utf-8", "replace"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr != "add_argument" or not node.args:
                    continue
                flag = next((s for s in _strings(node.args[0]) if s.startswith("--")), None)
                given = next((k.value for k in node.keywords if k.arg == "choices"), None)
                if flag is None or given is None:
                    continue
                found.setdefault(flag, set()).update(_string_set(given))
                for name in _referenced(given):
                    wanted.setdefault(name, set()).add(flag)
            elif isinstance(node, ast.ClassDef) and (node.name == cls or source != path):
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        flag = "--" + item.target.id.replace("_", "-")
                        found.setdefault(flag, set()).update(_string_set(item.annotation))
                        for name in _referenced(item.annotation):
                            wanted.setdefault(name, set()).add(flag)
    # A name may be defined by another ("QUANTIZATION_METHODS = list(get_args(
    # QuantizationMethods))", vLLM 0.8): its references are followed, a few steps deep.
    followed: set[str] = set()
    for _ in range(3):
        pending = {n: flags for n, flags in wanted.items() if n not in followed}
        if not pending:
            break
        followed |= set(pending)
        for source in sources:
            text = archive.read(source).decode("utf-8-sig", "replace")
            names = [n for n in pending if f"{n} =" in text or f"{n}:" in text]
            if names:
                _define(text, {n: pending[n] for n in names}, found, wanted)
    return {f"choices:{flag}": sorted(values) for flag, values in found.items() if values}


def _define(
    text: str,
    names: dict[str, set[str]],
    found: dict[str, set[str]],
    wanted: dict[str, set[str]],
) -> None:
    """The values the module ``text`` defines ``names`` as, added to the flags each gives
    choices; a definition that refers to other names makes those wanted too."""
    try:
        body = ast.parse(text).body
    except SyntaxError:  # a file of another Python's syntax: not where a choice is defined
        return
    for node in body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        for target in targets:
            if isinstance(target, ast.Name) and target.id in names:
                for flag in names[target.id]:
                    found.setdefault(flag, set()).update(_string_set(value))
                if isinstance(value, ast.Call):
                    for name in _referenced(value):
                        wanted.setdefault(name, set()).update(names[target.id])


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


GGUF = "transformers/integrations/ggml.py"


def gguf_architectures(archive: zipfile.ZipFile) -> dict[str, list[str]]:
    """The GGUF architectures a transformers release's GGUF loader maps, keyed ``gguf``: the
    keys of ``GGUF_CONFIG_MAPPING`` (``GGUF_TO_TRANSFORMERS_MAPPING["config"]`` before it),
    less its ``general`` and ``tokenizer`` sections. ``load_gguf_checkpoint`` refuses any
    other ("Architecture gemma2 not supported", later "GGUF model with architecture X is not
    supported yet"), which is what vLLM raises for a .gguf model of that architecture."""
    if GGUF not in archive.namelist():
        return {"gguf": []}
    found: list[str] = []
    for node in ast.parse(archive.read(GGUF).decode("utf-8", "replace")).body:
        if not isinstance(node, ast.Assign) or not isinstance(node.targets[0], ast.Name):
            continue
        value = node.value
        if node.targets[0].id == "GGUF_TO_TRANSFORMERS_MAPPING" and isinstance(value, ast.Dict):
            config = [
                v
                for k, v in zip(value.keys, value.values, strict=True)
                if _strings(k) == ["config"]
            ]
            found = found or (_keys(config[0]) if config else [])
        elif node.targets[0].id == "GGUF_CONFIG_MAPPING":
            found = _keys(value)
    return {"gguf": sorted(set(found) - {"general", "tokenizer"})}


ENVS = {"vllm": "vllm/envs.py", "sglang": "sglang/srt/environ.py"}


def env_names(archive: zipfile.ZipFile, engine: str) -> dict[str, list[str]]:
    """The environment variables a release reads by name, keyed ``env``: the keys of vLLM's
    ``envs.environment_variables``, the ``SGLANG_*`` fields of SGLang's ``Envs``
    (environ.py). An answer may name a variable only where the release reads it (vLLM's
    ``VLLM_USE_DEEP_GEMM`` turns DeepGEMM's kernels and warm-up off)."""
    path = ENVS[engine]
    if path not in archive.namelist():
        return {"env": []}
    prefix = f"{engine.upper()}_"
    found: set[str] = set()
    for node in ast.walk(ast.parse(archive.read(path).decode("utf-8", "replace"))):
        if isinstance(node, ast.Dict):
            found.update(k for k in _keys(node) if k.startswith(prefix))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update(
                t.id for t in targets if isinstance(t, ast.Name) and t.id.startswith(prefix)
            )
    return {"env": sorted(found)}


# Where vLLM's releases define the attention backends' names: selector.py (0.4 to 0.5),
# platforms/interface.py's _Backend (0.6 to 0.10), the registry's AttentionBackendEnum (0.11 on).
BACKEND_ENUMS = (
    "vllm/attention/selector.py",
    "vllm/platforms/interface.py",
    "vllm/attention/backends/registry.py",
    "vllm/v1/attention/backends/registry.py",
)


def attention_backends(archive: zipfile.ZipFile) -> dict[str, list[str]]:
    """The attention backends a vLLM release can be told to use, keyed ``attention_backend``:
    the members of its ``_Backend`` or ``AttentionBackendEnum``, the names
    ``VLLM_ATTENTION_BACKEND`` and ``--attention-backend`` take. A backend's own refusal
    ("Sinks are only supported in FlashAttention 3", raised in flash_attn.py) is answered
    with the release's other backends."""
    names = set(archive.namelist())
    found: set[str] = set()
    for path in (p for p in BACKEND_ENUMS if p in names):
        for node in ast.walk(ast.parse(archive.read(path).decode("utf-8", "replace"))):
            if isinstance(node, ast.ClassDef) and node.name in ("_Backend", "AttentionBackendEnum"):
                found.update(
                    t.id
                    for item in node.body
                    if isinstance(item, ast.Assign)
                    for t in item.targets
                    if isinstance(t, ast.Name) and t.id.isupper()
                )
    return {"attention_backend": sorted(found)}


# The engine's own kernels: vLLM's _C extension (``_C.abi3.so``, ``_C.cpython-3X-...so``
# before 0.5, ``_C_stable_libtorch.abi3.so`` from 0.2x).
KERNELS = re.compile(r"vllm/_C(?:_stable_libtorch)?\.(?:abi3|cpython-\d+-x86_64-linux-gnu)\.so")
_FATBIN = 0xBA55ED50  # a CUDA fat binary's magic (the .nv_fatbin section holds them)


def _section_headers(so: IO[bytes]) -> tuple[list[tuple[int, ...]], int] | None:
    """A 64-bit ELF file's section headers (name, type, flags, address, offset, size, link,
    info, alignment, entry size) and the index of the one holding the section names; None
    for any other file."""
    so.seek(0)
    ident = so.read(64)
    if ident[:4] != b"\x7fELF" or ident[4] != 2:
        return None
    (table,) = struct.unpack_from("<Q", ident, 0x28)
    entry, count, names_at = struct.unpack_from("<HHH", ident, 0x3A)
    so.seek(table)
    raw = so.read(entry * count)
    return [struct.unpack_from("<IIQQQQIIQQ", raw, i * entry) for i in range(count)], names_at


def _fatbin_archs(so: IO[bytes]) -> Counter[int]:
    """The SM version of each compiled kernel image (ELF, not PTX) in an ELF shared object's
    ``.nv_fatbin`` section, counted: a fat binary is a header (magic, version, header size,
    size) and entries (kind, version, header size, padded size, ..., the SM version at 28)."""
    read = _section_headers(so)
    if read is None:
        return Counter()
    headers, names_at = read
    so.seek(headers[names_at][4])
    names = so.read(headers[names_at][5])
    found: Counter[int] = Counter()
    for header in headers:
        name = names[header[0] : names.index(b"\0", header[0])]
        if name != b".nv_fatbin":
            continue
        so.seek(header[4])
        data = so.read(header[5])
        at = 0
        while at + 16 <= len(data):
            magic, _version, size_of_header, size = struct.unpack_from("<IHHQ", data, at)
            if magic != _FATBIN:
                at += 8  # fat binaries are 8-byte aligned
                continue
            item, end = at + size_of_header, at + size_of_header + size
            while item < end:
                kind, _v, item_header, padded = struct.unpack_from("<HHIQ", data, item)
                (sm,) = struct.unpack_from("<I", data, item + 28)
                if kind == 2:  # 1 is PTX, compiled by the driver where no image fits
                    found[sm] += 1
                item += item_header + padded
            at = end
    return found


def cuda_archs(archive: zipfile.ZipFile) -> dict[str, list[str]]:
    """The GPU architectures a vLLM release's own kernels are compiled for, keyed ``cuda_arch``
    (``"80"`` is SM 8.0): the SM versions of the kernel images in its ``_C`` extension that
    hold at least a tenth as many kernels as the best-served one (a single stray kernel of
    another SM is not a build for it). A kernel image for SM X.Y runs on X.Y and later minors
    of X; a GPU with none gets "no kernel image is available for execution on the device"
    (0.4 to 0.8 are built for 7.0 to 9.0; 0.9 adds 10.0 and 12.0; 0.2x drop 7.0)."""
    path = next((n for n in archive.namelist() if KERNELS.fullmatch(n)), None)
    if path is None:
        return {"cuda_arch": []}
    with archive.open(path) as source, tempfile.TemporaryFile() as so:
        shutil.copyfileobj(source, so, 1 << 20)
        counted = _fatbin_archs(so)
    most = max(counted.values(), default=0)
    return {"cuda_arch": [str(sm) for sm in sorted(counted) if counted[sm] * 10 >= most]}


def _glibc_needs(so: IO[bytes]) -> set[tuple[int, ...]]:
    """The glibc symbol versions (``GLIBC_2.32`` as ``(2, 32)``) an ELF shared object needs:
    the ``Vernaux`` names of its ``.gnu.version_r`` section (``SHT_GNU_verneed``), read from
    the section headers without loading the whole file."""
    read = _section_headers(so)
    if read is None:
        return set()
    headers, _names_at = read
    found: set[tuple[int, ...]] = set()
    for header in headers:
        if header[1] != 0x6FFFFFFE:  # SHT_GNU_verneed
            continue
        so.seek(headers[header[6]][4])  # sh_link: its string table
        strings = so.read(headers[header[6]][5])
        so.seek(header[4])
        data = so.read(header[5])
        at = 0
        for _ in range(header[9] or 1 << 16):  # sh_info: how many Verneed entries
            _version, aux_count, _file, aux, following = struct.unpack_from("<HHIII", data, at)
            item = at + aux
            for _ in range(aux_count):
                _hash, _flags, _other, name, next_aux = struct.unpack_from("<IHHII", data, item)
                word = strings[name : strings.index(b"\0", name)].decode("ascii", "replace")
                if word.startswith("GLIBC_") and word[6:].replace(".", "").isdigit():
                    found.add(tuple(int(p) for p in word[6:].split(".")))
                item += next_aux
            if not following:
                break
            at += following
    return found


def glibc(archive: zipfile.ZipFile, package: str = "vllm") -> dict[str, list[str]]:
    """The newest glibc the release's compiled extensions need (every ``.so`` of the package,
    ``GLIBC_X.Y`` among the symbol versions each needs), keyed ``glibc``: a machine whose glibc
    is older fails to import them with "version `GLIBC_X.Y' not found (required by
    .../vllm/_C.abi3.so)". The wheel's platform tag does not tell it (vLLM 0.5.2's manylinux1
    wheel needed 2.32)."""
    newest: tuple[int, ...] = ()
    for path in archive.namelist():
        if not (path.startswith(f"{package}/") and path.endswith(".so")):
            continue
        with archive.open(path) as source, tempfile.TemporaryFile() as so:
            shutil.copyfileobj(source, so, 1 << 20)
            newest = max([newest, *_glibc_needs(so)])
    return {"glibc": [".".join(map(str, newest))] if newest else []}


def torch_pin(archive: zipfile.ZipFile) -> dict[str, list[str]]:
    """The torch a release's compiled kernels are built against, keyed ``torch_pin``: its
    wheel's ``Requires-Dist: torch==X`` (METADATA). An extension built against another torch
    fails to import with "undefined symbol: _ZN3c10..." (a C++ symbol of torch's), and that
    pin is the torch it needs."""
    metadata = next((n for n in archive.namelist() if n.endswith(".dist-info/METADATA")), None)
    if metadata is None:
        return {"torch_pin": []}
    text = archive.read(metadata).decode("utf-8", "replace")
    pinned = re.search(r"^Requires-Dist: torch\s*==\s*([\w.+]+)", text, re.MULTILINE)
    return {"torch_pin": [pinned.group(1)] if pinned else []}


def requirements(archive: zipfile.ZipFile) -> dict[str, list[str]]:
    """The packages a release requires, each with its version specifier as the wheel states it
    (``Requires-Dist: flashinfer_python==0.2.3; extra == "srt"``: ``flashinfer_python==0.2.3``),
    keyed ``requires``: the version of a library an engine release was written against, which
    a name it imports from that library and cannot find says is another; and the Pythons it
    installs on (``Requires-Python``), keyed ``requires_python``."""
    metadata = next((n for n in archive.namelist() if n.endswith(".dist-info/METADATA")), None)
    if metadata is None:
        return {"requires": [], "requires_python": []}
    text = archive.read(metadata).decode("utf-8", "replace")
    # the Pythons the release installs on (``Requires-Python: <3.13,>=3.9``)
    python = re.search(r"^Requires-Python: (.+)$", text, re.MULTILINE)
    found = set()
    for line in re.findall(r"^Requires-Dist: (.+)$", text, re.MULTILINE):
        requirement = line.split(";")[0].strip()
        named = re.match(r"([A-Za-z0-9][\w.-]*)(?:\[[^\]]*\])?\s*\(?([^)]*)\)?", requirement)
        if named is not None and named.group(2).strip():
            found.add(named.group(1) + named.group(2).replace(" ", ""))
    return {
        "requires": sorted(found),
        "requires_python": [python.group(1).replace(" ", "")] if python else [],
    }


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


GGUF_LOADERS = (
    "vllm/model_executor/model_loader/gguf_loader.py",
    "vllm/model_executor/model_loader/loader.py",
)


def gguf_model_types(archive: zipfile.ZipFile) -> dict[str, list[str]]:
    """The model types vLLM's GGUF loader maps by name to a GGUF architecture, keyed
    ``gguf_model_type``: the strings its ``_get_gguf_weights_map`` compares ``model_type``
    with (``if model_type in ("qwen2_moe", "qwen3_moe")``, 0.10.1 on). A model type it does not
    map, and whose name is no GGUF architecture's, is refused ("Unknown gguf model_type")."""
    names = set(archive.namelist())
    found: set[str] = set()
    for path in GGUF_LOADERS:
        if path not in names:
            continue
        for node in ast.walk(ast.parse(archive.read(path))):
            if not (
                isinstance(node, ast.Compare)
                and isinstance(node.left, ast.Name)
                and node.left.id == "model_type"
            ):
                continue
            for side in node.comparators:
                values = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
                found |= {
                    v.value
                    for v in values
                    if isinstance(v, ast.Constant) and isinstance(v.value, str)
                }
    return {"gguf_model_type": sorted(found)}
