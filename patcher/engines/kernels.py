"""The GPUs a vLLM release's own kernels run on: the SM versions of the kernel images in its
wheel's ``_C`` extension, read by ``python -m tools.read_release`` (readings.py's
``cuda_archs``). An image for SM X.Y runs on X.Y and the later minors of X."""

from __future__ import annotations

from patcher.engines.engine import Engine
from patcher.engines.gpus import Gpu
from patcher.engines.readings import reading, vllm_readings
from patcher.engines.view import StartupError


def runs_on(sm: int, capability: tuple[int, int]) -> bool:
    """Whether a kernel image built for ``sm`` (80: SM 8.0) runs on a GPU of ``capability``:
    the same major version, at or after the image's minor."""
    return sm // 10 == capability[0] and sm % 10 <= capability[1]


def no_kernels(engine: Engine, gpu: Gpu) -> StartupError | None:
    """The release's own kernels have no image for this GPU (read from the wheel's _C
    extension, tools/read_binaries.cuda_archs): an image for SM X.Y runs on X.Y and the
    later minors of X, and with none the first kernel fails ("no kernel image is available
    for execution on the device"). 0.20.0 and later are built without SM 7.0 (V100)."""
    built = reading(engine).cuda_archs
    major, minor = gpu.capability
    if not built or any(runs_on(sm, gpu.capability) for sm in built):
        return None
    having = [
        v
        for v, r in vllm_readings().items()
        if any(runs_on(sm, gpu.capability) for sm in r.cuda_archs)
    ]
    where = (
        f"vLLM {'.'.join(map(str, having[0]))} to {'.'.join(map(str, having[-1]))} have them"
        if having
        else "no vLLM release read has them: another GPU"
    )
    low, high = min(built), max(built)
    return StartupError(
        "CUDA error: no kernel image is available for execution on the device",
        code="no-kernels",
        note=f"{engine}'s own kernels are built for compute capability {low // 10}.{low % 10} "
        f"to {high // 10}.{high % 10}, and none runs on {gpu.name} ({major}.{minor}); {where}",
    )
