"""Read what the engine model needs from one vLLM release's own Python source (no import, no
GPU, no install): the wheel is a zip of the source, and these readers parse it with ``ast``.

- ``architectures``: the names ``ModelRegistry.get_supported_archs()`` lists, the keys of
  ``_VLLM_MODELS`` in ``model_executor/models/registry.py`` (a dict of ``**`` the per-task
  dicts), which ``ModelRegistry`` is built from; before 0.6.3 (no registry.py), the keys of
  ``_MODELS`` in ``model_executor/models/__init__.py``, which ``ModelRegistry.load_model_cls``
  looked names up in then. Held to the lists recorded from a venv of 0.16.0 and 0.33.0 and
  printed by the live 0.32.0 CPU build (tests/engines/test_readings.py).
- ``mla_model_types``: the ``model_type`` values ``is_deepseek_mla`` tests (ModelConfig's in
  config code, or ``transformers_utils/model_arch_config_convertor.py`` where it moved).
- ``mla_compressed_by_head_dim``: whether it judges a config with compress ratios by its
  ``head_dim`` (DeepSeek-V4), not by ``kv_lora_rank``.
- ``modelopt_quantized_lm_head``: whether ModelOpt's ``get_quant_method`` quantizes the
  LM head (``ParallelLMHead``); before, a checkpoint's quantized ``lm_head`` cannot load.
- ``parsers``: the names ``--tool-call-parser`` and ``--reasoning-parser`` take: each
  ``register_module("name")`` (a decorator, or a list of names) and
  ``register_lazy_module(name=...)`` under ``tool_parsers/`` and ``reasoning/``, and the keys of
  the ``_*_PARSERS_TO_REGISTER`` dicts later releases register lazily from.
- ``memory_defaults``: the KV-cache block size the CUDA platform uses when none is given
  (``CacheConfig.DEFAULT_BLOCK_SIZE``, or the ``block_size = N`` platforms/cuda.py sets),
  ``gpu_memory_utilization``'s default, and, where the release has the extensible KV cache
  (on by default on CUDA), the utilization it resolves to then.

Each reader raises ``SourceMissing`` when the release has nothing it recognises, so that a
reading never comes back empty without a word.
"""

from __future__ import annotations

import ast
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REGISTRY = "vllm/model_executor/models/registry.py"
OLD_REGISTRY = "vllm/model_executor/models/__init__.py"
CONFIG_CODE = (
    "vllm/transformers_utils/model_arch_config_convertor.py",
    "vllm/config/model.py",
    "vllm/config/__init__.py",
    "vllm/config.py",
)
CACHE_CONFIG = ("vllm/config/cache.py", "vllm/config/__init__.py", "vllm/config.py")
CUDA_PLATFORM = "vllm/platforms/cuda.py"


class SourceMissing(RuntimeError):
    """A part of the reading found nothing it recognises in the release's source."""


class Release:
    """One release's source: a wheel, or an installed ``site-packages`` folder."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self._zip = zipfile.ZipFile(where) if where.is_file() else None
        self._names = (
            set(self._zip.namelist())
            if self._zip is not None
            else {str(p.relative_to(where)) for p in (where / "vllm").rglob("*.py")}
        )

    def read(self, name: str) -> str | None:
        """The text of ``name`` (a path inside the package), or None when it is absent."""
        if name not in self._names:
            return None
        if self._zip is not None:
            return self._zip.read(name).decode()
        return (self.where / name).read_text()

    def names(self) -> list[str]:
        """Every file of the package, as paths inside it."""
        return sorted(self._names)

    def listing(self, folder: str) -> list[str]:
        """The ``.py`` files directly in ``folder``."""
        prefix = folder.rstrip("/") + "/"
        return sorted(
            n
            for n in self._names
            if n.startswith(prefix) and "/" not in n[len(prefix) :] and n.endswith(".py")
        )


def version_of(where: Path, engine: str = "vllm") -> str:
    """``X.Y.Z`` from a wheel's name (``vllm-X.Y.Z-...whl``, ``sglang-X.Y.Z-...whl``)."""
    found = re.match(rf"{engine}-(\d+\.\d+\.\d+)", where.name)
    if found is None:
        raise SourceMissing(f"{where.name}: not a {engine}-X.Y.Z wheel")
    return found.group(1)


