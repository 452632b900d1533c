"""A model argument that is no checkpoint folder where the engine runs reaches huggingface_hub
as a Hub name, which refuses it (``validate_repo_id``; transformers' ``Incorrect
path_or_model_id``): the refused name says which mistake it was
(patcher/advice/hub_names.py)."""

from __future__ import annotations

import pytest

from patcher.advice.doctor import diagnose_text

FORM = (
    "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
    "'namespace/repo_name': '{}'. Use `repo_type` argument if needed."
)


@pytest.mark.parametrize(
    "line",
    [
        FORM.format("/models/"),
        "OSError: Incorrect path_or_model_id: '/data1/models/deepseek'. Please provide either "
        "the path to a local folder or the repo_id of a model on the Hub.",
    ],
)
def test_a_path_that_is_no_checkpoint_here_is_told_where_the_server_looks(line: str) -> None:
    found = diagnose_text(line + "\n")
    assert found.code == "hub-repo-id"
    assert "no checkpoint folder where the engine runs" in found.cause
    assert "mounted" in found.fixes[0].text


def test_a_hub_cache_folder_is_told_its_snapshot_or_the_hub_name() -> None:
    found = diagnose_text(
        FORM.format("/my/huggingface/hub/models--deepseek-ai--DeepSeek-R1-Distill-Qwen-1.5B") + "\n"
    )
    assert found.code == "hub-repo-id"
    assert found.fixes[0].text.endswith(
        "models--deepseek-ai--DeepSeek-R1-Distill-Qwen-1.5B/snapshots/REVISION"
    )
    assert found.fixes[1].text == (
        "or the Hub name deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B, with HF_HOME=/my/huggingface"
    )


def test_a_hub_name_with_its_branch_gets_the_revision_flag_and_the_download() -> None:
    found = diagnose_text(
        "[2024-03-14 10:00:00] server_args=ServerArgs(model_path='x')\n"
        "huggingface_hub.utils._validators.HFValidationError: Repo id must use alphanumeric "
        "chars or '-', '_', '.', '--' and '..' are forbidden, '-' and '.' cannot start or end "
        "the name, max length is 96: 'TheBloke/Mistral-7B-v0.1-GPTQ:gptq-4bit-32g-actorder_True'.\n"
    )
    assert found.code == "hub-repo-id"
    texts = [f.text for f in found.fixes]
    assert texts[0] == (
        "give the model as TheBloke/Mistral-7B-v0.1-GPTQ and the branch as --revision "
        "gptq-4bit-32g-actorder_True"
    )
    assert "hf download TheBloke/Mistral-7B-v0.1-GPTQ --revision" in texts[1]


def test_a_plain_bad_name_is_not_answered() -> None:
    # a Hub name with a character the Hub refuses, not a path or a branch: nothing to say
    found = diagnose_text(
        "HFValidationError: Repo id must use alphanumeric chars or '-', '_', '.': 'my model'.\n"
    )
    assert found.code != "hub-repo-id"
