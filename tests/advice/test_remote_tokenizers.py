"""doctor on a model's own slow tokenizer class written for transformers before 4.34, which
reads its own attribute inside transformers' tokenizer ``__init__``
(patcher/advice/remote_tokenizers.py; the reading in
snapshots/engines/slow-tokenizer-init-transformers.txt)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from patcher.advice.doctor import diagnose_text
from patcher.advice.remote_tokenizers import ADDS_TOKENS_SINCE

READING = (
    Path(__file__).resolve().parents[2] / "snapshots/engines/slow-tokenizer-init-transformers.txt"
)
SITE = "/usr/local/lib/python3.10/dist-packages"
# One line per rule (test_doctor's marker test takes them with its own cases).
REMOTE_TOKENIZER_LINES = ["AttributeError: 'BaichuanTokenizer' object has no attribute 'sp_model'"]
HUB = "/root/.cache/huggingface/modules/transformers_modules"


def _reading() -> dict[str, bool]:
    rows = [r.split("\t") for r in READING.read_text().splitlines() if r and r[0] != "#"]
    return {release: reading.endswith(": yes") for release, _, reading in rows}


def test_the_release_named_is_the_first_read_whose_init_adds_the_tokens() -> None:
    reading = _reading()
    before = [r for r in reading if Version(r) < Version(ADDS_TOKENS_SINCE)]
    since = [r for r in reading if Version(r) >= Version(ADDS_TOKENS_SINCE)]
    assert before and since
    assert not any(reading[r] for r in before)
    assert all(reading[r] for r in since)


def _log(cls: str, attribute: str, base: str, prefix: str = "") -> str:
    lines = [
        "Traceback (most recent call last):",
        f'  File "{SITE}/transformers/tokenization_utils_base.py", line 2256, in _from_pretrained',
        "    tokenizer = cls(*init_inputs, **init_kwargs)",
        f'  File "{HUB}/Model-7B/tokenization_model.py", line 75, in __init__',
        "    super().__init__(",
        f'  File "{SITE}/transformers/{base}", line 366, in __init__',
        "    self._add_tokens(self.all_special_tokens_extended, special_tokens=True)",
        f'  File "{HUB}/Model-7B/tokenization_model.py", line 105, in vocab_size',
        f"    return self.{attribute}.get_piece_size()",
        f"AttributeError: '{cls}' object has no attribute '{attribute}'",
    ]
    return "".join(f"{prefix}{line}\n" for line in lines)


@pytest.mark.parametrize(
    ("cls", "attribute", "base", "prefix"),
    [
        ("BaichuanTokenizer", "sp_model", "tokenization_utils.py", ""),
        ("ChatGLMTokenizer", "tokenizer", "tokenization_utils.py", "[rank0]: "),
        # transformers 5's slow-tokenizer base
        ("CodeGen25Tokenizer", "encoder", "tokenization_python.py", ""),
    ],
)
def test_the_model_s_own_tokenizer_reading_its_attribute_early_is_its_newer_code(
    cls: str, attribute: str, base: str, prefix: str
) -> None:
    found = diagnose_text(_log(cls, attribute, base, prefix))
    assert found.code == "remote-tokenizer"
    assert f"self.{attribute} before it sets it" in found.cause
    assert "tokenization_model.py" in found.fixes[0].text
    assert found.fixes[1].text == f"pip install 'transformers<{ADDS_TOKENS_SINCE}'"


def test_a_tokenizer_attribute_missing_outside_transformers_init_is_not_this_answer() -> None:
    # the engine's own code reading a tokenizer attribute: no frame of transformers' __init__
    log = (
        "Traceback (most recent call last):\n"
        f'  File "{SITE}/vllm/transformers_utils/tokenizer.py", line 90, in get_cached_tokenizer\n'
        "    tokenizer.all_special_tokens_extended\n"
        "AttributeError: 'Qwen2Tokenizer' object has no attribute 'all_special_tokens_extended'\n"
    )
    assert diagnose_text(log).code != "remote-tokenizer"
