"""doctor's answer when an engine's registry has no class for the architecture
(patcher/advice/architectures.py): the release named comes from the registries read."""

from __future__ import annotations

import json
from pathlib import Path

from patcher.advice.architectures import REGISTRY_LISTS, release_for
from patcher.advice.catalogue import feature_releases
from patcher.advice.doctor import diagnose, diagnose_text
from patcher.engines.registries import architectures


def test_a_class_every_release_read_lists_is_not_said_to_start_there() -> None:
    registry = architectures("vllm")
    first = min(registry)
    always = sorted(n for n in registry[first] if all(n in names for names in registry.values()))
    assert (0, 1, 0) < first
    fix = release_for(always[0], (0, 1, 0))
    assert fix is not None and fix.text == f"pip install 'vllm>={'.'.join(map(str, first))}'"
    assert fix.note is not None and "an older release may list it too" in fix.note


def test_a_class_a_later_release_added_names_that_release_alone() -> None:
    registry = architectures("vllm")
    versions = sorted(registry)
    added = sorted(registry[versions[-1]] - registry[versions[0]])
    listed = [v for v in versions if added[0] in registry[v]]
    fix = release_for(added[0], versions[0])
    assert fix is not None and fix.text == f"pip install 'vllm>={'.'.join(map(str, listed[0]))}'"
    assert fix.note is not None and "older release" not in fix.note


def _unlisted() -> str:
    """A class name no registry read lists (vLLM's nor SGLang's)."""
    name = "Zz9ForCausalLM"
    assert all(name not in names for e in ("vllm", "sglang") for names in architectures(e).values())
    return name


def test_a_class_no_vllm_release_has_is_answered_with_vllms_plugin_mechanism() -> None:
    plugins = feature_releases("vllm", "env", "VLLM_PLUGINS")
    found = diagnose_text(
        "(APIServer pid=1) INFO 09-05 10:19:15 [utils.py:326] vLLM API server version 0.28.0\n"
        "(APIServer pid=1)   Value error, Model architectures ['"
        + _unlisted()
        + "'] are not supported for now. Supported architectures: dict_keys(['LlamaForCausalLM', "
        "'Qwen2ForCausalLM']) [type=value_error, input_value=ArgsKwargs((), {}), "
        "input_type=ArgsKwargs]\n"
    )
    assert found is not None and found.fixes
    first = found.fixes[0]
    assert "vLLM plugin" in first.text and first.note is not None
    assert f"vLLM {plugins[0]} on" in first.note and "vllm.general_plugins" in first.note
    assert not any(f.text.startswith("pip install 'vllm") for f in found.fixes)


def test_a_class_no_sglang_release_has_names_sglangs_external_package() -> None:
    since = feature_releases("sglang", "env", "SGLANG_EXTERNAL_MODEL_PACKAGE")
    found = diagnose_text(
        "[2025-11-01 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        f"ValueError: Unsupported architectures: {_unlisted()}. Supported list: "
        "['LlamaForCausalLM', 'Qwen2ForCausalLM']\n"
    )
    assert found is not None
    env = [f for f in found.fixes if f.kind == "env"]
    assert env and env[0].text == "SGLANG_EXTERNAL_MODEL_PACKAGE=PACKAGE"
    assert env[0].note is not None and f"SGLang {since[0]} on" in env[0].note


def test_a_class_a_later_release_lists_gets_that_release_not_a_plugin() -> None:
    registry = architectures("vllm")
    versions = sorted(registry)
    added = sorted(registry[versions[-1]] - registry[versions[0]])[0]
    old = ".".join(map(str, versions[0]))
    found = diagnose_text(
        f"INFO 01-01 00:00:00 api_server.py:1 vLLM API server version {old}\n"
        f"ValueError: Model architectures ['{added}'] are not supported for now. Supported "
        "architectures: dict_keys(['LlamaForCausalLM'])\n"
    )
    assert found is not None and found.fixes[0].text.startswith("pip install 'vllm>=")
    assert not any("plugin" in f.text for f in found.fixes)


_FELL_BACK = (
    "WARNING 10-02 10:02:00 [utils.py:197] {arch} has no vLLM implementation, falling back to "
    "Transformers implementation. Some features may not be supported and performance may not "
    "be optimal.\n"
)
_BACKEND_ERROR = (
    "AttributeError: 'Qwen3VLMoeModel' object has no attribute 'language_model.embed_tokens'\n"
)


