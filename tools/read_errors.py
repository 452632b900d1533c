"""Read every start-up error a release can raise from its own source (no import, no install).

    python -m tools.read_errors vllm W.whl [W.whl ...]   # into patcher/advice/errors-vllm.json
    python -m tools.read_errors sglang W.whl
    python -m tools.read_errors transformers W.whl
    python -m tools.read_errors --features vllm W.whl    # only the per-release features
    python -m tools.read_errors --templates vllm W.whl   # only the templates (a reader change)

A start-up error is a ``raise X("...")``, an ``assert cond, "..."`` or a ``logger.error`` /
``logger.critical`` / ``logger.exception`` call with a message, in a file of the start-up path
(``START_UP`` below: config and argument parsing, the model registry, loading, quantization,
attention and MoE kernel selection, KV-cache memory, tokenizer and chat template, parallel
sizes, and the transformers config classes the engines call). Each message becomes a
template: its literal text and its holes (the f-string fields, ``%`` and ``.format``
arguments, a message built in a local variable first, each message appended to a list that is
then joined and raised), with the exception's class, the file
and the names it interpolates. Templates are kept per release: each records the releases that
have that exact wording, so a wording that changed shows as two templates.

The catalogue is what doctor matches a log against (patcher/advice/catalogue.py); every
template must fall in a family (patcher/advice/families.py), which tests/advice/test_catalogue
checks. Reading a vLLM release with ``python -m tools.read_release`` records its errors too.
"""

from __future__ import annotations

import ast
import fnmatch
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

from patcher.advice.catalogue import version_key
from tools import (
    read_accepts,
    read_binaries,
    read_defects,
    read_env_bounds,
    read_layer_configs,
    read_metadata,
    read_model_classes,
    read_model_configs,
    read_own_configs,
    read_quantization,
    read_rope_types,
    read_task_runners,
)
from tools.catalogue_file import CATALOGUE, write_catalogue
from tools.read_messages import templates_in

