"""doctor's answer when vLLM reads a bitsandbytes pre-quantized checkpoint with a loader that
does not know bitsandbytes' quantization-state weights (patcher/advice/bnb_checkpoint.py)."""

from __future__ import annotations

from patcher.advice.doctor import diagnose_text

# vLLM's llama.py load_weights looking a 4-bit checkpoint's state up among its parameters
# (0.6.x, engine.py logging the KeyError it caught), and an 8-bit checkpoint's
FOUR_BIT = "KeyError: 'layers.10.mlp.down_proj.weight.absmax'"
EIGHT_BIT = "KeyError: 'model.layers.0.self_attn.q_proj.SCB'"
NF4_STATE = "KeyError: 'layers.3.self_attn.o_proj.weight.quant_state.bitsandbytes__nf4'"
BNB_LINES = [FOUR_BIT, EIGHT_BIT, NF4_STATE]

BANNER = "INFO 12-04 11:25:01 api_server.py:585] vLLM API server version 0.6.4.post1\n"


def _engine_log(error: str) -> str:
    return (
        BANNER + "INFO 12-04 11:25:20 weight_utils.py:243] Using model weights format "
        "['*.safetensors']\n"
        f"ERROR 12-04 11:26:27 engine.py:366] {error.removeprefix('KeyError: ')}\n"
        "ERROR 12-04 11:26:27 engine.py:366] Traceback (most recent call last):\n"
        'ERROR 12-04 11:26:27 engine.py:366]   File "/venv/lib/python3.12/site-packages/vllm/'
        'model_executor/models/qwen2.py", line 401, in load_weights\n'
        "ERROR 12-04 11:26:27 engine.py:366]     param = params_dict[name]\n"
        f"ERROR 12-04 11:26:27 engine.py:366] {error}\n"
    )


def test_a_quantization_state_weight_unread_names_the_bitsandbytes_loader() -> None:
    for error in BNB_LINES:
        found = diagnose_text(_engine_log(error))
        assert found.code == "bnb-prequantized-checkpoint", error
        assert [f.text for f in found.fixes] == [
            "--quantization bitsandbytes --load-format bitsandbytes"
        ]
        assert error.split("'")[1] in found.cause


def test_a_plain_weight_missing_is_not_said_to_be_bitsandbytes() -> None:
    found = diagnose_text(_engine_log("KeyError: 'layers.0.mlp.down_proj.weight'"))
    assert found.code != "bnb-prequantized-checkpoint"
    # a name that merely holds the letters of a suffix inside a word is not a state either
    other = diagnose_text(_engine_log("KeyError: 'model.embed_tokens.weight'"))
    assert other.code != "bnb-prequantized-checkpoint"


def test_sglang_s_loader_is_not_answered_with_vllm_s_flags() -> None:
    found = diagnose_text(
        "[2025-01-07 10:00:00] server_args=ServerArgs(model_path='unsloth/x-bnb-4bit')\n"
        + FOUR_BIT
        + "\n"
    )
    assert found.code != "bnb-prequantized-checkpoint"
    assert not any("--load-format bitsandbytes" in f.text for f in found.fixes)
