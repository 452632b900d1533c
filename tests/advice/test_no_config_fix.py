"""The families with no config fix (patcher/advice/no_config_fix.py): what would help where
no checkpoint edit or flag does. Logs written from templates read from the engines' source."""

from __future__ import annotations

from patcher.advice import catalogue
from patcher.advice.doctor import diagnose_text
from tools.audit_answers import log_line


def test_no_config_file_readable_at_the_model_path_is_access_or_the_path() -> None:
    # vLLM's get_config (0.6, 0.7: "No supported config format found in X"; later "Could not
    # detect config format"): neither config.json nor params.json readable there. A gated Hub
    # repository reads as missing without a token.
    for phrase in ("No supported config format found in", "Could not detect config format"):
        template = next(t for t in catalogue.templates("vllm") if phrase in t.text)
        found = diagnose_text(log_line(template, 0))
        assert found.code == "checkpoint-files", phrase
        assert found.fixes[0].kind == "env" and found.fixes[0].text.startswith("HF_TOKEN=")


def test_an_unsupported_config_format_value_is_not_a_missing_file() -> None:
    # "Unsupported config format: X. Supported formats are ...": a --config-format value
    template = next(
        t for t in catalogue.templates("vllm") if t.text.startswith("Unsupported config format")
    )
    found = diagnose_text(log_line(template, 0))
    assert not any("HF_TOKEN" in f.text for f in found.fixes)


def test_a_docker_compose_prefix_is_not_part_of_the_error() -> None:
    found = diagnose_text(
        "vllm-server  | INFO 03-02 09:16:53 api_server.py:768] vLLM API server version 0.7.3\n"
        "vllm-server  | ValueError: No supported config format found in org/model\n"
    )
    assert found.error == "ValueError: No supported config format found in org/model"
    assert found.engine_version == "0.7.3"


def test_a_lora_path_without_an_adapter_is_told_what_the_directory_must_hold() -> None:
    # vLLM 0.7 to 0.17's worker_manager.py, for --lora-modules NAME=PATH
    found = diagnose_text(
        'ERROR 12-15 18:57:10 [core.py:918] ValueError: Loading lora ["table_qc failed: No '
        'adapter found for /data/out/checkpoint-57"]\n'
    )
    assert found.family is not None and found.family.name == "checkpoint-files"
    assert "adapter_config.json" in found.fixes[0].text


def test_a_gguf_model_type_no_release_maps_is_no_config_fix() -> None:
    from patcher.advice.doctor import diagnose_text

    found = diagnose_text("RuntimeError: Unknown gguf model_type: notamodel_moe\n")
    assert found.code == "gguf-model-type"
    assert [f.kind for f in found.fixes] == ["advice"]
    assert found.fixes[0].text.startswith("no config fix")


def test_weights_missing_from_a_hub_cache_snapshot_name_the_download_that_fills_it() -> None:
    found = diagnose_text(
        "(Worker pid=212) ERROR 08-02 10:14:03 [multiproc_executor.py:944] RuntimeError: Cannot "
        "find any model weights with `/root/.cache/huggingface/hub/models--org--Big-Model-0731/"
        "snapshots/7872f01c`\n"
    )
    assert found.code == "checkpoint-files"
    assert found.fixes[0].text == "hf download org/Big-Model-0731 --revision 7872f01c"
    elsewhere = diagnose_text("RuntimeError: Cannot find any model weights with `/models/m`\n")
    assert not any(f.text.startswith("hf download") for f in elsewhere.fixes)