# The files of each engine's start-up path, as glob patterns inside the wheel.
START_UP: dict[str, tuple[str, ...]] = {
    "vllm": (
        "vllm/config/*.py",
        "vllm/config.py",
        "vllm/engine/arg_utils.py",
        "vllm/transformers_utils/config.py",
        # the engine's own config classes and the Mistral-format reader (params.json), which
        # get_config builds the model's config with
        "vllm/transformers_utils/configs/*.py",
        "vllm/transformers_utils/tokenizer*.py",
        "vllm/transformers_utils/model_arch_config_convertor.py",
        "vllm/tokenizers/*.py",
        "vllm/model_executor/models/registry.py",
        "vllm/model_executor/models/*.py",
        "vllm/models/*.py",
        "vllm/model_executor/model_loader/*.py",
        "vllm/model_executor/layers/quantization/*.py",
        # the MoE layers and kernels, the quantized linear kernels' selection, the layers every
        # model builds (linear, embedding, attention, Mamba, rotary): built as the model loads
        "vllm/model_executor/layers/fused_moe/*.py",
        "vllm/model_executor/kernels/*.py",
        "vllm/model_executor/layers/*.py",
        "vllm/model_executor/layers/attention/*.py",
        "vllm/model_executor/layers/mamba/*.py",
        "vllm/model_executor/layers/rotary_embedding/*.py",
        # the KV connector --kv-transfer-config names is made as the engine starts
        "vllm/distributed/kv_transfer/kv_connector/factory.py",
        "vllm/attention/selector.py",
        "vllm/v1/attention/selector.py",
        # each attention backend refuses the head sizes, dtypes and features it lacks
        "vllm/attention/backends/*.py",
        "vllm/v1/attention/backends/*.py",
        "vllm/v1/attention/backends/mla/*.py",
        "vllm/platforms/cuda.py",
        "vllm/platforms/interface.py",
        "vllm/platforms/rocm.py",
        "vllm/platforms/cpu.py",
        # the scheduler's core sizes the KV cache and the encoder cache (the multimodal
        # budget: a whole image item must fit max_num_batched_tokens) as the engine starts
        "vllm/v1/core/*.py",
        "vllm/v1/core/sched/*.py",
        "vllm/v1/engine/core.py",
        # the model runner and the worker profile memory, build the multimodal budget and
        # the attention groups, and capture CUDA graphs before the server answers
        "vllm/v1/worker/gpu_worker.py",
        "vllm/v1/worker/gpu_model_runner.py",
        "vllm/v1/worker/gpu/*.py",
        "vllm/v1/worker/utils.py",
        # the multimodal registry and profiler: each model's items' sizes and limits
        "vllm/multimodal/registry.py",
        "vllm/multimodal/profiling.py",
        # the V0 engine (releases before 0.11): built as the server or LLM() starts, and its
        # first step refuses what it runs only through AsyncLLMEngine (pipeline parallelism,
        # multi-step scheduling) when the LLM class drives it
        "vllm/engine/llm_engine.py",
        # the V0 engine's worker (releases before 0.10) sized the KV cache here
        "vllm/worker/worker.py",
        "vllm/worker/model_runner.py",
        "vllm/distributed/parallel_state.py",
        # divide() and ensure_divisibility(): every layer's split by the parallel sizes
        # ("25 is not divisible by 4", a vision tower's heads under --tensor-parallel-size 4)
        "vllm/distributed/utils.py",
        # V0's multiprocessing executors check the world size against the GPUs they see;
        # the Ray utilities refuse without Ray; DeepGEMM's wrapper refuses without the package.
        # (Not the executors' other files: their log lines wrap a worker's error, the root.)
        "vllm/executor/multiproc_gpu_executor.py",
        "vllm/executor/mp_distributed_executor.py",
        "vllm/executor/ray_utils.py",
        "vllm/v1/executor/ray_utils.py",
        "vllm/utils/deep_gemm.py",
        # the custom-op wrapper logs why a compiled op failed (no kernel built for the GPU; an
        # op the installed extension lacks: an obsolete build), as the first forward profiles
        "vllm/_custom_ops.py",
        # the reasoning parser is built with the structured-output manager as the engine
        # starts: one whose think tokens the tokenizer lacks refuses there
        "vllm/reasoning/*.py",
        "vllm/entrypoints/chat_utils.py",
        "vllm/entrypoints/openai/api_server.py",
        # the serve parser's own validation (validate_parsed_serve_args), before the engine
        "vllm/entrypoints/openai/cli_args.py",
        "vllm/entrypoints/cli/serve.py",
        # adapters named by --lora-modules load at start-up, checked against --max-lora-rank
        "vllm/lora/peft_helper.py",
        "vllm/lora/worker_manager.py",
        # speculative decoding's proposers load the draft model as the engine starts
        "vllm/spec_decode/*.py",
        "vllm/v1/spec_decode/*.py",
    ),
    "sglang": (
        "sglang/srt/server_args.py",
        "sglang/srt/arg_groups/*.py",
        "sglang/srt/configs/model_config.py",
        "sglang/srt/configs/load_config.py",
        "sglang/srt/model_executor/model_runner.py",
        "sglang/srt/model_executor/model_runner_kv_cache_mixin.py",
        # the CUDA graphs are captured as the model runner starts ("Capture cuda graph failed")
        "sglang/srt/model_executor/cuda_graph_runner.py",
        "sglang/srt/model_executor/runner/decode_cuda_graph_runner.py",
        "sglang/srt/managers/scheduler.py",
        "sglang/srt/managers/tp_worker.py",
        "sglang/srt/model_loader/*.py",
        # 0.5.16 moved the model runner's loading checks here (KV-cache scaling factors)
        "sglang/srt/model_executor/model_runner_components/*.py",
        "sglang/srt/models/*.py",
        "sglang/srt/layers/quantization/*.py",
        "sglang/srt/layers/attention/attention_registry.py",
        "sglang/srt/layers/attention/*_backend.py",
        # the MoE layers, runners and token dispatchers, the attention backends' helpers, the
        # layers every model builds, the memory pools, LoRA: all built as the model loads
        "sglang/srt/layers/moe/*.py",
        "sglang/srt/layers/attention/*.py",
        "sglang/srt/layers/*.py",
        "sglang/srt/mem_cache/memory_pool.py",
        "sglang/srt/mem_cache/allocator.py",
        "sglang/srt/mem_cache/kv_cache_configurator.py",
        "sglang/srt/lora/*.py",
        "sglang/srt/model_executor/*.py",
        "sglang/srt/utils/common.py",
        "sglang/srt/utils/hf_transformers_utils.py",
        "sglang/srt/hf_transformers_utils.py",
        "sglang/srt/distributed/parallel_state.py",
        "sglang/srt/distributed/utils.py",
        # the grammar backends and the reasoning parser are built as the scheduler starts
        # (--grammar-backend, --reasoning-parser): their refusals stop it
        "sglang/srt/constrained/*.py",
        "sglang/srt/parser/reasoning_parser.py",
        "sglang/srt/reasoning_parser.py",
        # the chat template (--chat-template) is loaded as the server starts (0.4.10 on; before,
        # in the OpenAI adapter, whose other errors are requests')
        "sglang/srt/managers/template_manager.py",
        "sglang/srt/parser/template_manager.py",
        # the draft workers of speculative decoding load the draft model as the scheduler starts
        "sglang/srt/speculative/*.py",
    ),
    "transformers": (
        "transformers/configuration_utils.py",
        # a checkpoint with custom code (auto_map) refused without trust_remote_code
        "transformers/dynamic_module_utils.py",
        # a .gguf file whose architecture the GGUF loader (vLLM calls it) does not map
        "transformers/modeling_gguf_pytorch_utils.py",
        "transformers/modeling_rope_utils.py",
        "transformers/models/auto/configuration_auto.py",
        "transformers/models/auto/tokenization_auto.py",
        # the checkpoint's files fetched from the Hub or found in its cache (gated, private,
        # misnamed, offline)
        "transformers/utils/hub.py",
        "transformers/tokenization_utils_base.py",
        "transformers/utils/quantization_config.py",
        # every model's config class: its own checks of config.json's values (transformers 5
        # validates them strictly at load), which the engines meet through AutoConfig
        "transformers/models/*/configuration_*.py",
        # a per-layer (heterogeneous) config's attribute read whole (5.14.1 on), which an
        # engine written before the model's config became per-layer does as it starts
        "transformers/integrations/heterogeneity/configuration_utils.py",
    ),
}