def _assignments(tree: ast.Module) -> dict[str, ast.expr]:
    found: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                found[target.id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            found[node.target.id] = node.value
    return found


def _value(node: ast.expr, named: dict[str, ast.expr], depth: int = 0) -> Any:
    """The value of a module-level registry expression: dict literals with ``**`` merges,
    names of other such dicts, and comprehensions over them (evaluated with no builtins)."""
    if depth > 20:
        raise SourceMissing("registry dicts nest more than 20 deep")
    if isinstance(node, ast.Dict):
        merged: dict[Any, Any] = {}
        for key, item in zip(node.keys, node.values, strict=True):
            if key is None:  # **other
                merged.update(_value(item, named, depth + 1))
            else:
                merged[ast.literal_eval(key)] = _value(item, named, depth + 1)
        return merged
    if isinstance(node, ast.Name):
        if node.id not in named:
            raise SourceMissing(f"registry name {node.id} is not a module-level dict")
        return _value(named[node.id], named, depth + 1)
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    if isinstance(node, ast.DictComp):
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in named}
        space: dict[str, Any] = {n: _value(named[n], named, depth + 1) for n in used}
        code = compile(ast.Expression(node), "<registry>", "eval")
        return eval(code, {"__builtins__": {}, **space})  # noqa: S307 (the release's own literal)
    raise SourceMissing(f"a registry dict built in a way not read: {ast.unparse(node)[:80]}")


def architectures(release: Release) -> list[str]:
    """The architectures the release's model registry lists (``_VLLM_MODELS``; ``_MODELS`` in
    the package's ``__init__`` before registry.py was split out)."""
    path, table = REGISTRY, "_VLLM_MODELS"
    source = release.read(REGISTRY)
    if source is None:
        path, table = OLD_REGISTRY, "_MODELS"
        source = release.read(OLD_REGISTRY)
    if source is None:
        raise SourceMissing(f"no {REGISTRY}")
    named = _assignments(ast.parse(source))
    if table not in named:
        raise SourceMissing(f"no {table} in {path}")
    models = _value(named[table], named)
    if not isinstance(models, dict) or not models:
        raise SourceMissing(f"{table} in {path} lists nothing")
    return sorted(models)


def _is_deepseek_mla(release: Release) -> Iterator[ast.FunctionDef]:
    """Every ``is_deepseek_mla`` in the release's config code (ModelConfig's, or the
    convertor's where it moved)."""
    for name in CONFIG_CODE:
        source = release.read(name)
        if source is not None and "def is_deepseek_mla" in source:
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.FunctionDef) and node.name == "is_deepseek_mla":
                    yield node


def mla_model_types(release: Release) -> list[str]:
    """The ``model_type`` values the release's ``is_deepseek_mla`` runs as DeepSeek MLA."""
    found: set[str] = set()
    for function in _is_deepseek_mla(release):
        for compare in ast.walk(function):
            if isinstance(compare, ast.Compare) and isinstance(compare.ops[0], ast.In):
                listed = compare.comparators[0]
                if isinstance(listed, ast.Tuple | ast.List | ast.Set):
                    found |= {
                        e.value
                        for e in listed.elts
                        if isinstance(e, ast.Constant) and isinstance(e.value, str)
                    }
    if not found:
        raise SourceMissing("no model_type list in any is_deepseek_mla")
    return sorted(found)


def mla_compressed_by_head_dim(release: Release) -> bool:
    """Whether ``is_deepseek_mla`` takes a config with compress ratios (DeepSeek-V4's
    ``compress_ratios``/``compress_rates``) as MLA by its ``head_dim``, not ``kv_lora_rank``."""
    return any("get_compress_ratios(" in ast.unparse(f) for f in _is_deepseek_mla(release))


MODELOPT = "vllm/model_executor/layers/quantization/modelopt.py"


def modelopt_quantized_lm_head(release: Release) -> bool:
    """Whether ModelOpt's ``get_quant_method`` gives the LM head (``ParallelLMHead``) a
    quantized method: where it does not, a checkpoint's quantized ``lm_head`` tensors have
    no parameter to load into, whatever its exclude list says."""
    source = release.read(MODELOPT)
    if source is None:
        raise SourceMissing(f"no {MODELOPT}")
    methods = [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef) and node.name == "get_quant_method"
    ]
    if not methods:
        raise SourceMissing(f"no get_quant_method in {MODELOPT}")
    return any("ParallelLMHead" in ast.unparse(method) for method in methods)


