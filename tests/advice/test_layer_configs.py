"""doctor on transformers refusing a per-layer config's attribute read whole
(``AmbiguousGlobalPerLayerAttributeError``, transformers 5.14.1 on, once a model's config class
builds per-layer configs: Gemma 4's from 5.15.0): the engine release read that reads
``per_layer_config``, and the transformers release before the first that builds one, each from
the recorded reading (tools/read_layer_configs.py)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from patcher.advice.catalogue import feature_releases, match, templates
from patcher.advice.doctor import diagnose_text
from patcher.advice.layer_configs import explain_per_layer
from patcher.advice.log_rules import LogContext
from tools import read_layer_configs

# the message as transformers 5.15.0 raises it (integrations/heterogeneity/configuration_utils.py)
REFUSED = (
    "transformers.integrations.heterogeneity.configuration_utils."
    "AmbiguousGlobalPerLayerAttributeError: 'head_dim' is a per-layer attribute and may vary "
    "across layers. Access it via the individual layer configs instead (e.g. "
    "config.per_layer_config[i].head_dim). To read the global config value from config.head_dim "
    "anyway, set `allow_global_per_layer_attribute_access` to `True` on the config. Warning: only "
    "do this if the caller can safely handle heterogeneous configs; code that assumes a "
    "homogeneous model may use the global value incorrectly.\n"
)


def _log(release: str) -> str:
    return (
        f"(APIServer pid=7) INFO 08-18 12:46:45 [api_server.py:1839] vLLM API server version "
        f"{release}\n"
        "(APIServer pid=7) Traceback (most recent call last):\n"
        f"(APIServer pid=7) {REFUSED}"
    )


def test_the_message_is_read_from_transformers_source_with_the_releases_that_raise_it() -> None:
    (template,) = [
        t
        for t in templates("transformers")
        if t.exception == "AmbiguousGlobalPerLayerAttributeError"
    ]
    assert template.releases[0] == "5.14.1"
    assert feature_releases("transformers", "per_layer_config", "gemma4_text")[0] == "5.15.0"


def test_an_engine_release_that_reads_configs_whole_is_told_both_ways_out() -> None:
    found = diagnose_text(_log("0.27.1"))
    assert found.code == "per-layer-config"
    texts = [f.text for f in found.fixes]
    first_reader = feature_releases("vllm", "per_layer_config", "reads")[0]
    assert first_reader == "0.28.0"
    assert texts == ["pip install 'vllm>=0.28.0'", "pip install 'transformers<5.15.0'"]
    assert "head_dim" in found.cause


def test_a_release_that_reads_per_layer_configs_is_not_told_to_upgrade_to_itself() -> None:
    found = diagnose_text(_log("0.29.0"))
    assert [f.text for f in found.fixes] == ["pip install 'transformers<5.15.0'"]
    assert "elsewhere" in found.cause


def test_a_log_without_the_release_still_gets_both() -> None:
    found = diagnose_text(REFUSED)
    assert found.code == "per-layer-config"
    assert {f.text for f in found.fixes} == {
        "pip install 'vllm>=0.28.0'",
        "pip install 'transformers<5.15.0'",
    }


def _read(tmp_path: Path, wheel: str, name: str, source: str, package: str) -> dict[str, list[str]]:
    """One file of a wheel, read as an engine's (``package``) or as transformers'."""
    path = tmp_path / wheel
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(name, source)
    with zipfile.ZipFile(path) as archive:
        if package == "transformers/":
            return read_layer_configs.per_layer_types(archive)
        return read_layer_configs.reads_per_layer(archive, package)


def test_the_readers_find_a_config_built_per_layer_and_an_engine_reading_it(
    tmp_path: Path,
) -> None:
    configs = (
        "class ToyTextConfig(PreTrainedConfig):\n"
        "    model_type = 'toy_text'\n"
        "    def __post_init__(self, **kwargs):\n"
        "        kwargs['per_layer_config'] = {0: {'head_dim': 512}}\n"
        "class PlainConfig(PreTrainedConfig):\n"
        "    model_type = 'plain'\n"
        "    per_layer_input = 3\n"
    )
    toy = "transformers/models/toy/configuration_toy.py"
    assert _read(tmp_path, "transformers-9.9.9.whl", toy, configs, "transformers/") == {
        "per_layer_config": ["toy_text"]
    }
    reading = "def head(config, i):\n    return config.per_layer_config[i].head_dim\n"
    arch = "vllm/config/arch.py"
    assert _read(tmp_path, "vllm-9.9.9.whl", arch, reading, "vllm/") == {
        "per_layer_config": ["reads"]
    }
    whole = "# per_layer_config\nHEAD = 'head_dim'\n"
    assert _read(tmp_path, "vllm-9.9.8.whl", arch, whole, "vllm/") == {
        "per_layer_config": ["whole"]
    }


def _unknown_type(release: str, model_type: str) -> str:
    return (
        f"(APIServer pid=1) INFO 08-12 10:00:00 [api_server.py:1839] vLLM API server version "
        f"{release}\n"
        "(APIServer pid=1) pydantic_core._pydantic_core.ValidationError: 1 validation error for "
        "ModelConfig\n"
        f"(APIServer pid=1)   Value error, The checkpoint you are trying to load has model type "
        f"`{model_type}` but Transformers does not recognize this architecture. This could be "
        "because of an issue with the checkpoint, or because your version of Transformers is out "
        "of date.\n"
    )


def test_a_transformers_upgrade_stops_below_the_release_that_makes_the_config_per_layer() -> None:
    # gemma4_unified: known from transformers 5.10.4, per layer from 5.15.0 (both read); vLLM
    # 0.27 reads per-layer attributes whole, so a newer transformers would fail it next
    found = diagnose_text(_unknown_type("0.27.1", "gemma4_unified"))
    assert found.code == "transformers-too-old"
    upgrade = next(f for f in found.fixes if "transformers" in f.text)
    assert upgrade.text == "pip install 'transformers>=5.10.4,<5.15.0'"
    assert "0.28.0" in upgrade.note
    later = diagnose_text(_unknown_type("0.28.0", "gemma4_unified"))
    assert [f.text for f in later.fixes if "transformers" in f.text] == [
        "pip install 'transformers>=5.10.4'"
    ]


def test_the_modules_other_checks_are_no_strict_validation_and_no_caller_s_config() -> None:
    keys = diagnose_text(
        "ValueError: `per_layer_config` keys must be integer layer indices in the range [0, 48); "
        "got [60]\n"
    )
    assert keys.code == "config-validation"
    assert not any("transformers<" in f.text for f in keys.fixes)
    use = diagnose_text("TypeError: `skip` must be an iterable of strings.\n")
    assert use.code == "per-layer-config-use"
    assert all(f.kind == "advice" for f in use.fixes)


def test_a_model_type_per_layer_from_its_first_release_needs_the_engine_that_reads_it() -> None:
    # embedding_gemma2: known, and built per layer, from transformers 5.19.0 (read): no
    # transformers serves it on vLLM 0.27, which reads per-layer attributes whole
    found = diagnose_text(_unknown_type("0.27.0", "embedding_gemma2"))
    texts = [f.text for f in found.fixes]
    assert "pip install 'transformers>=5.19.0'" in texts
    assert "pip install 'vllm>=0.28.0'" in texts


def test_an_engine_that_opts_into_whole_reads_handles_per_layer_configs(tmp_path: Path) -> None:
    opts_in = "def load(config):\n    config.allow_global_per_layer_attribute_access = True\n"
    name = "sglang/srt/configs/model_config.py"
    assert _read(tmp_path, "sglang-9.9.9.whl", name, opts_in, "sglang/") == {
        "per_layer_config": ["reads"]
    }


def test_an_engine_that_pins_transformers_exactly_is_told_its_own_pin() -> None:
    # SGLang pins transformers with == (0.5.16 to 0.5.21: 5.12.1, read); a log of 0.5.21 with
    # a per-layer config raised has a newer transformers than its own pin installed
    matched = match(REFUSED.strip())
    assert matched is not None
    context = LogContext(checkpoint="CKPT", version=(0, 5, 21), engine="sglang")
    _cause, fixes = explain_per_layer(matched, context)
    texts = [f.text for f in fixes]
    assert texts[0] == "pip install 'sglang>=0.5.22'"
    assert texts[1] == "pip install 'transformers==5.12.1'"


def test_the_upgrade_beside_a_newer_engine_release_is_limited_by_that_release() -> None:
    # gemma4 on vLLM 0.11: the release named for Gemma4ForCausalLM (0.19.0, read) reads
    # per-layer configs whole, so the transformers beside it stops below 5.15.0
    found = diagnose_text(_unknown_type("0.11.1", "gemma4"))
    texts = [f.text for f in found.fixes]
    assert texts[0] == "pip install 'vllm>=0.19.0'"
    assert "pip install 'transformers>=5.5.4,<5.15.0'" in texts