MODEL_TYPES = (
    "transformers/models/auto/auto_mappings.py",
    "transformers/models/auto/configuration_auto.py",
)


def config_mapping(sources: list[str]) -> dict[str, str]:
    """``CONFIG_MAPPING_NAMES`` read with ast in the auto-mapping modules (a list of pairs, a
    dict, ``.update`` calls): each model type transformers' ``AutoConfig`` knows, with its
    config class's name ("" where the entry gives none)."""
    found: dict[str, str] = {}
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            holder: ast.AST | None = None
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "CONFIG_MAPPING_NAMES" for t in node.targets
            ):
                holder = node.value
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "update"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "CONFIG_MAPPING_NAMES"
            ):
                holder = node
            if holder is None:
                continue
            for inner in ast.walk(holder):
                if isinstance(inner, ast.Tuple) and len(inner.elts) == 2:
                    key, value = inner.elts
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        found[key.value] = _constant(value)
                elif isinstance(inner, ast.Dict):
                    for k, v in zip(inner.keys, inner.values, strict=True):
                        if isinstance(k, ast.Constant) and isinstance(k.value, str):
                            found[k.value] = _constant(v)
                elif isinstance(inner, ast.keyword) and inner.arg is not None:
                    found[inner.arg] = _constant(inner.value)
    return found


