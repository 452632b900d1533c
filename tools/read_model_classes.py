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
import zipfile
from collections.abc import Iterable

from tools.wheel_modules import inherited, is_model_class

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


def sglang_pipeline(archive: zipfile.ZipFile) -> dict[str, list[str]]:
    """SGLang's model classes with pipeline parallelism, as its own check reads it
    (``model_runner.py``: ``"pp_proxy_tensors" in inspect.signature(self.model.forward)
    .parameters``, asserted "Pipeline Parallel is not compatible with this model." when
    ``pp_size > 1``): the class's ``forward``, its own or the first base's in the release's
    model files that defines one, names a ``pp_proxy_tensors`` parameter."""

    def takes_proxy(node: ast.ClassDef) -> bool | None:
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == "forward":
                params = stmt.args.args + stmt.args.kwonlyargs + stmt.args.posonlyargs
                return any(a.arg == "pp_proxy_tensors" for a in params)
        return None

    found = inherited(archive, "sglang/srt/models/", takes_proxy)
    return {"pp": sorted(n for n, takes in found.items() if takes and is_model_class(n))}


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
    choices; a definition that refers to other names makes those wanted too. A definition
    inside a function counts as well (SGLang 0.5.1 builds ``ATTN_BACKENDS`` in
    ``add_cli_args`` itself, just before the flag that takes it)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:  # a file of another Python's syntax: not where a choice is defined
        return
    for node in ast.walk(tree):
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
