"""torch's own reading of which GPUs its builds run on (patcher/advice/torch_builds.py, read by
tools/read_torch_builds.py into torch-builds.json), and doctor's answer to torch refusing the
GPU: the engine releases whose pinned torch's default build runs on it (kernels.py)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from patcher.advice.catalogue import features_of
from patcher.advice.doctor import diagnose_text
from patcher.advice.torch_builds import default_cuda, first_build, image_runs, torch_runs


@pytest.mark.parametrize(
    ("code", "device", "runs"),
    [
        (90, 120, False),  # an interval ends with its major version (torch's _CompatInterval)
        (70, 75, True),
        (70, 72, False),  # Xavier, excluded from 7.0's interval
        (80, 87, False),  # Orin, likewise
        (100, 101, False),
        (101, 110, True),  # torch's _CompatSet({101, 110})
        (120, 121, True),
    ],
)
def test_an_image_runs_where_torch_says_it_does(code: int, device: int, runs: bool) -> None:
    assert image_runs(code, device) is runs


def test_each_torch_an_engine_release_pins_has_its_default_build_read() -> None:
    # a release read with a torch not in torch-builds.json: python -m tools.read_torch_builds
    for engine in ("vllm", "sglang"):
        for pin in features_of(engine, "torch_pin"):
            assert default_cuda(pin) is not None, (engine, pin)


def test_the_default_builds_read_from_pypi() -> None:
    assert default_cuda("2.7.1") == "12.6"
    assert default_cuda("2.8.0") == "12.8"
    assert default_cuda("2.11.0") == "13.0"
    assert torch_runs("2.7.1", 120) is False  # CUDA 12.6's build: sm_50 to sm_90
    assert torch_runs("2.8.0", 120) is True
    assert torch_runs("2.11.0", 70) is False  # CUDA 13.0's build starts at sm_75
    assert torch_runs("2.3.0", 80) is None  # CUDA 12.1's build was not read
    assert first_build(120) == "12.8"


def test_an_rtx_5090_under_a_cuda_12_6_torch_gets_the_first_release_pinning_a_12_8_one() -> None:
    found = diagnose_text(
        "UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with "
        "the current PyTorch installation.\n"
        "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 "
        "sm_86 sm_90.\n"
    )
    assert found.code == "torch-build"
    texts = [f.text for f in found.fixes]
    # vLLM 0.9.2's own kernels run on 12.0, but its torch 2.7.0 is CUDA 12.6 on PyPI
    assert texts[0] == "pip install 'vllm>=0.11.0'"
    assert texts[1] == "pip install 'sglang>=0.5.1'"
    assert "https://download.pytorch.org/whl/cu128" in texts[2]
    assert not any(f.kind == "transform" for f in found.fixes)


def test_a_v100_under_torch_2_11_s_words_gets_the_releases_before_cuda_13() -> None:
    found = diagnose_text(
        "INFO 05-31 10:00:00 [api_server.py:1043] vLLM API server version 0.20.0\n"
        "UserWarning: Found GPU0 Tesla V100-SXM2-32GB which is of compute capability (CC) 7.0.\n"
    )
    assert found.code == "torch-build"
    assert found.fixes[0].text == "pip install 'vllm>=0.9.0.1,<0.20.0'"
    assert len([f for f in found.fixes if "sglang" in f.text]) == 0  # a vLLM log


def test_a_gpu_no_vllm_build_covers_is_told_so_under_torch_2_10_s_words() -> None:
    found = diagnose_text(
        "INFO 05-31 10:00:00 [api_server.py:1043] vLLM API server version 0.9.2\n"
        "    Found GPU0 NVIDIA GeForce GTX 1080 Ti which is of cuda capability 6.1.\n"
        "    Minimum and Maximum cuda capability supported by this version of PyTorch is\n"
        "    (7.0) - (12.0)\n"
    )
    assert found.code == "torch-build"
    assert found.fixes[0].kind == "advice"
    assert found.fixes[0].text.startswith("no vllm release read whose own kernels")


def test_the_reader_takes_both_forms_of_torch_s_table(tmp_path: Path) -> None:
    from tools.read_torch_builds import _CUDA_PIN, code_cc

    source = (
        "DEVICE_REQUIREMENT: dict = {70: _CompatInterval(start=70, exclude={72}), "
        "72: _CompatSet({72}), 120: _CompatInterval(start=120)}\n"
        'PYTORCH_RELEASES_CODE_CC: dict = {"12.6": {50, 90}, '
        '"13.0": {"x86_64": {75, 120}, "aarch64": {80}}}\n'
    )
    wheel = tmp_path / "torch-9.9.0+cpu-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("torch/cuda/__init__.py", source)
    version, builds, runs = code_cc(wheel)
    assert version == "9.9.0"
    assert builds == {"12.6": [50, 90], "13.0": [75, 120]}
    assert runs["70"] == {"start": 70, "exclude": [72]} and runs["72"] == {"only": [72]}
    pin = _CUDA_PIN.match('nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux"')
    assert pin is not None and pin.groups() == ("12", "8")
    toolkit = _CUDA_PIN.match("cuda-toolkit[cublas,cudart]==13.0.2")
    assert toolkit is not None and toolkit.groups() == ("13", "0")
