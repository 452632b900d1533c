"""The checkpoint's files not had from the Hub: gated, misnamed or private, a revision that is
not there, offline with nothing cached. In transformers' words (utils/hub.py, read per
release) and in huggingface_hub's own errors (patcher/advice/hub_access.py)."""

from __future__ import annotations

import pytest

from patcher.advice.catalogue import templates
from patcher.advice.doctor import diagnose_text
from patcher.advice.families import family_of


def test_transformers_hub_messages_are_read_and_in_the_hub_family() -> None:
    hub = [t for t in templates("transformers") if t.file == "transformers/utils/hub.py"]
    assert any("gated repo" in t.text for t in hub)
    assert {family_of(t).name for t in hub} == {"hub-access"}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("line", "says", "fix"),
    [
        (
            "OSError: You are trying to access a gated repo.\nMake sure to have access to it at "
            "https://huggingface.co/meta-llama/Llama-3.1-8B.\n401 Client Error.",
            "the repository is gated",  # its name is on the message's next line
            "HF_TOKEN=hf_...",
        ),
        (
            "OSError: meta-llama/Llama-2-7b is not a local folder and is not a valid model "
            "identifier listed on 'https://huggingface.co/models'",
            "no repository meta-llama/Llama-2-7b",
            "HF_TOKEN=hf_...",
        ),
        (
            "OSError: We couldn't connect to 'https://huggingface.co' to load this file, "
            "couldn't find it in the cached files and it looks like Qwen/Qwen2-7B is not the "
            "path to a directory containing a file named config.json.",
            "not in the Hub cache",
            "hf download REPO --local-dir DIR",
        ),
        (
            "huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in "
            "the disk cache and outgoing traffic has been disabled.",
            "not in the Hub cache",
            "HF_HUB_OFFLINE",
        ),
        (
            "huggingface_hub.errors.RevisionNotFoundError: 404 Client Error. Revision Not Found "
            "for url: https://huggingface.co/api/models/Qwen/Qwen2-7B/revision/v9.",
            "no branch, tag or commit",
            "https://huggingface.co/Qwen/Qwen2-7B/tree/main",
        ),
    ],
)
def test_each_way_the_hub_refuses_gets_its_way_out(line: str, says: str, fix: str) -> None:
    found = diagnose_text(line + "\n")
    assert found.code == "hub-access"
    assert says in found.cause
    assert any(fix in f.text for f in found.fixes), [f.text for f in found.fixes]


def test_a_folder_without_config_json_and_a_missing_shard_are_told_apart() -> None:
    folder = diagnose_text(
        "OSError: /models/qwen does not appear to have a file named config.json. Checkout "
        "'https://huggingface.co//models/qwen/tree/None' for available files.\n"
    )
    assert folder.code == "hub-access"
    assert "holds no config.json" in folder.cause
    shard = diagnose_text(
        "OSError: Qwen/Qwen2-7B does not appear to have a file named "
        "model-00002-of-00004.safetensors which is required according to the checkpoint index.\n"
    )
    assert shard.fixes[0].text == (
        "download it again: hf download Qwen/Qwen2-7B model-00002-of-00004.safetensors "
        "--local-dir DIR"
    )


def test_mistral_s_format_flags_go_only_to_a_release_that_has_them() -> None:
    line = (
        "OSError: /models/m does not appear to have a file named config.json. Checkout "
        "'https://huggingface.co//models/m/tree/None' for available files.\n"
    )
    flags = "--config-format mistral --load-format mistral --tokenizer-mode mistral"
    vllm = diagnose_text("INFO 01-01 [api_server.py:1] vLLM API server version 0.16.0\n" + line)
    assert flags in [f.text for f in vllm.fixes]
    sglang = diagnose_text("[2025-01-01 10:00:00] server_args=ServerArgs(model_path='m')\n" + line)
    assert sglang.code == "hub-access"
    assert flags not in [f.text for f in sglang.fixes]  # SGLang's parser has no such flags
    old = diagnose_text("INFO 01-01 [api_server.py:1] vLLM API server version 0.4.3\n" + line)
    assert flags not in [f.text for f in old.fixes]  # 0.4.3 has no --load-format mistral
