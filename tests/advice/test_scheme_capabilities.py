"""doctor on a compressed-tensors scheme refused by the GPU (patcher/advice/
scheme_capabilities.py), against each release's ``get_min_capability`` of each scheme
(``scheme_capability:<Scheme>`` in the catalogue, read by tools/read_quantization.py)."""

from __future__ import annotations

import pytest

from patcher.advice.catalogue import feature_releases, features_named, releases
from patcher.advice.doctor import diagnose_text

# One line per rule (test_doctor's marker test takes them with its own cases).
SCHEME_LINES = [
    "RuntimeError: ('Quantization scheme is not supported for ', 'the current GPU. Min "
    "capability: 80. ', 'Current capability: 75.')"
]
# The wordings read: a tuple's parts to 0.28, one string from 0.29
WORDINGS = [
    SCHEME_LINES[0],
    "RuntimeError: Quantization scheme is not supported for the current GPU. Min capability: "
    "80. Current capability: 75.",
]


def _log(error: str) -> str:
    prefix = "(Worker_TP0 pid=1707110) ERROR 11-29 20:52:18 [multiproc_executor.py:597] "
    return "\n".join(
        [
            prefix + '  File "/venv/lib/python3.12/site-packages/vllm/model_executor/layers/'
            'quantization/compressed_tensors/compressed_tensors.py", line 117, in get_quant_method',
            prefix + "    quant_scheme = self.get_scheme(layer=layer, layer_name=prefix)",
            prefix + error,
        ]
    )


def _first_accepting(scheme: str, have: int) -> str:
    """The first release of the last run the reading records ``scheme`` at or below ``have``."""
    feature = f"scheme_capability:{scheme}"
    accepting = {
        r
        for cap in ("70", "75", "80", "86", "89")
        if int(cap) <= have
        for r in feature_releases("vllm", feature, cap)
    }
    run = [r for r in releases("vllm") if r in accepting]
    return run[0]


def test_the_reading_records_a_scheme_that_asked_80_and_later_75() -> None:
    feature = "scheme_capability:CompressedTensorsWNA16"
    assert feature in features_named("vllm", "scheme_capability:")
    assert feature_releases("vllm", feature, "80") and feature_releases("vllm", feature, "75")


@pytest.mark.parametrize("error", WORDINGS)
def test_a_turing_gpu_is_named_the_release_whose_scheme_takes_it(error: str) -> None:
    found = diagnose_text(_log(error))
    assert found.code == "compressed-tensors-gpu"
    first = _first_accepting("CompressedTensorsWNA16", 75)
    wna16 = [f.text for f in found.fixes if f.note and "CompressedTensorsWNA16" in f.note]
    assert wna16 == [f"pip install 'vllm>={first}'"]
    assert "no config edit helps" not in found.cause


def test_a_gpu_below_every_release_s_minimum_is_a_hardware_limit() -> None:
    error = WORDINGS[1].replace("Current capability: 75", "Current capability: 60")
    found = diagnose_text(_log(error))
    assert found.code == "compressed-tensors-gpu"
    assert "no config edit helps" in found.cause
    assert [f.kind for f in found.fixes] == ["advice"]