def _constant(node: ast.expr) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def read_wheel(wheel: Path, engine: str) -> list[dict[str, Any]]:
    """Every start-up template of one wheel (see ``START_UP``)."""
    patterns = START_UP[engine]
    found: list[dict[str, Any]] = []
    with zipfile.ZipFile(wheel) as archive:
        for name in sorted(archive.namelist()):
            if any(fnmatch.fnmatch(name, p) for p in patterns):
                text = archive.read(name).decode("utf-8", errors="replace")
                found += templates_in(text, name)
    if not found:
        raise RuntimeError(f"{wheel.name}: no start-up error found in {engine}'s source")
    return found


def _identity(template: dict[str, Any]) -> str:
    """A wording's identity across releases: its exception and text, and for a model's own
    config class (transformers/models/X/configuration_X.py) the file too: each model's checks
    change in their own releases, so one model's wording does not stand for another's."""
    own = fnmatch.fnmatch(template["file"], "transformers/models/*/configuration_*.py")
    return json.dumps([template["exception"], template["parts"], template["file"] if own else ""])


def merge(
    catalogue: dict[str, Any], release: str, templates: list[dict[str, Any]]
) -> dict[str, Any]:
    """The catalogue with ``release``'s templates: a wording seen before gains the release."""
    by_key = {_identity(t): t for t in catalogue.get("templates", [])}
    for template in by_key.values():
        template["releases"] = [r for r in template["releases"] if r != release]
    for template in templates:
        key = _identity(template)
        kept = by_key.setdefault(key, {**template, "releases": []})
        if release not in kept["releases"]:
            kept["releases"].append(release)
    kept_templates = [t for t in by_key.values() if t["releases"]]
    releases = sorted({*catalogue.get("releases", []), release}, key=version_key)
    for template in kept_templates:
        template["releases"].sort(key=version_key)
    kept_templates.sort(key=lambda t: (t["file"], t["line"], t["releases"][0]))
    return {**catalogue, "releases": releases, "templates": kept_templates}


def _wheel_version(wheel: Path) -> str:
    return wheel.name.split("-")[1]


def _record_features(catalogue: dict[str, Any], release: str, read: dict[str, list[str]]) -> None:
    """Per feature (a model class's LoRA, PP, BitsAndBytes; a server setting), each name's
    releases (tools/read_model_classes.py), ``release`` read anew."""
    features = catalogue.setdefault("features", {})
    for feature, classes in read.items():
        known: dict[str, list[str]] = features.setdefault(feature, {})
        for name in list(known):
            known[name] = [r for r in known[name] if r != release]
        for name in classes:
            known.setdefault(name, []).append(release)
        for name in list(known):
            if known[name]:
                known[name].sort(key=version_key)
            else:
                del known[name]
        features[feature] = dict(sorted(known.items()))


