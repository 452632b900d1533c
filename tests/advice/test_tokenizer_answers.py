"""doctor's answer to a tokenizer that does not load where the engine's own message names the
tokenizer to load instead (SGLang's get_tokenizer, read from its wheels; vLLM's before 0.2):
that tokenizer, as the flag of the log's engine, and not --trust-remote-code, which the
catalogue once offered for it (the recorder had joined two messages of one function)."""

from __future__ import annotations

from pathlib import Path

from patcher.advice import catalogue
from patcher.advice.doctor import diagnose_text


def _llama_template() -> catalogue.Template:
    (template,) = [
        t for t in catalogue.templates("sglang") if "instead of the original tokenizer" in t.text
    ]
    return template


def test_the_catalogue_has_sglang_s_message_alone() -> None:
    template = _llama_template()
    assert "trust_remote_code" not in template.text
    assert template.text.startswith("Failed to load the tokenizer. If you are using a LLaMA V1")


def test_sglang_s_message_names_sglang_s_tokenizer_flag() -> None:
    template = _llama_template()
    line = "".join(
        part if index % 2 == 0 else "hf-internal-testing/llama-tokenizer"
        for index, part in enumerate(template.parts)
    )
    log = (
        "[2025-01-05 10:00:01] server_args=ServerArgs(model_path='/m', tokenizer_path='/m')\n"
        f"[2025-01-05 10:00:02 TP0] RuntimeError: {line}\n"
    )
    found = diagnose_text(log)
    assert found.code == "tokenizer"
    assert [f.text for f in found.fixes] == ["--tokenizer-path hf-internal-testing/llama-tokenizer"]


def test_vllm_s_old_wording_in_a_vllm_traceback_names_vllm_s_flag() -> None:
    found = diagnose_text(
        '  File "/env/lib/python3.8/site-packages/vllm/engine/llm_engine.py", line 80, in '
        "__init__\n"
        "    self.tokenizer = get_tokenizer(\n"
        '  File "/env/lib/python3.8/site-packages/vllm/transformers_utils/tokenizer.py", '
        "line 42, in get_tokenizer\n"
        "    raise RuntimeError(err_msg) from e\n"
        "RuntimeError: Failed to load the tokenizer. If you are using a LLaMA-based model, use "
        "'hf-internal-testing/llama-tokenizer' instead of the original tokenizer.\n"
    )
    assert [f.text for f in found.fixes] == ["--tokenizer hf-internal-testing/llama-tokenizer"]
    assert not any("trust-remote-code" in f.text for f in found.fixes)


def test_the_line_alone_names_both_engines_flags_vllm_s_first() -> None:
    found = diagnose_text(
        "RuntimeError: Failed to load the tokenizer. If you are using a LLaMA-based model, use "
        "'hf-internal-testing/llama-tokenizer' instead of the original tokenizer."
    )
    assert [f.text for f in found.fixes] == [
        "--tokenizer hf-internal-testing/llama-tokenizer",
        "--tokenizer-path hf-internal-testing/llama-tokenizer",
    ]


def test_a_custom_tokenizer_still_gets_trust_remote_code() -> None:
    found = diagnose_text(
        "RuntimeError: Failed to load the tokenizer. If the tokenizer is a custom tokenizer not "
        "yet available in the HuggingFace transformers library, consider setting "
        "`trust_remote_code=True` in LLM or using the `--trust-remote-code` flag in the CLI."
    )
    assert found.fixes and found.fixes[0].text == "--trust-remote-code"


SNAPSHOTS = Path(__file__).resolve().parents[2] / "snapshots" / "engines"


def _mistral_reading() -> dict[str, bool]:
    """Each vLLM release read: whether get_tokenizer loads MistralTokenizer only under
    ``tokenizer_mode == "mistral"`` (snapshots/engines/mistral-tokenizer-mode-vllm.txt)."""
    text = (SNAPSHOTS / "mistral-tokenizer-mode-vllm.txt").read_text()
    rows = [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]
    return {row[0]: row[1].endswith("=yes") for row in rows}


def _mistral_none() -> catalogue.Template:
    (template,) = [
        t
        for t in catalogue.templates("vllm")
        if "Make sure that a Mistral tokenizer is present" in t.text and "`" in t.text
    ]
    return template


def test_no_mistral_tokenizer_file_is_leaving_out_the_mistral_mode() -> None:
    template = _mistral_none()
    # the releases that raise it load the Mistral tokenizer only where the mode asks for it
    reading = _mistral_reading()
    assert all(reading[r] for r in template.releases)
    holes = iter(["0", r"^tokenizer\.model\.v.*$|^tekken\.json$", "['model.gguf', 'config.json']"])
    line = "".join(p if i % 2 == 0 else next(holes) for i, p in enumerate(template.parts))
    found = diagnose_text(
        f"INFO 04-26 03:12:40 [api_server.py:1043] vLLM API server version 0.8.5\nOSError: {line}\n"
    )
    assert found.code == "tokenizer"
    assert [f.text for f in found.fixes] == [
        "leave out --tokenizer-mode mistral, and --config-format mistral and --load-format "
        "mistral with it"
    ]
    # not the tokenizer class or the transformers, which a Hugging Face tokenizer's failure gets
    assert not any(f.kind == "transform" for f in found.fixes)