def _strings(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [s for e in node.elts for s in _strings(e)]
    return []


def _registered(source: str) -> set[str]:
    """The parser names one module registers (its code, not its docstrings' examples)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("register_module", "register_lazy_module"):
                given = [k.value for k in node.keywords if k.arg in ("name", "names")]
                for arg in (*node.args[:1], *given):
                    names.update(_strings(arg))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named = any(
                isinstance(t, ast.Name) and re.fullmatch(r"_\w*PARSERS_TO_REGISTER", t.id)
                for t in targets
            )
            if named and isinstance(node.value, ast.Dict):
                names.update(s for k in node.value.keys if k is not None for s in _strings(k))
    return names


def parsers(release: Release) -> dict[str, list[str]]:
    """The names ``--tool-call-parser`` and ``--reasoning-parser`` accept in this release."""
    found: dict[str, set[str]] = {"tool": set(), "reasoning": set()}
    for name in release.names():
        if not name.endswith(".py"):
            continue
        kind = "tool" if "/tool_parsers/" in name else "reasoning" if "/reasoning" in name else None
        if kind is None:
            continue
        source = release.read(name)
        if source is not None:
            found[kind] |= _registered(source)
    if not found["tool"] or not found["reasoning"]:
        empty = [k for k, v in found.items() if not v]
        raise SourceMissing(f"no {' or '.join(empty)} parser registered")
    return {kind: sorted(names) for kind, names in found.items()}


def _class(source: str, name: str) -> ast.ClassDef | None:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    return None


def _member_default(cls: ast.ClassDef, member: str) -> Any:
    """The literal default of a class attribute (``x: T = 0.9``, ``Field(default=0.9)``)."""
    for node in cls.body:
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == member
            and node.value is not None
        ):
            value = node.value
            if isinstance(value, ast.Call):  # Field(default=...) or field(default=...)
                for keyword in value.keywords:
                    if keyword.arg == "default":
                        return ast.literal_eval(keyword.value)
                raise SourceMissing(f"{member}: a default not read ({ast.unparse(value)[:60]})")
            return ast.literal_eval(value)
    raise SourceMissing(f"no {member} in CacheConfig")


def memory_defaults(release: Release) -> dict[str, Any]:
    """The block size, ``gpu_memory_utilization`` and extensible-KV defaults on CUDA."""
    cls = None
    for name in CACHE_CONFIG:
        source = release.read(name)
        if source is not None and "class CacheConfig" in source:
            cls = _class(source, "CacheConfig")
            break
    if cls is None:
        raise SourceMissing("no CacheConfig class")
    utilization = _member_default(cls, "gpu_memory_utilization")
    extensible: float | None = None
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.target.id == "DEFAULT_GPU_MEMORY_UTILIZATION" and node.value is not None:
                utilization = ast.literal_eval(node.value)
            if node.target.id == "DEFAULT_BLOCK_SIZE" and node.value is not None:
                block = ast.literal_eval(node.value)
        if isinstance(node, ast.FunctionDef) and node.name == "resolved_gpu_memory_utilization":
            for branch in ast.walk(node):
                if (
                    isinstance(branch, ast.If)
                    and "enable_extensible_kv_cache" in ast.unparse(branch.test)
                    and isinstance(branch.body[0], ast.Return)
                    and branch.body[0].value is not None
                ):
                    extensible = ast.literal_eval(branch.body[0].value)
    if "block" not in locals():
        cuda = release.read(CUDA_PLATFORM) or ""
        set_here = re.search(r"cache_config\.block_size\s*=\s*(\d+)", cuda)
        if set_here is None:
            raise SourceMissing("no DEFAULT_BLOCK_SIZE and no block size set in platforms/cuda.py")
        block = int(set_here.group(1))
    if not isinstance(utilization, float):
        raise SourceMissing(f"gpu_memory_utilization's default is {utilization!r}, not a number")
    return {
        "block_size": block,
        "gpu_memory_utilization": utilization,
        # None: no extensible KV cache in this release; else the utilization it resolves to
        # when gpu_memory_utilization is not given (the extensible cache is on by default on
        # CUDA: VllmConfig._resolve_extensible_kv_cache).
        "extensible_kv_cache_utilization": extensible,
    }


SGLANG_MODELS = "sglang/srt/models"


def entry_names(tree: ast.Module) -> list[str]:
    """The ``__name__`` of each class a module's ``EntryClass`` names: a class the module
    defines keeps its name, a module-level alias (``X = Y``) is followed to what it names."""
    aliases = {
        node.targets[0].id: node.value.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Name)
    }
    found: list[str] = []
    for node in tree.body:
        if not (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "EntryClass" for t in node.targets)
        ):
            continue
        items = node.value.elts if isinstance(node.value, ast.List | ast.Tuple) else [node.value]
        for item in items:
            if isinstance(item, ast.Name):
                name = item.id
                for _ in range(8):  # an alias of an alias
                    name = aliases.get(name, name)
                found.append(name)
    return found


def sglang_architectures(release: Release) -> list[str]:
    """The architectures SGLang's registry lists: ``import_model_classes`` in
    ``srt/models/registry.py`` keys each ``EntryClass`` of the modules directly in
    ``srt/models/`` by its class's ``__name__``."""
    modules = release.listing(SGLANG_MODELS)
    if not modules:
        raise SourceMissing(f"no {SGLANG_MODELS}/*.py")
    names: set[str] = set()
    for module in modules:
        source = release.read(module)
        if source:
            names.update(entry_names(ast.parse(source.removeprefix("\ufeff"))))
    if not names:
        raise SourceMissing(f"no EntryClass in {SGLANG_MODELS}")
    return sorted(names)
