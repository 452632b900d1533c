"""Which GPUs the torch an engine release pins runs on: torch's own reading of its builds.

torch checks, as CUDA starts, that its build has a kernel image the GPU runs
(``torch/cuda/__init__.py``: ``_check_cubins``' "NVIDIA GeForce RTX 5090 with CUDA capability
sm_120 is not compatible with the current PyTorch installation", and ``_check_capability``'s
"Found GPU0 NAME which is of cuda capability 12.0" up to 2.10, "... of compute capability (CC)
12.0" from 2.11). Its first kernel then fails ("no kernel image is available for execution on
the device"): no config edit helps, another torch build does.

Which build runs on which GPU is torch's own reading (tools/read_torch_builds.py ->
torch-builds.json): the compute capabilities each CUDA build is compiled for
(``PYTORCH_RELEASES_CODE_CC``), which GPUs an image for each runs on (``DEVICE_REQUIREMENT``),
and the CUDA of each torch release's default Linux x86_64 wheel on PyPI. The engines pin their
torch (the catalogue's ``torch_pin``), so kernels.py answers with the engine releases whose
pinned torch's default build runs on the GPU, or torch's build for another CUDA from PyTorch's
index. A torch whose default build was not read (CUDA 12.1 and 12.4, before torch kept the
table) is unknown (None), never a yes.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from patcher.advice.catalogue import Engine, feature_releases, features_of
from patcher.advice.packaged import packaged

# the device's compute capability in each of torch's wordings
TORCH_REFUSES = re.compile(
    r"with CUDA capability sm_(\d+) is not compatible with the current PyTorch installation|"
    r"Found GPU\d+ .+? which is of (?:cuda|compute) capability (?:\(CC\) )?(\d+)\.(\d+)"
)


@functools.cache
def _reading() -> dict[str, Any]:
    reading: dict[str, Any] = packaged("torch-builds.json")
    return reading


def image_runs(code: int, device: int) -> bool:
    """Whether torch's kernel image for ``code`` (120: SM 12.0) runs on a ``device`` SM, by
    torch's own ``DEVICE_REQUIREMENT``: a set, or an interval from its start to the end of that
    major version less some; an SM it lacks: the same major, a later minor."""
    rule = _reading()["runs_on"].get(str(code))
    if rule is None:
        return device // 10 == code // 10 and device >= code
    if "only" in rule:
        return device in rule["only"]
    start = rule["start"]
    return device // 10 == start // 10 and device >= start and device not in rule["exclude"]


def build_runs(cuda: str, device: int) -> bool | None:
    """Whether torch's build for ``cuda`` runs on the ``device`` SM (None: not read)."""
    codes = _reading()["builds"].get(cuda)
    return None if codes is None else any(image_runs(c, device) for c in codes)


def default_cuda(torch: str) -> str | None:
    """The CUDA of ``torch==X``'s default Linux x86_64 wheel on PyPI (None: not read)."""
    cuda: str | None = _reading()["default_cuda"].get(torch)
    return cuda


def torch_runs(torch: str, device: int) -> bool | None:
    """Whether ``torch==X``'s default wheel on PyPI runs on the ``device`` SM (None: its build
    was not read)."""
    cuda = default_cuda(torch)
    return None if cuda is None else build_runs(cuda, device)


def pinned_torch(engine: Engine, release: str) -> str | None:
    """The torch ``engine``'s ``release`` pins (its wheel's ``Requires-Dist: torch==X``)."""
    return next(
        (
            p
            for p in features_of(engine, "torch_pin")
            if release in feature_releases(engine, "torch_pin", p)
        ),
        None,
    )


def pinned_torch_runs(engine: Engine, release: str, device: int) -> bool | None:
    """Whether the default build of the torch ``release`` pins runs on the ``device`` SM (None:
    no pin read, or its build not read)."""
    pin = pinned_torch(engine, release)
    return None if pin is None else torch_runs(pin, device)


def first_build(device: int) -> str | None:
    """The first CUDA build of torch read that runs on the ``device`` SM (``12.8``)."""
    cudas = sorted(_reading()["builds"], key=lambda c: tuple(int(p) for p in c.split(".")))
    return next((c for c in cudas if build_runs(c, device)), None)
