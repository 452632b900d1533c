"""vLLM's weight loader finding a tensor the model it built has no place for (``There is no
module or parameter named 'X' in ARCH``, models/utils.py): what the name says decides the
answer (patcher/advice/unknown_weights.py)."""

from __future__ import annotations

import pytest

from patcher.advice.doctor import diagnose_text
from tests.conftest import SNAPSHOTS

BANNER = "INFO 07-18 10:29:00 [api_server.py:1] vLLM API server version {}\n"


def test_mistral_format_weights_read_through_config_json_get_the_mistral_formats() -> None:
    found = diagnose_text(
        BANNER.format("0.10.1")
        + "ValueError: There is no module or parameter named 'mm_whisper_embeddings' in "
        "LlamaForCausalLM\n"
    )
    assert found.code == "unknown-weight"
    assert found.fixes[0].kind == "flag"
    assert found.fixes[0].text == (
        "--config-format mistral --load-format mistral --tokenizer-mode mistral"
    )
    assert "params.json" in (found.fixes[0].note or "")
    assert "architectures" in found.fixes[1].text


def test_a_release_without_mistral_s_load_format_is_not_told_to_use_it() -> None:
    found = diagnose_text(
        BANNER.format("0.4.3")
        + "ValueError: There is no module or parameter named 'vision_encoder.x' in "
        "LlamaForCausalLM\n"
    )
    assert found.code == "unknown-weight"
    assert [f.kind for f in found.fixes] == ["advice"]


def test_the_transformers_backend_lacking_a_parameter_is_an_engine_gap() -> None:
    # 0.15 on: the name unquoted, the layer's own parameters after it
    found = diagnose_text(
        BANNER.format("0.28.0") + "ValueError: There is no module or parameter named "
        "model.language_model.layers.0.self_attn.k_conv1d in "
        "TransformersMultiModalMoEForCausalLM. The available parameters belonging to "
        "model.language_model.layers.0.self_attn (Glm5NextTextLinearAttention) are: "
        "{'model.language_model.layers.0.self_attn.v_proj.weight'}\n"
    )
    assert found.code == "unknown-weight"
    assert [f.kind for f in found.fixes] == ["advice"]
    assert found.fixes[0].text.startswith("no config fix")
    assert "k_conv1d" in found.cause


@pytest.mark.parametrize(
    "name", ["model.layers.0.mlp.experts.w13_weight_scale", "model.layers.3.mlp.qweight"]
)
def test_a_quantized_tensor_is_the_quantization_config_s_not_the_architecture_s(
    name: str,
) -> None:
    found = diagnose_text(
        BANNER.format("0.16.0")
        + f"ValueError: There is no module or parameter named '{name}' in Qwen3MoeForCausalLM\n"
    )
    assert found.code == "unknown-weight"
    assert "quantized tensor" in found.cause
    assert not any("mistral" in f.text for f in found.fixes)


def test_an_lm_head_scale_keeps_its_own_answer() -> None:
    found = diagnose_text(
        BANNER.format("0.16.0") + "ValueError: There is no module or parameter named "
        "'lm_head.input_scale' in LlamaForCausalLM\n"
    )
    assert found.code == "excluded-quantized-module"


def test_mistral_s_own_tensor_names_are_its_consolidated_file_read_beside_the_shards() -> None:
    sglang = diagnose_text(
        "[2024-06-09 10:00:01] server_args=ServerArgs(model_path='Mistral-7B-Instruct-v0.3')\n"
        "KeyError: 'layers.0.attention.wk.weight'\n"
    )
    assert sglang.code == "mistral-weights"
    assert [f.text for f in sglang.fixes][0] == "pip install 'sglang>=0.4.0'"
    assert "consolidated" in sglang.fixes[-1].text
    # a transformers-format name is not Mistral's
    other = diagnose_text("KeyError: 'model.layers.0.self_attn.q_proj.weight'\n")
    assert other.code != "mistral-weights"


def test_the_releases_that_load_only_the_index_s_files_are_the_recording_s() -> None:
    from patcher.advice.unknown_weights import _INDEX_ONLY

    rows = [
        line.split()
        for line in (SNAPSHOTS / "engines" / "index-only-loading.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    for engine, first in _INDEX_ONLY.items():
        having = [(release, has) for name, release, has in rows if name == engine]
        assert having[0] == (first, "yes")  # the first release read
        assert all(has == "yes" for _, has in having)  # and every later one


# One line per rule (test_doctor's marker test takes them with its own cases).
WEIGHT_LINES = ["KeyError: 'lm_head.weight'"]


def _lm_head_log(model: str, release: str) -> str:
    site = "/venv/lib/python3.10/site-packages/vllm/model_executor"
    return (
        f"INFO 03-11 18:20:00 api_server.py:1] vLLM API server version {release}\n"
        "Traceback (most recent call last):\n"
        f'  File "{site}/model_loader.py", line 86, in get_model\n'
        "    model.load_weights(model_config.model, model_config.download_dir,\n"
        f'  File "{site}/models/{model}.py", line 339, in load_weights\n'
        "    param = params_dict[name]\n"
        "KeyError: 'lm_head.weight'\n"
    )


def test_a_saved_lm_head_of_a_tied_model_names_the_release_whose_loader_passes_over_it() -> None:
    from patcher.advice.catalogue import feature_releases

    skipping = feature_releases("vllm", "skips_lm_head", "gemma")  # read with the model classes
    assert skipping
    found = diagnose_text(_lm_head_log("gemma", "0.3.3"))
    assert found.code == "tied-lm-head"
    assert found.fixes[0].text == f"pip install 'vllm>={skipping[0]}'"
    assert "without lm_head.weight" in found.fixes[-1].text


def test_a_model_file_no_release_read_passes_over_it_gets_only_the_checkpoint_s_way() -> None:
    found = diagnose_text(_lm_head_log("nosuchmodel", "0.3.3"))
    assert found.code == "tied-lm-head"
    assert [f.kind for f in found.fixes] == ["advice"]
