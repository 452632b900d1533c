"""FlashInfer's kernels with no image for the GPU they were asked to run on.

FlashInfer checks each CUDA call of its kernels and words a failure two ways (read in the
flashinfer-python 0.5.3 wheel, ``snapshots/engines/flashinfer-kernel-errors.txt``): its headers'
``FLASHINFER_CUDA_CALL`` (``include/flashinfer/utils.cuh``) prints "CUDA Error: <message>
(<code>) <file>: line <n> at function <call>", the file a path into its own headers; its
bindings (``csrc/batch_decode.cu``, ``sampling.cu`` and their kin) raise "<kernel> failed with
error <message>" (": " after it in some, "error code" in the sampling ones), the kernel named as
FlashInfer names it (``BatchDecodeWithPagedKVCache``, ``TopKRenormProb``). With the CUDA
runtime's "no kernel image is available for execution on the device" (or its older "invalid
device function"), the FlashInfer installed holds no kernel built for this GPU's architecture:
FlashInfer's gap, not the engine's, whose other attention and sampling backends run on the GPU.
Its other kernels (norms, rotary embeddings) are no backend's to replace, and are not read here.

So: the engine's other backend (SGLang's ``--attention-backend`` and ``--sampling-backend``
choices per release read, the catalogue's ``choices:`` features; vLLM left to choose its
attention backend, and ``VLLM_USE_FLASHINFER_SAMPLER=0`` for its sampler), or a FlashInfer that
has kernels for the GPU: flashinfer-python compiles its kernels for the GPU it runs on, sm75 and
newer (its JIT's check, ``flashinfer/jit/core.py``, read in 0.5.3, 0.6.8.post1 and 0.7.4:
``snapshots/engines/flashinfer-jit-arch.txt``). A GPU older than 7.5 has no FlashInfer at all.
SGLang before its releases read took FlashInfer out with ``--disable-flashinfer`` and
``--disable-flashinfer-sampling``, which 0.4.0 refuses, naming the two backend flags instead
(``snapshots/engines/sglang-disable-flashinfer.txt``).
"""

from __future__ import annotations

import re
from dataclasses import replace

from patcher.advice.attention_rules import unforce
from patcher.advice.backend_gpu import sglang_backend_instead
from patcher.advice.flashinfer_jit import sampler_off
from patcher.advice.log_rules import Fix, LogContext, Rule

_NO_IMAGE = r"(?:no kernel image is available for execution on the device|invalid device function)"
NO_IMAGE = re.compile(
    # FLASHINFER_CUDA_CALL: the message, the code, then a path into FlashInfer's headers
    rf"CUDA Error: {_NO_IMAGE} \(\d+\) \S*?/include/flashinfer/"
    r"(?P<file>attention/\S+|\w*(?:decode|prefill|sampling)\w*\.cuh): line \d+"
    # a binding's TORCH_CHECK / TVM_FFI_ICHECK, the kernel named FlashInfer's way
    r"|\b(?P<kernel>(?:Batch|Single)\w*(?:Prefill|Decode)\w*|single_(?:prefill|decode)\w*|"
    r"\w*Sampling\w*|\w*(?:RenormProb|MaskLogits)) "
    rf"failed with error(?: code)?:? {_NO_IMAGE}"
)
# the sampling kernels (flashinfer/sampling.py's bindings) against the attention ones
_SAMPLING = re.compile(r"Sampling|Renorm|MaskLogits", re.IGNORECASE)  # a kernel, or sampling.cuh
_VERSION = re.compile(r"flashinfer[-_](\d+(?:\.\d+)+)")
FLASHINFER_IMAGE_MARKERS = ("no kernel image is available", "invalid device function")

# flashinfer-python's JIT refuses only GPUs older than this (jit/core.py's check)
_JIT_FLOOR = (7, 5)


def _sglang(sampling: bool) -> list[Fix]:
    """SGLang's own backends in place of FlashInfer's: its Triton attention kernels, compiled
    for the GPU at hand, and PyTorch's sampling."""
    why = "kernels compiled for the GPU at hand, not FlashInfer's build"
    attention = sglang_backend_instead("--attention-backend", "flashinfer", ("triton",), why)
    sampler = sglang_backend_instead(
        "--sampling-backend", "flashinfer", ("pytorch",), "PyTorch's own top-k/top-p"
    )
    first = [sampler, attention] if sampling else [attention, sampler]
    return [f for f in first if f is not None]


def _vllm(sampling: bool, ctx: LogContext) -> list[Fix]:
    """vLLM without FlashInfer's kernels: its sampler switched off (envs.py, per release read),
    its attention backend left to vLLM's choice."""
    sampler, attention = sampler_off(ctx.version), unforce(ctx.version)
    return [*sampler, *attention] if sampling else [*attention, *sampler]


def _either(fixes: list[Fix], engine: str) -> list[Fix]:
    """An engine's fixes as advice naming it, where the log shows neither engine."""
    return [replace(f, kind="advice", text=f"{engine}: {f.text}") for f in fixes]


def no_image(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """The engine's other backend for what FlashInfer ran, then a FlashInfer with kernels for
    the GPU (none below 7.5)."""
    kernel = m.group("kernel") or m.group("file")
    sampling = bool(_SAMPLING.search(kernel))
    built = _VERSION.search(m.group(0))
    which = f"FlashInfer {built.group(1)}" if built else "the FlashInfer installed"
    if ctx.engine == "sglang":
        fixes = _sglang(sampling)
    elif ctx.engine == "vllm":
        fixes = _vllm(sampling, ctx)
    else:
        fixes = [*_either(_sglang(sampling), "SGLang"), *_either(_vllm(sampling, ctx), "vLLM")]
    old = ctx.gpu is not None and ctx.gpu < _JIT_FLOOR
    if ctx.engine != "vllm":
        fixes.append(
            Fix(
                "advice",
                "an SGLang older than the releases read (0.4.0 on) may take --disable-flashinfer "
                "--disable-flashinfer-sampling in their place",
                note="0.4.0 refuses the two, naming --attention-backend triton and "
                "--sampling-backend in their place (server_args.py's DeprecatedAction)",
            )
        )
    if not old:
        fixes.append(
            Fix(
                "advice",
                "or a FlashInfer with kernels for this GPU: flashinfer-python compiles its "
                "kernels for the GPU it runs on, sm75 and newer (its JIT, read in 0.5.3 to "
                "0.7.4), at the version the engine release requires",
            )
        )
    gpu = f"compute capability {ctx.gpu[0]}.{ctx.gpu[1]}" if ctx.gpu else "this GPU"
    return (
        f"{which} has no kernel built for {gpu} ({kernel}): FlashInfer's gap, not the "
        "engine's, whose own backends run here"
        + ("; FlashInfer runs on nothing older than sm75" if old else ""),
        fixes,
    )


FLASHINFER_IMAGE_RULES: tuple[Rule, ...] = (("flashinfer-image", NO_IMAGE, no_image),)
