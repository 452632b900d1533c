"""doctor's answer to a matrix product whose inner sizes differ (patcher/advice/tensor_sizes.py):
the model's own shape error, which eager mode raises too, so not torch.compile's."""

from __future__ import annotations

from patcher.advice.doctor import diagnose_text

# torch's words for one product checked with fake tensors (Dynamo tracing) and in eager mode
_TRACED = "RuntimeError: a and b must have same reduction dim, but got [s47, 3840] X [5632, 1024]."
_EAGER = "RuntimeError: mat1 and mat2 shapes cannot be multiplied (8192x3840 and 5632x1024)"
_COMMAND = (
    "vllm serve google/gemma-4-26B-A4B-it \\\n"
    "  --max-model-len 131072 --quantization fp8 \\\n"
    '  --speculative-config \'{"method":"mtp","model":"google/gemma-4-26B-A4B-it-assistant",'
    '"num_speculative_tokens":4}\'\n'
)


def test_a_product_of_two_widths_is_the_models_shape_not_the_compiler() -> None:
    found = diagnose_text(
        _COMMAND
        + _TRACED
        + "\ntorch._dynamo.exc.TorchRuntimeError: RuntimeError when making fake tensor call\n"
    )
    assert found.code == "product-shape-mismatch"
    assert "5632" in found.cause and "3840" in found.cause
    # eager mode raises the same: --enforce-eager would not start it
    assert not any("--enforce-eager" in f.text for f in found.fixes)
    # the drafter, which the command builds, is named first
    assert "speculative" in found.fixes[0].text


def test_without_a_draft_model_no_edit_is_offered() -> None:
    found = diagnose_text("vllm serve m --max-model-len 4096\n" + _EAGER + "\n")
    assert found.code == "product-shape-mismatch"
    assert not any("speculative" in f.text for f in found.fixes)
    assert found.fixes[0].kind == "advice" and "no config edit" in found.fixes[0].text
    # vLLM's own args line says it runs speculative decoding too
    args = (
        "(APIServer pid=1) INFO 07-16 10:00:00 [utils.py:233] non-default args: {'model': 'm', "
        "'speculative_config': {'method': 'mtp', 'num_speculative_tokens': 4}}\n"
    )
    assert "speculative" in diagnose_text(args + _EAGER + "\n").fixes[0].text


def test_vllms_other_model_runner_is_named_where_its_release_has_one() -> None:
    """vLLM's two model runners build speculative decoding with their own code
    (snapshots/engines/vllm-model-runners.txt): the env that picks the other is offered where
    the log's release is one that reads it, never for a release before it nor for SGLang."""
    banner = "(APIServer pid=1) INFO 07-16 10:00:00 [utils.py:299] vLLM API server version {}\n"
    newer = diagnose_text(banner.format("0.25.1") + _COMMAND + _TRACED + "\n")
    assert "VLLM_USE_V2_MODEL_RUNNER=1" in [f.text for f in newer.fixes]
    older = diagnose_text(banner.format("0.11.0") + _COMMAND + _TRACED + "\n")
    assert "VLLM_USE_V2_MODEL_RUNNER=1" not in [f.text for f in older.fixes]
    # where the log says it ran the V2 runner, the other is V1
    ran_v2 = diagnose_text(
        banner.format("0.25.1")
        + "(EngineCore pid=9) INFO 07-16 10:00:05 [gpu_worker.py:360] Using V2 Model Runner\n"
        + _COMMAND
        + _TRACED
        + "\n"
    )
    assert "VLLM_USE_V2_MODEL_RUNNER=0" in [f.text for f in ran_v2.fixes]
    sglang = diagnose_text(
        "python3 -m sglang.launch_server --model-path m --speculative-algorithm EAGLE\n"
        + _EAGER
        + "\n"
    )
    assert "speculative" in sglang.fixes[0].text
    assert all("VLLM_" not in f.text for f in sglang.fixes)
