"""The GPUs each vLLM release's own kernels are built for (the kernel images of its wheel's
_C extension, read by ``python -m tools.read_release`` into vllm_releases.json): a GPU with no
image of them gets "no kernel image is available for execution on the device", so the engine
model refuses the start there and names the releases that have them."""

from __future__ import annotations

import pytest

from patcher.engines.engine import parse_engine
from patcher.engines.files import read_config_files
from patcher.engines.gpus import parse_gpu
from patcher.engines.model import derive
from patcher.engines.readings import vllm_readings
from patcher.store.checkpoint import open_checkpoint
from tests.conftest import SNAPSHOTS

QWEN = SNAPSHOTS / "configs" / "deepseek-r1-distill-qwen-32b"


def test_the_builds_read_from_the_wheels() -> None:
    builds = {".".join(map(str, v)): sorted(r.cuda_archs) for v, r in vllm_readings().items()}
    assert builds["0.10.1"] == [70, 75, 80, 87, 89, 90, 100, 120]
    assert builds["0.19.0"][0] == 70  # the last release read with V100 kernels
    assert builds["0.20.0"] == [75, 80, 86, 89, 90, 100, 120]
    assert all(builds.values()), "every release read has its kernel images recorded"


@pytest.mark.parametrize(
    ("engine", "gpu", "refused"),
    [
        ("vllm==0.19.0", "v100", False),
        ("vllm==0.34.0", "v100", True),  # 0.20.0 on: no SM 7.0 images
        ("vllm==0.34.0", "t4", False),
        ("vllm==0.34.0", "rtx-5090", False),
        ("vllm==0.34.0", "dgx-spark", False),  # 12.1 runs the 12.0 images
        ("vllm==0.34.0", "6.1", True),  # a Pascal GPU: no release read has images for it
    ],
)
def test_a_gpu_without_kernel_images_does_not_start(engine: str, gpu: str, refused: bool) -> None:
    files = read_config_files(open_checkpoint(QWEN))
    view = derive(parse_engine(engine), files, parse_gpu(gpu))
    errors = [e for e in view.startup_errors if e.code == "no-kernels"]
    assert bool(errors) is refused
    if refused:
        assert "no kernel image is available" in errors[0].message
        assert not view.starts


def test_the_refusal_names_the_releases_that_have_the_kernels() -> None:
    files = read_config_files(open_checkpoint(QWEN))
    (error,) = [
        e
        for e in derive(parse_engine("vllm==0.34.0"), files, parse_gpu("v100")).startup_errors
        if e.code == "no-kernels"
    ]
    assert "vLLM 0.10.1 to 0.19.0 have them" in (error.note or "")
    (pascal,) = [
        e
        for e in derive(parse_engine("vllm==0.34.0"), files, parse_gpu("6.1")).startup_errors
        if e.code == "no-kernels"
    ]
    assert "no vLLM release read has them" in (pascal.note or "")
