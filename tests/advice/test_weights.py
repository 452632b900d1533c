"""The weights a config implies, against the real checkpoints' indexes and published sizes."""

from __future__ import annotations

import json

import pytest

from patcher.advice.kvbudget import kv_budget
from patcher.advice.weights import implied_weights, parameters
from tests.conftest import CONFIGS, SNAPSHOTS

# Published parameter counts (the model cards), in billions.
PUBLISHED = {
    "kimi-k2.5-nvfp4": 1026,  # Kimi K2: 1.04T total (1T plus the vision tower it omits here)
    "deepseek-v3": 671,
    "gpt-oss-120b": 117,
    "qwen3-30b-a3b-nvfp4": 30.5,
    "llama-3.1-8b-instruct-bnb8bit": 8.0,
    "devstral-small-2507": 23.6,
    "deepseek-r1-distill-qwen-32b": 32.8,
}


def _config(model: str) -> dict[str, object]:
    config = json.loads((CONFIGS / model / "config.json").read_text())
    text = config.get("text_config")
    return text if isinstance(text, dict) else config


@pytest.mark.parametrize("model", sorted(PUBLISHED))
def test_the_count_is_the_published_one(model: str) -> None:
    counted = parameters(_config(model))
    assert counted is not None
    assert counted[0] / 1e9 == pytest.approx(PUBLISHED[model], rel=0.03)


@pytest.mark.parametrize("model", ["deepseek-r1-distill-qwen-32b", "devstral-small-2507"])
def test_a_bf16_checkpoint_implies_its_index_total_size(model: str) -> None:
    index = json.loads((CONFIGS / model / "model.safetensors.index.json").read_text())
    total = index["metadata"]["total_size"] / 1024**3
    implied = implied_weights(json.loads((CONFIGS / model / "config.json").read_text()), None)
    assert implied is not None and implied[0] == pytest.approx(total, rel=0.01)


def test_weights_off_by_ten_are_warned_and_the_index_is_not() -> None:
    """--weights 59GB for Kimi (590GB meant) is said to be implausible; the example's index
    (584 GiB reconstructed, 73 GiB x 8) and 590GB are not."""
    kimi = SNAPSHOTS / "example" / "kimi-k2.5-nvfp4"
    wrong = kv_budget(kimi, gpu="rtx-pro-6000", tensor_parallel=8, weights="59GB")
    assert wrong.weights_warning is not None and "implausible" in wrong.weights_warning
    assert "1026.2B parameters in nvfp4" in wrong.weights_warning
    for right in (
        kv_budget(kimi, gpu="rtx-pro-6000", tensor_parallel=8, weights="590GB"),
        kv_budget(kimi, gpu="rtx-pro-6000", tensor_parallel=8),
        kv_budget(kimi, gpu="rtx-pro-6000", tensor_parallel=4, pipeline_parallel=2),
    ):
        assert right.weights_warning is None, right.weights_source


def test_a_config_without_sizes_implies_nothing() -> None:
    assert implied_weights({"model_type": "x"}, None) is None