def record(
    engine: str,
    wheels: list[Path],
    today: str,
    features_only: bool = False,
    templates_only: bool = False,
) -> Path:
    """Add each wheel's templates to the engine's catalogue file; returns the file. With
    ``features_only``, the templates are kept and only the per-release features
    (tools/read_model_classes.py, read_quantization.py, read_binaries.py, read_metadata.py,
    read_env_bounds.py, read_own_configs.py, read_rope_types.py,
    read_model_configs.py, read_task_runners.py)
    are read again (a reading added to it, recorded for the releases already read); with
    ``templates_only``, only the templates are read again (a change of this reader)."""
    target = CATALOGUE / f"errors-{engine}.json"
    catalogue: dict[str, Any] = (
        json.loads(target.read_text()) if target.exists() else {"engine": engine}
    )
    catalogue.pop("class_features", None)  # the name before "features" (session eight)
    for wheel in wheels:
        if features_only and _wheel_version(wheel) not in catalogue.get("read", {}):
            raise RuntimeError(f"{wheel.name}: its errors were never read (drop --features)")
        if not features_only:
            catalogue = merge(catalogue, _wheel_version(wheel), read_wheel(wheel, engine))
            catalogue.setdefault("read", {})[_wheel_version(wheel)] = today
        if templates_only:
            continue
        if engine in read_model_classes.SETTINGS:
            with zipfile.ZipFile(wheel) as archive:
                read = {"settings": read_model_classes.settings(archive, engine)}
                read |= read_model_classes.choices(archive, engine)
                read |= read_model_classes.parsers(archive, engine)  # the registries' names
                read |= read_quantization.min_capabilities(archive, engine)
                read |= read_quantization.scheme_capabilities(archive, engine)
                read |= read_quantization.quantization_classes(archive, engine)
                read |= read_quantization.required_keys(archive, engine)
                read |= read_model_classes.env_names(archive, engine)
                read |= read_env_bounds.env_bounds(archive, engine)
                read |= read_own_configs.own_configs(archive, engine)
                read |= read_rope_types.rope_types(archive, engine)
                read |= read_task_runners.task_runners(archive, engine)
                read |= read_model_configs.model_configs(archive, engine)
                read |= read_model_classes.cli_flags(archive, engine)
                read |= read_metadata.torch_pin(archive)
                read |= read_metadata.requirements(archive)
                read |= read_defects.defects(archive, START_UP[engine])
                read |= read_accepts.accepts(archive, START_UP[engine])
                if engine == "sglang":
                    read |= read_model_classes.sglang_pipeline(archive)
                read |= read_layer_configs.reads_per_layer(archive, f"{engine}/")
                if engine == "vllm":
                    read |= read_model_classes.features(archive)
                    read |= read_model_classes.attention_backends(archive)
                    read |= read_binaries.cuda_archs(archive)
                    read |= read_binaries.glibc(archive)
                    read |= read_model_classes.gguf_model_types(archive)
                    read |= read_quantization.marlin_pads(archive)
            _record_features(catalogue, _wheel_version(wheel), read)
        if engine == "transformers":
            version_of_wheel = _wheel_version(wheel)
            with zipfile.ZipFile(wheel) as archive:
                gguf = read_model_classes.gguf_architectures(archive)
                names = set(archive.namelist())
                texts = [archive.read(n).decode() for n in MODEL_TYPES if n in names]
                config_code = archive.read("transformers/configuration_utils.py").decode()
                layered = read_layer_configs.per_layer_types(archive)
            _record_features(catalogue, version_of_wheel, gguf)
            _record_features(catalogue, version_of_wheel, layered)
            if "huggingface_hub.dataclasses" in config_code:  # @strict config classes
                since = catalogue.get("strict_since") or version_of_wheel
                catalogue["strict_since"] = min(since, version_of_wheel, key=version_key)
            mapping = config_mapping(texts)
            if len(mapping) < 100:
                raise RuntimeError(f"{wheel.name}: CONFIG_MAPPING_NAMES not found")
            # Each model type, and each config class, with the first and the last release
            # read that knows it.
            mapped = {"model_types": set(mapping), "config_classes": set(mapping.values()) - {""}}
            for key, found in mapped.items():
                known = catalogue.setdefault(key, {})
                for name in sorted(found):
                    first, last = known.get(name, [version_of_wheel, version_of_wheel])
                    known[name] = [
                        min(first, version_of_wheel, key=version_key),
                        max(last, version_of_wheel, key=version_key),
                    ]
    catalogue["source"] = (
        f"{engine}'s wheels, read with ast by tools/read_errors.py (files: START_UP there)"
    )
    write_catalogue(target, catalogue)
    return target


def main(argv: list[str] | None = None) -> int:
    """Record the start-up errors of the wheels given."""
    import datetime

    args = sys.argv[1:] if argv is None else argv
    features_only = bool(args) and args[0] == "--features"
    templates_only = bool(args) and args[0] == "--templates"
    args = args[1:] if features_only or templates_only else args
    if len(args) < 2 or args[0] not in START_UP:
        print(__doc__)
        return 2
    today = datetime.date.today().isoformat()
    target = record(args[0], [Path(a) for a in args[1:]], today, features_only, templates_only)
    count = len(json.loads(target.read_text())["templates"])
    print(f"{target}: {count} templates")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
