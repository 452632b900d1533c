"""A file the engine reads as JSON that is not: transformers' "is not a valid JSON file" names
it, and its name says whether it is a config with a byte-order mark or no config at all (a
GGUF file given as the model; patcher/advice/json_files.py). And an engine's own config class
that transformers now ships itself (engine_rules ``transformers-class-clash``)."""

from __future__ import annotations

from patcher.advice.doctor import diagnose_text

NOT_JSON = "OSError: It looks like the config file at '{}' is not a valid JSON file.\n"


def test_a_gguf_file_on_a_release_that_reads_no_gguf_gets_the_releases_that_do() -> None:
    # vLLM reads GGUF from 0.5.5 (--quantization gguf) to 0.23.0; 0.24.0 dropped it
    found = diagnose_text(NOT_JSON.format("/m/tinyllama-1.1b-chat-v1.0.Q4_0.gguf"))
    assert found.code == "unreadable-json"
    assert found.fixes[0].text == "pip install 'vllm>=0.5.5,<0.24.0'"
    assert not any("strip-bom" in f.text for f in found.fixes)


def test_a_file_that_is_no_config_is_told_the_gguf_suffix_or_the_folder() -> None:
    found = diagnose_text(NOT_JSON.format("/models/ollama/granite-code:latest"))
    assert found.code == "unreadable-json"
    assert [f.kind for f in found.fixes] == ["advice"]
    assert ".gguf suffix" in found.fixes[0].text


def test_a_config_json_keeps_the_byte_order_mark_answer() -> None:
    found = diagnose_text(NOT_JSON.format("/m/kimi/config.json"), checkpoint="/m/kimi")
    assert found.fixes[0].text == "patcher apply /m/kimi strip-bom"


def test_a_config_class_transformers_now_ships_names_the_engine_written_for_it_then_the_older() -> (
    None
):
    # transformers 4.49.0 is the first release read whose CONFIG_MAPPING_NAMES has it; SGLang
    # 0.4.6 is the first release read requiring a transformers from 4.49.0 on (==4.51.1): a
    # model that needs the newer transformers (Gemma 3 needs 4.50) starts only that way
    found = diagnose_text(
        "ValueError: '<class 'sglang.srt.configs.qwen2_5_vl_config.Qwen2_5_VLConfig'>' is "
        "already used by a Transformers model.\n"
    )
    assert found.code == "transformers-class-clash"
    assert [f.text for f in found.fixes[:2]] == [
        "pip install 'sglang>=0.4.6'",
        "pip install 'transformers<4.49.0'",
    ]
    assert "4.49.0" in found.cause


def test_a_class_every_read_transformers_ships_gets_no_invented_bound() -> None:
    found = diagnose_text(
        "ValueError: '<class 'myengine.configs.LlamaConfig'>' is already used by a "
        "Transformers model.\n"
    )
    assert found.code == "transformers-class-clash"
    assert [f.text for f in found.fixes] == ["pip check"]