def test_an_error_after_the_transformers_fallback_names_the_release_with_the_class() -> None:
    arch = "Qwen3VLMoeForConditionalGeneration"
    first = min(v for v, names in architectures("vllm").items() if arch in names)
    before = ".".join(map(str, (first[0], first[1] - 1, 1)))
    banner = f"INFO 10-02 10:00:00 [api_server.py:1805] vLLM API server version {before}\n"
    found = diagnose_text(banner + _FELL_BACK.format(arch=arch) + _BACKEND_ERROR)
    assert found.code == "transformers-fallback"
    assert [f.text for f in found.fixes] == [f"pip install 'vllm>={'.'.join(map(str, first))}'"]
    # the same error with no fallback in the log, or after a release that lists the class,
    # is not this backend's: not recognised
    assert diagnose_text(banner + _BACKEND_ERROR).code is None
    listed = banner.replace(before, ".".join(map(str, first)))
    assert diagnose_text(listed + _FELL_BACK.format(arch=arch) + _BACKEND_ERROR).code is None


def test_a_config_that_names_no_class_is_told_so_not_sent_to_a_release_or_a_plugin() -> None:
    # vLLM 0.7.0's registry warns, then raises with the empty list (_normalize_archs,
    # _raise_for_unsupported): deepseek-vl2's config names only its language model's class
    found = diagnose_text(
        "WARNING 01-27 11:53:10 registry.py:377] No model architectures are specified\n"
        "ERROR 01-27 11:53:10 engine.py:389] ValueError: Model architectures [] are not "
        "supported for now. Supported architectures: dict_keys(['AquilaModel', "
        "'LlamaForCausalLM', 'DeepseekVLV2ForCausalLM'])\n"
    )
    assert found.code == "unsupported-architecture"
    assert "names no model class" in found.cause
    texts = [f.text for f in found.fixes]
    assert any("set-architectures --set architecture=NAME" in t for t in texts)
    assert '--hf-overrides \'{"architectures": ["NAME"]}\'' in texts
    assert not any("pip install" in t or "plugin" in t for t in texts)


_BACKEND_TRACEBACK = (
    "(EngineCore_DP0 pid=7) ERROR 01-26 18:00:12 [core.py:936] EngineCore failed to start.\n"
    "(EngineCore_DP0 pid=7) ERROR 01-26 18:00:12 [core.py:936] Traceback (most recent call "
    "last):\n"
    '(EngineCore_DP0 pid=7) ERROR 01-26 18:00:12 [core.py:936]   File "/venv/lib/python3.12/'
    'site-packages/vllm/model_executor/models/transformers/multimodal.py", line 72, in '
    "get_max_image_tokens\n"
    "(EngineCore_DP0 pid=7) ERROR 01-26 18:00:12 [core.py:936]     mm_tokens = "
    "processor._get_num_multimodal_tokens(\n"
    "(EngineCore_DP0 pid=7) ERROR 01-26 18:00:12 [core.py:936] AttributeError: "
    "'{processor}' object has no attribute '{attribute}'\n"
)


def test_a_processor_the_transformers_backend_cannot_count_tokens_with_is_that_backends() -> None:
    """The backend's class in the warning (0.11 on), or its module in the traceback, says the
    release has no class for the model: the release that lists the checkpoint's class, which
    --checkpoint names; the processor's missing hook is said as such."""
    registry = architectures("vllm")
    versions = sorted(registry)
    added = sorted(registry[versions[-1]] - registry[versions[-8]])[0]
    first = min(v for v in versions if added in registry[v])
    before = max(v for v in versions if v < first)
    banner = (
        "INFO 01-26 17:59:50 [api_server.py:1351] vLLM API server version "
        f"{'.'.join(map(str, before))}\n"
    )
    log = banner + _BACKEND_TRACEBACK.format(
        processor="SomeVLProcessor", attribute="_get_num_multimodal_tokens"
    )
    found = diagnose_text(log)
    assert found.code == "transformers-fallback"
    assert "SomeVLProcessor" in found.cause and "_get_num_multimodal_tokens" in found.cause
    assert [(f.kind, f.text) for f in found.fixes] == [("advice", REGISTRY_LISTS)]
    # the warning that names the backend's own class, and another error in its module
    warned = banner + _FELL_BACK.format(arch="TransformersMultiModalForCausalLM")
    other = _BACKEND_TRACEBACK.format(processor="SomeVLProcessor", attribute="size")
    assert diagnose_text(warned + _BACKEND_ERROR).code == "transformers-fallback"
    assert diagnose_text(banner + other).code == "transformers-fallback"
    assert "_get_num_multimodal_tokens" not in diagnose_text(banner + other).cause


