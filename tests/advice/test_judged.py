"""doctor's fixes judged against the checkpoint (patcher/advice/judged.py): the model type an
engine's class for the checkpoint's architecture reads, and remote code the files do not ship.
The classes and config types come from the catalogue (tools/read_model_configs.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patcher.advice import catalogue
from patcher.advice.doctor import diagnose
from patcher.advice.transformers_rules import MODEL_TYPE_OF_CLASS
from patcher.engines.registries import architectures

UNKNOWN = (
    "ValueError: The checkpoint you are trying to load has model type `{}` but Transformers "
    "does not recognize this architecture. This could be because of an issue with the "
    "checkpoint, or because your version of Transformers is out of date\n"
)


def _class_with_known_type() -> tuple[str, str, str]:
    """An SGLang model class written for a config class whose model type transformers knows:
    the class, the config class, the type."""
    types, known = catalogue.config_types(), catalogue.model_types()
    for entry in sorted(catalogue.features_of("sglang", "model_config")):
        name, config = entry.split("=", 1)
        wanted = {
            types[c]
            for e in catalogue.features_of("sglang", "model_config")
            if e.split("=", 1)[0] == name
            for c in [e.split("=", 1)[1]]
            if c in types
        }
        if name.startswith("Llava") and len(wanted) == 1 and wanted <= set(known):
            return name, config, wanted.pop()
    pytest.fail("no SGLang class read with a config class of a known model type")


def _checkpoint(tmp_path: Path, config: dict[str, object]) -> Path:
    root = tmp_path / "ckpt"
    root.mkdir()
    (root / "config.json").write_text(json.dumps(config))
    return root


def test_a_type_no_transformers_knows_is_not_said_to_be_beyond_a_config_edit(
    tmp_path: Path,
) -> None:
    log = tmp_path / "server.log"
    log.write_text(UNKNOWN.format("llava_mistral"))
    found = diagnose(log)
    assert "no config edit helps" not in found.cause
    assert any(f.text == MODEL_TYPE_OF_CLASS for f in found.fixes)


def test_the_checkpoint_names_the_type_its_architectures_class_reads(tmp_path: Path) -> None:
    name, config, wanted = _class_with_known_type()
    log = tmp_path / "server.log"
    log.write_text(UNKNOWN.format("llava_variant_x"))
    root = _checkpoint(tmp_path, {"architectures": [name], "model_type": "llava_variant_x"})
    found = diagnose(log, checkpoint=root)
    texts = [f.text for f in found.fixes]
    assert f"patcher set {root} config.json /model_type '\"{wanted}\"'" in texts
    assert config in (
        found.fixes[texts.index(next(t for t in texts if "/model_type" in t))].note or ""
    )
    # the files ship no code (no auto_map): --trust-remote-code is dropped
    assert "--trust-remote-code" not in texts


def test_remote_code_the_checkpoint_ships_keeps_the_flag(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(UNKNOWN.format("my_model"))
    root = _checkpoint(
        tmp_path,
        {
            "architectures": ["MyModelForCausalLM"],
            "model_type": "my_model",
            "auto_map": {"AutoConfig": "configuration_my.MyConfig"},
        },
    )
    found = diagnose(log, checkpoint=root)
    assert "--trust-remote-code" in [f.text for f in found.fixes]


def test_another_engine_s_class_is_not_the_answer_for_a_vllm_log(tmp_path: Path) -> None:
    # vllm#10129: llava-med's LlavaMistralForCausalLM is SGLang's class (written for a config
    # class transformers knows), and no vLLM release read registers it; setting the model type
    # would only move vLLM's refusal to its registry
    vllm_names = set().union(*architectures("vllm").values())
    types, known = catalogue.config_types(), catalogue.model_types()
    name = next(
        (
            entry.split("=", 1)[0]
            for entry in sorted(catalogue.features_of("sglang", "model_config"))
            if entry.split("=", 1)[0] not in vllm_names
            and types.get(entry.split("=", 1)[1]) in known
        ),
        None,
    )
    assert name is not None, "no SGLang class read that vLLM does not register"
    log = tmp_path / "server.log"
    log.write_text(
        "INFO 11-07 10:00:00 api_server.py:528] vLLM API server version 0.6.3.post1\n"
        + UNKNOWN.format("llava_variant_x")
    )
    root = _checkpoint(tmp_path, {"architectures": [name], "model_type": "llava_variant_x"})
    found = diagnose(log, checkpoint=root)
    assert not any("/model_type" in f.text for f in found.fixes)
    converted = next(f for f in found.fixes if f.text.startswith("a checkpoint converted"))
    assert "vLLM registers" in converted.text
    assert f"no vLLM release read registers {name}" in (converted.note or "")
