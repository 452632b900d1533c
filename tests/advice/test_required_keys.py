"""A quantization_config key a method's ``from_config`` requires in one release and not in a
later one (``quant_requires:<method>``, read by tools/read_quantization.py from each wheel):
doctor names the release that no longer asks for it (patcher/advice/quantization_rules.py)."""

from __future__ import annotations

import io
import zipfile

from patcher.advice.catalogue import (
    feature_releases,
    features_named,
    features_of,
    releases,
    version_key,
)
from patcher.advice.doctor import diagnose_text
from tools.read_quantization import required_keys

QLORA_KEYS = "Cannot find any of ['adapter_name_or_path'] in the model's quantization config."


def _engine_log(release: str, line: str) -> str:
    return (
        f"INFO 06-24 10:00:00 llm_engine.py:161] Initializing an LLM engine (v{release}) with "
        "config: model='unsloth/mistral-7b-instruct-v0.3-bnb-4bit', quantization=bitsandbytes, "
        "enforce_eager=False\n"
        f"[rank0]: ValueError: {line}\n"
    )


def test_the_reader_takes_the_keys_from_config_requires_and_not_those_with_a_default() -> None:
    source = (
        "class QConfig(QuantizationConfig):\n"
        "    @classmethod\n"
        "    def get_name(cls):\n        return 'myq'\n"
        "    @classmethod\n"
        "    def from_config(cls, config):\n"
        "        bits = cls.get_from_keys(config, ['w_bit', 'bits'])\n"
        "        group = cls.get_from_keys_or(config, ['group_size'], 128)\n"
        "        return cls(bits, group)\n"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        wheel.writestr("vllm/model_executor/layers/quantization/myq.py", source)
    with zipfile.ZipFile(buffer) as wheel:
        assert required_keys(wheel, "vllm") == {"quant_requires:myq": ["w_bit,bits"]}


def test_a_key_a_later_release_no_longer_requires_names_that_release() -> None:
    # read from the wheels: vLLM's bitsandbytes asked for a QLoRA adapter up to 0.5.3.post1
    requiring = feature_releases("vllm", "quant_requires:bitsandbytes", "adapter_name_or_path")
    assert "0.5.3.post1" in requiring and "0.5.4" not in requiring
    found = diagnose_text(_engine_log("0.5.0.post1", QLORA_KEYS))
    later = next(r for r in releases("vllm") if version_key(r) > version_key(requiring[-1]))
    assert [f.text for f in found.fixes] == [f"pip install 'vllm>={later}'"]
    assert "adapter_name_or_path" in found.cause


def test_a_key_the_newest_release_read_still_requires_gets_no_release() -> None:
    newest = max(releases("vllm"), key=version_key)
    method, keys = next(
        (f.split(":", 1)[1], k)
        for f in features_named("vllm", "quant_requires:")
        for k in features_of("vllm", f)
        if newest in feature_releases("vllm", f, k) and "," not in k
    )
    line = f"Cannot find any of ['{keys}'] in the model's quantization config."
    found = diagnose_text(
        _engine_log(newest, line).replace("quantization=bitsandbytes", f"quantization={method}")
    )
    assert found.code == "quantization-config"
    assert not any(f.text.startswith("pip install 'vllm") for f in found.fixes)
