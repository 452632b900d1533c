"""doctor on Mistral's own format asked of a Hugging Face-format checkpoint
(patcher/advice/mistral_format.py), against vLLM's loader as read from its wheels
(snapshots/engines/mistral-params-vllm.txt)."""

from __future__ import annotations

import re

import pytest

from patcher.advice.doctor import diagnose_text
from tests.conftest import SNAPSHOTS

READING = (SNAPSHOTS / "engines" / "mistral-params-vllm.txt").read_text()
# One line per rule (test_doctor's marker test takes them with its own cases).
MISTRAL_LINES = [
    "ValueError: Failed to load mistral 'params.json' config for model m. Please check if the "
    "model is a mistral-format model and if the config file exists."
]


def _assert_line(release: str) -> tuple[int, str]:
    """The line number and source of the release's assert in load_params_config."""
    found = re.search(rf"^{re.escape(release)} \S+:(\d+):\s+(assert .*)$", READING, re.M)
    assert found is not None, release
    return int(found.group(1)), found.group(2)


@pytest.mark.parametrize("release", ["0.6.6.post1", "0.7.3"])
def test_the_older_releases_bare_assert_is_the_format_not_a_missing_file(release: str) -> None:
    line, source = _assert_line(release)
    log = (
        '  File "/venv/lib/python3.12/site-packages/vllm/transformers_utils/config.py", '
        f"line {line}, in load_params_config\n    {source}\n"
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\nAssertionError\n"
    )
    found = diagnose_text(log)
    assert "--config-format mistral" in found.cause
    assert found.fixes[0].text.startswith("leave out --config-format mistral")


def test_the_newer_releases_words_get_the_same_answer_not_a_download() -> None:
    assert "Failed to load mistral" in READING  # the message 0.8.5.post1 raises in its place
    found = diagnose_text(MISTRAL_LINES[0] + "\n")
    assert found.code == "mistral-format"
    assert all("download" not in f.text for f in found.fixes)


def test_another_assert_in_the_same_file_is_not_this_answer() -> None:
    log = (
        '  File "/venv/lib/python3.12/site-packages/vllm/transformers_utils/config.py", '
        "line 300, in get_config\n    assert config is not None\nAssertionError\n"
    )
    assert "--config-format mistral" not in diagnose_text(log).cause
