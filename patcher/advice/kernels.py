"""Which engine releases run on a GPU: the architectures each vLLM release's own kernels are
compiled for (the catalogue's ``cuda_arch``, read from the kernel images in the wheel's ``_C``
extension by tools/read_binaries.py), and the GPUs the default build of the torch each
release pins runs on (torch_builds.py, torch's own reading). A kernel image for SM X.Y runs on
X.Y and the later minors of X; a GPU no image fits gets "no kernel image is available for
execution on the device", whatever the flags, and torch says so first ("... with CUDA
capability sm_120 is not compatible with the current PyTorch installation").
"""

from __future__ import annotations

import functools
import re

from patcher.advice.catalogue import (
    Engine,
    feature_releases,
    features_of,
    has_feature,
    releases,
    span_of,
    version_key,
    within,
)
from patcher.advice.log_rules import Fix, LogContext
from patcher.advice.torch_builds import first_build, pinned_torch, pinned_torch_runs
from patcher.engines.gpus import DRIVER_NAMES, GPUS
from patcher.engines.kernels import runs_on

Capability = tuple[int, int]

# "compute capability 7.5", "CUDA capability sm_120", "compute capability of 8.6"
_STATED = re.compile(r"(?:compute|cuda) capability (?:of )?(?:sm_?(\d{1,2})(\d)\b|(\d{1,2})\.(\d))")


def stated(line: str) -> Capability | None:
    """The compute capability a log line states, or the one of the GPU it names by its
    driver name ("NVIDIA GeForce RTX 5090", "Tesla V100-SXM2-32GB")."""
    said = _STATED.search(line.lower())
    if said is not None:
        major, minor = (said.group(1), said.group(2)) if said.group(1) else said.group(3, 4)
        return int(major), int(minor)
    if not re.search(r"NVIDIA|Tesla|GeForce|Quadro", line, re.IGNORECASE):
        return None
    words = re.sub(r"[^a-z0-9]+", " ", line.lower())
    known = next((name for pattern, name in DRIVER_NAMES if pattern.search(words)), None)
    return GPUS[known].capability if known is not None else None


def _text(arch: str) -> str:
    return f"{int(arch) // 10}.{int(arch) % 10}"


def builds() -> str:
    """The read releases grouped by the architectures their kernels are built for:
    ``0.4.3 to 0.8.5.post1: 7.0-9.0; 0.9.2 to 0.14.0: 7.0-12.0``."""
    runs: list[tuple[str, str, str]] = []  # first release, last release, the range built
    for release in releases("vllm"):
        archs = sorted(
            (
                a
                for a in features_of("vllm", "cuda_arch")
                if release in feature_releases("vllm", "cuda_arch", a)
            ),
            key=int,
        )
        if not archs:
            continue
        built = f"{_text(archs[0])}-{_text(archs[-1])}"
        if runs and runs[-1][2] == built:
            runs[-1] = (runs[-1][0], release, built)
        else:
            runs.append((release, release, built))
    return "; ".join(
        f"{first}{'' if first == last else ' to ' + last}: {built}" for first, last, built in runs
    )


def _own_kernels_run(release: str, gpu: Capability) -> bool:
    """Whether the vLLM ``release``'s own kernels have an image ``gpu`` runs."""
    return any(
        runs_on(int(arch), gpu)
        for arch in features_of("vllm", "cuda_arch")
        if release in feature_releases("vllm", "cuda_arch", arch)
    )


def _runs(engine: Engine, release: str, gpu: Capability, *, unread: bool) -> bool:
    """Whether ``engine``'s ``release`` runs on ``gpu``: its own kernels (vLLM's; SGLang's are
    not read) and its pinned torch's default build; ``unread`` is the answer where that build
    was not read."""
    if engine == "vllm" and not _own_kernels_run(release, gpu):
        return False
    torch = pinned_torch_runs(engine, release, gpu[0] * 10 + gpu[1])
    return unread if torch is None else torch


def kernel_gap(gpu: Capability, version: tuple[int, ...] | None) -> list[Fix] | None:
    """What to do where vLLM's own kernels may not run on ``gpu``: the releases whose build
    (and whose pinned torch's default build, where read) has kernels for it (where the log's
    release, ``version``, is not one of them), or, where no read release has, a GPU the builds
    cover. None where the reading does not know (no builds read) or the log's release has
    kernels for the GPU (another library's kernel)."""
    if not has_feature("vllm", "cuda_arch"):
        return None
    span = span_of("vllm", functools.partial(_runs, "vllm", gpu=gpu, unread=True))
    label = f"{gpu[0]}.{gpu[1]}"
    if span is None:
        return [
            Fix(
                "advice",
                f"no config fix: no vLLM release read has kernels for compute capability {label}",
                note=f"their builds: {builds()}; a GPU they cover, or another engine",
            )
        ]
    first, after = span
    if version is None and after is None and first == next(iter(releases("vllm"))):
        return None  # every release read has kernels for it
    if version is not None:
        inside = version_key(first)[:3] <= version[:3] and (
            after is None or version[:3] < version_key(after)[:3]
        )
        if inside:
            return None
    bound = within(first, after)
    return [
        Fix(
            "dependency",
            f"pip install 'vllm{bound}'",
            note=f"the vLLM releases read whose kernels, and whose pinned torch's default "
            f"build, are built for compute capability {label}",
        )
    ]


def torch_refuses(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """torch's build has no kernel image the GPU runs (torch_builds.TORCH_REFUSES): the engine
    releases whose pinned torch's default build runs on it (vLLM's own kernels too), and
    torch's own build for a CUDA that has one."""
    device = int(m.group(1)) if m.group(1) else int(m.group(2)) * 10 + int(m.group(3))
    gpu = (device // 10, device % 10)
    label = f"sm_{device} (compute capability {gpu[0]}.{gpu[1]})"
    cause = f"the installed torch has no kernel image that runs on this GPU, {label}"
    fixes: list[Fix] = []
    for engine in ctx.engines():
        span = span_of(engine, functools.partial(_runs, engine, gpu=gpu, unread=False))
        whose = (
            "whose own kernels and pinned torch's default build run"
            if engine == "vllm"
            else "whose pinned torch's default build runs"
        )
        if span is None:
            fixes.append(
                Fix(
                    "advice",
                    f"no {engine} release read {whose} on {label}",
                    note="another GPU, or the engine built from source for it",
                )
            )
            continue
        first, after = span
        pin = pinned_torch(engine, first)
        fixes.append(
            Fix(
                "dependency",
                f"pip install '{engine}{within(first, after)}'",
                note=f"the {engine} releases read {whose} on {label} ({engine} {first} pins "
                f"torch {pin})"
                + ("; SGLang's own kernels (sgl-kernel) not read" if engine == "sglang" else ""),
            )
        )
    cuda = first_build(device)
    if cuda is not None:
        tag = "cu" + cuda.replace(".", "")
        fixes.append(
            Fix(
                "dependency",
                f"pip install torch==VERSION --index-url https://download.pytorch.org/whl/{tag}",
                note=f"or the engine's own torch VERSION (pip show torch) in its build for CUDA "
                f"{cuda}, which runs on {label}; the driver must run CUDA {cuda}",
            )
        )
    return cause, fixes