def test_the_checkpoint_names_the_release_with_a_class_of_its_own(tmp_path: Path) -> None:
    registry = architectures("vllm")
    versions = sorted(registry)
    added = sorted(registry[versions[-1]] - registry[versions[-8]])[0]
    first = min(v for v in versions if added in registry[v])
    before = max(v for v in versions if v < first)
    log = tmp_path / "serve.log"
    log.write_text(
        "INFO 01-26 17:59:50 [api_server.py:1351] vLLM API server version "
        f"{'.'.join(map(str, before))}\n"
        + _BACKEND_TRACEBACK.format(
            processor="SomeVLProcessor", attribute="_get_num_multimodal_tokens"
        )
    )
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text(json.dumps({"architectures": [added]}))
    found = diagnose(log, checkpoint=checkpoint)
    assert [f.text for f in found.fixes] == [f"pip install 'vllm>={'.'.join(map(str, first))}'"]


def test_the_backend_resolved_is_that_backends_unless_the_command_chose_it() -> None:
    resolved = (
        "(APIServer pid=1) INFO 02-03 11:08:46 [api_server.py:1] vLLM API server version 0.15.0\n"
        "(APIServer pid=1) INFO 02-03 11:08:52 [model.py:541] Resolved architecture: "
        "TransformersMultiModalForCausalLM\n"
        "(EngineCore_DP0 pid=2) ERROR 02-03 11:09:10 [core.py:946] TypeError: unsupported "
        "operand type(s) for *: 'NoneType' and 'int'\n"
    )
    found = diagnose_text(resolved)
    assert found.code == "transformers-fallback"
    assert "TransformersMultiModalForCausalLM" in found.cause
    assert [f.text for f in found.fixes] == [REGISTRY_LISTS]
    chosen = "INFO 02-03 11:08:46 [utils.py:261] non-default args: {'model_impl': 'transformers'}\n"
    assert diagnose_text(chosen + resolved).code is None
    traceback = _BACKEND_TRACEBACK.format(processor="SomeVLProcessor", attribute="size")
    assert diagnose_text("vllm serve m --model-impl transformers\n" + traceback).code is None


def _backend_refusal(arch: str, version: str) -> str:
    return (
        f"INFO 07-01 10:00:00 [api_server.py:1] vLLM API server version {version}\n"
        f"ValueError: Cannot find model module. '{arch}' is not a registered model in the "
        "Transformers library (only relevant if the model is meant to be in Transformers) and "
        "'AutoModel' is not present in the model config's 'auto_map' (relevant if the model is "
        "custom).\n"
    )


def test_the_transformers_backends_refusal_of_a_class_a_later_registry_lists_is_that_release() -> (
    None
):
    # vLLM tries its Transformers backend only where its registry has no class for the
    # architecture: a release whose registry lists it is the fix, not --trust-remote-code
    registry = architectures("vllm")
    versions = sorted(registry)
    added = sorted(registry[versions[-1]] - registry[versions[0]])
    first = next(v for v in versions if added[0] in registry[v])
    before = max(v for v in versions if v < first)
    found = diagnose_text(_backend_refusal(added[0], ".".join(map(str, before))))
    assert [f.text for f in found.fixes] == [f"pip install 'vllm>={'.'.join(map(str, first))}'"]
    assert f"registry has no class for {added[0]}" in found.cause


def test_the_backends_refusal_of_a_class_no_registry_lists_keeps_the_remote_code_answer() -> None:
    found = diagnose_text(_backend_refusal("MiniMindForCausalLM", "0.9.1"))
    assert not any(f.kind == "dependency" for f in found.fixes)
    assert found.code == "remote-code"


def test_sglangs_backend_refusing_a_class_its_later_registry_lists_is_that_release() -> None:
    registry = architectures("sglang")
    versions = sorted(registry)
    added = sorted(registry[versions[-1]] - registry[versions[0]])
    first = next(v for v in versions if added[0] in registry[v])
    found = diagnose_text(
        f"[2026-12-04 10:00:00 TP0] ValueError: Cannot find model module. '{added[0]}' is not "
        "a registered model in the Transformers library (only relevant if the model is meant "
        "to be in Transformers) and 'AutoModel' is not present in the model config's "
        "'auto_map' (relevant if the model is custom).\n"
    )
    assert found.fixes[0].text.startswith("pip install 'sglang")
    assert ".".join(map(str, first)) in found.fixes[0].text
