"""FlashInfer's JIT finding no architecture to compile for, or failing to compile a kernel.

FlashInfer compiles its kernels when first used (the sampler, a MoE or attention kernel) for
the architectures in its compilation context, and refuses when none is sm75 or newer:
``check_cuda_arch`` in ``flashinfer/jit/core.py`` raises "FlashInfer requires GPUs with sm75 or
higher" (read in flashinfer-python 0.5.3, 0.6.8.post1 and 0.7.4, the releases vLLM 0.11 to
0.34 require). The context (``flashinfer/compilation_context.py``) takes the architectures
from ``FLASHINFER_CUDA_ARCH_LIST`` when set, else from each GPU torch sees; a GPU whose
architecture the CUDA toolkit FlashInfer compiles with cannot target is dropped with a warning
("Failed to get device capability: SM 12.x requires CUDA >= 12.9", 0.6; 0.7 accepts SM 12.0
from CUDA 12.8 and keeps 12.9 for SM 12.1 on). The toolkit is the nvcc under ``CUDA_HOME`` or
``CUDA_PATH``, else the one on PATH (``flashinfer/jit/cpp_ext.py``), not torch's own CUDA. So
on a GPU of 7.5 or newer the set is empty because the toolkit is older than the GPU, or torch
saw no GPU in that process.

A kernel that does not compile is named by its folder: ``run_ninja`` (``flashinfer/jit/
cpp_ext.py``, 0.5 on) runs ``ninja -f <jit dir>/<uri>/build.ninja`` and raises "Ninja build
failed" from the CalledProcessError; the older JIT went through torch's cpp_extension, "Error
building extension '<uri>'". The URI spells out what the kernel was built for
(``jit/attention/modules.py``'s ``get_batch_prefill_uri`` and its kin, read in 0.5.2):
``..._dtype_q_bf16_dtype_kv_e4m3_..._head_dim_qk_128_...``, ``_sm90`` for the Hopper (FA3)
variant, the dtypes in ``jit/utils.py``'s ``filename_safe_dtype_map`` (e4m3, e5m2 the FP8
ones)."""

from __future__ import annotations

import re

from patcher.advice.attention_rules import unforce
from patcher.advice.log_rules import Fix, LogContext, vllm_env

# The message, not the raise that a traceback echoes above it (its source line).
REFUSED = re.compile(r"(?<![(\"'])FlashInfer requires GPUs with sm75 or higher")


def _arch(gpu: tuple[int, int]) -> str:
    """``FLASHINFER_CUDA_ARCH_LIST``'s spelling of a GPU: a suffix taken as given (12.0a),
    the suffix compilation_context adds from 9.0 on (``_normalize_cuda_arch``)."""
    major, minor = gpu
    return f"{major}.{minor}a" if major >= 9 else f"{major}.{minor}"


def sampler_off(version: tuple[int, ...] | None, where: str = "") -> list[Fix]:
    """vLLM's switch from FlashInfer's top-k/top-p sampling to PyTorch's own (envs.py), for the
    releases read that have it; none where no release read has it, or for a log's ``version``
    older than the first that does."""
    return vllm_env(
        "VLLM_USE_FLASHINFER_SAMPLER=0",
        f"{where}vLLM samples with PyTorch's own top-k/top-p instead",
        version,
    )


