"""doctor's answer when the checkpoint given as the model is a LoRA adapter's weights
(patcher/advice/lora_adapter.py): PEFT's lora_A/lora_B names, read by the engines only on their
LoRA path (vLLM's parse_fine_tuned_lora_name, vllm/lora/utils.py)."""

from __future__ import annotations

from patcher.advice.doctor import diagnose_text

# a model's load_weights over the adapter's first weight (vLLM up to 0.14 quotes the name,
# from 0.15 it is bare and followed by the layer's parameters)
KEYED = "KeyError: 'base_model.model.model.layers.0.self_attn.qkv_proj.lora_A.weight'"
QUOTED = (
    "ValueError: There is no module or parameter named "
    "'base_model.model.model.layers.0.mlp.down_proj.lora_A' in Qwen2ForCausalLM"
)
BARE = (
    "ValueError: There is no module or parameter named "
    "base_model.model.model.embed_tokens.lora_embedding_B in Qwen2ForCausalLM. The available "
    "parameters belonging to model.embed_tokens are: {'weight'}"
)
LORA_LINES = [KEYED, QUOTED, BARE]
PREFIX = "(EngineCore_DP0 pid=1) ERROR 01-01 10:00:00 [core.py:1] "


def test_an_adapter_given_as_the_model_is_served_beside_its_base_or_merged() -> None:
    for line in LORA_LINES:
        found = diagnose_text(PREFIX + line + "\n")
        assert found.code == "lora-adapter-as-model", line
        assert (
            found.fixes[0].text
            == "--model BASE_MODEL --enable-lora --lora-modules NAME=ADAPTER_DIR"
        )
        # it holds placeholders: told as advice, never as a flag to paste as printed
        assert found.fixes[0].kind == "advice"
        assert "merge" in found.fixes[1].text
    # SGLang serves it with its own flag
    sglang = diagnose_text(
        "[2025-01-01 10:00:00] server_args=ServerArgs(model_path='/adapter')\n" + KEYED + "\n"
    )
    assert sglang.fixes[0].text == "--model BASE_MODEL --lora-paths NAME=ADAPTER_DIR"


def test_a_model_weight_that_merely_names_lora_is_not_an_adapter() -> None:
    found = diagnose_text(PREFIX + "KeyError: 'model.layers.0.self_attn.lora_scale'\n")
    assert found.code != "lora-adapter-as-model"
    plain = diagnose_text(
        PREFIX + "ValueError: There is no module or parameter named 'lm_head.weight' in X\n"
    )
    assert plain.code != "lora-adapter-as-model"