def no_arch(_m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """FlashInfer's JIT refusing: the GPU older than 7.5, or (on a newer one) the CUDA
    toolkit it compiles with too old for the GPU, or no GPU seen by that process."""
    where = "where the traceback runs through FlashInfer's sampling (flashinfer/sampling.py): "
    sampler = sampler_off(ctx.version, where) if ctx.engine != "sglang" else []
    if ctx.gpu is not None and ctx.gpu < (7, 5):
        major, minor = ctx.gpu
        return (
            f"the GPU (compute capability {major}.{minor}) is older than FlashInfer compiles "
            "for (sm75 on): a kernel the engine takes from FlashInfer does not run on it",
            [
                *sampler,
                Fix(
                    "advice",
                    "no config fix for FlashInfer's kernels on this GPU: the engine's other "
                    "kernels (its attention backend and MoE flags), or a GPU of 7.5 or newer",
                ),
            ],
        )
    arch = (
        Fix(
            "env",
            f"FLASHINFER_CUDA_ARCH_LIST={_arch(ctx.gpu)}",
            note="FlashInfer then compiles for the architecture given instead of detecting it "
            "(compilation_context.py reads this first; a suffix is taken as given)",
        )
        if ctx.gpu is not None
        else Fix(
            "advice",
            "or FLASHINFER_CUDA_ARCH_LIST=MAJOR.MINOR, the GPU's compute capability "
            "(nvidia-smi --query-gpu=compute_cap --format=csv), with an a after it from 9.0 "
            "on (12.0a): FlashInfer then compiles for it without detecting it",
        )
    )
    if ctx.gpu is not None and ctx.gpu[0] != 12:
        major, minor = ctx.gpu
        return (
            "FlashInfer's JIT found no GPU architecture to compile its kernels for "
            f"(flashinfer/jit/core.py): the GPU (compute capability {major}.{minor}) needs no "
            "newer CUDA toolkit, so torch saw no GPU in the process FlashInfer compiled in; its "
            "warning 'Failed to get device capability' above the error says why",
            [arch, *sampler],
        )
    needs = "12.9" if ctx.gpu is None or ctx.gpu[1] else "12.8 (FlashInfer 0.7) or 12.9 (0.6)"
    gpu = f"the GPU (compute capability 12.{ctx.gpu[1]})" if ctx.gpu else "an SM 12.x GPU"
    # advice, not an assignment to paste: the folder is the user's own toolkit's
    toolkit = Fix(
        "advice",
        f"CUDA_HOME set to a CUDA toolkit of {needs} or later for {gpu}: FlashInfer compiles "
        "with the nvcc under CUDA_HOME, else the one on PATH, not torch's own CUDA (nvcc "
        "--version tells which it has)",
    )
    return (
        "FlashInfer's JIT found no GPU architecture of sm75 or newer to compile its kernels "
        "for (flashinfer/jit/core.py): "
        + (
            f"the CUDA toolkit it compiles with is older than {gpu} needs ({needs})"
            if ctx.gpu is not None
            else "on a GPU of 7.5 or newer, the CUDA toolkit it compiles with is too old for "
            f"the GPU (an SM 12.x GPU needs {needs}), or torch saw no GPU in that process"
        )
        + "; its warning 'Failed to get device capability' above the error says which",
        [toolkit, arch, *sampler],
    )


# The ninja command FlashInfer ran over one kernel's folder, or torch's cpp_extension naming an
# attention kernel's URI (the older JIT).
BUILD_FAILED = re.compile(
    r"Command '\['ninja', [^\]]*?flashinfer[^\]]*?/(\w+)/build\.ninja'\]' returned non-zero"
    r"|Error building extension '(\w*_dtype_kv_\w+)'"
)


def kernel_unbuilt(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A FlashInfer kernel its JIT could not compile: for an FP8 KV cache, the KV dtype (a
    kernel this FlashInfer does not build for that GPU); else the toolkit it compiles with."""
    uri = m.group(1) or m.group(2)
    kv = re.search(r"_dtype_kv_(\w+?)_", uri)
    kv_dtype = kv.group(1) if kv else None
    others = (
        unforce(ctx.version)
        if ctx.engine != "sglang"
        else [Fix("advice", "drop --attention-backend flashinfer if it was given")]
    )
    hopper = " (its Hopper FA3 variant, _sm90)" if uri.endswith("_sm90") else ""
    if kv_dtype in ("e4m3", "e5m2"):
        return (
            f"FlashInfer's JIT failed to compile its attention kernel for an FP8 ({kv_dtype}) "
            f"KV cache{hopper} (kernel {uri}): the KV dtype is what that kernel is built for",
            [
                Fix(
                    "flag",
                    "--kv-cache-dtype auto",
                    note="the KV cache in the model's own dtype, which FlashInfer builds; it "
                    "takes twice the bytes: patcher kv-budget says what context then fits",
                ),
                *others,
            ],
        )
    return (
        f"FlashInfer's JIT could not compile a kernel (kernel {uri}) with the CUDA toolkit it "
        "compiles with (FLASHINFER_NVCC, else the nvcc under CUDA_HOME or CUDA_PATH, else the "
        "one on PATH; not torch's own CUDA): the first 'error' line of the Ninja output above "
        "says why",
        [
            Fix(
                "advice",
                "a CUDA toolkit of the CUDA torch was built for (python -c 'import torch; "
                "print(torch.version.cuda)'), with CUDA_HOME set to it",
            ),
            *others,
        ],
    )


# One plain word of each rule above, for the line filter (engine_rules._MARKERS): the refusal,
# run_ninja's command over a kernel's folder, cpp_extension's words.
FLASHINFER_JIT_MARKERS = ("FlashInfer requires GPUs", "'ninja', ", "Error building extension '")
