"""vLLM's profiling pass: the forward pass a worker runs after loading the weights and before
sizing the KV cache, and the way out of CUDA running out of memory in it.

Between "Model loading took" and "Available KV cache memory" (V1; V0: "Loading model weights
took" and "# GPU blocks"), the worker runs ``profile_run``: the multimodal encoder over its
dummy items (V1), one forward pass over ``max_num_batched_tokens`` tokens, and the sampler's or
the pooler's dummy run. Only then is the cache sized, from ``--gpu-memory-utilization`` less
what the pass took (gpu_worker's ``determine_available_memory``; V0's
``determine_num_available_blocks``): a lower share frees nothing the pass needs. A shorter pass
does, and how to shorten it depends on chunked prefill:

- on (V1's default), the pass is ``max_num_batched_tokens`` long;
- off, ``max_num_batched_tokens`` is at least ``max_model_len`` (the scheduler refuses less), so
  the pass is the whole context: chunked prefill on, or a shorter ``--max-model-len``. V0 turned
  it on by default only over a 32K context, "to avoid OOM errors in the initial memory
  profiling phase" (its arg_utils).

Read in the 0.29.0 and 0.6.3.post1 wheels: snapshots/engines/vllm-profile-run.txt.
"""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix
from patcher.advice.startup_memory import large_gpu, more_gpus

# Chunked prefill as the log shows it (None: not shown), and the max_num_batched_tokens it ran.
Chunking = tuple[bool | None, int | None]

# The scheduler's own line (V0 and V1 log it whenever chunked prefill is on).
_ON = re.compile(r"Chunked prefill is enabled with max_num_batched_tokens=(\d+)")
# Off: the command line's switch, vLLM's non-default args (or V0's Namespace), its engine config.
_OFF = re.compile(
    r"--no-enable-chunked-prefill|--enable-chunked-prefill[= ](?:False|false)\b|"
    r"enable_chunked_prefill'?[:=] ?False|chunked_prefill_enabled=False"
)


def chunking(line: str, known: Chunking) -> Chunking:
    """What ``line`` says of chunked prefill, over what the log said before (``known``)."""
    if (on := _ON.search(line)) is not None:
        return (True, int(on.group(1)))
    if "Chunked prefill is enabled" in line:  # V0's "enabled by default for ... > 32K"
        return (True, known[1])
    if _OFF.search(line) is not None:
        return (False, known[1])
    return known


def profile_pass(
    chunked: Chunking,
    gpu: tuple[int, int] | None = None,
    *,
    tp: int | None = None,
    max_model_len: int | None = None,
) -> tuple[str, list[Fix]]:
    """The cause and the fixes of CUDA running out of memory in vLLM's profiling pass (the GPU
    the log names, by compute capability, sizes the batch where the log shows none; the
    tensor-parallel size and context length it shows give the fixes their values)."""
    on, batched = chunked
    cause = (
        "CUDA ran out of memory in vLLM's profiling pass, after the weights and before the KV "
        "cache is sized: one forward pass over max_num_batched_tokens tokens, which "
        "--gpu-memory-utilization does not size"
    )
    gpus = more_gpus(tp=tp)
    shorter_len = max_model_len // 2 // 1024 * 1024 if max_model_len else 0
    context = (
        Fix(
            "flag",
            f"--max-model-len {shorter_len}",
            note=f"a shorter context, half the {max_model_len} the log shows: with chunked "
            "prefill off, the pass is the whole context",
        )
        if shorter_len >= 1024
        else Fix(
            "flag",
            "--max-model-len N",
            note="a shorter context: with chunked prefill off, the pass is the whole context",
        )
    )
    if on is False:
        return (
            cause + "; with chunked prefill off, the whole --max-model-len",
            [
                Fix(
                    "flag",
                    "--enable-chunked-prefill",
                    note="the pass is then max_num_batched_tokens long, not the whole context",
                ),
                context,
                gpus,
            ],
        )
    if on and batched is not None:
        half = batched // 2 // 256 * 256
        if half < 1024:  # no shorter pass the scheduler takes beside its default sequences
            return (cause, [gpus])
        return (
            cause,
            [
                Fix(
                    "flag",
                    f"--max-num-batched-tokens {half}",
                    note=f"a shorter pass: half the {batched} it ran with",
                ),
                gpus,
            ],
        )
    # The API server's default batch (arg_utils, 0.29.0): 8192 (16384 from 160 GiB) on a GPU
    # of 70 GiB or more, 2048 below. Half of it, or 1024 where the GPU is not named: below
    # every default, and not below the default sequences (1024 at most).
    large = large_gpu(gpu)
    shorter = Fix(
        "flag",
        f"--max-num-batched-tokens {4096 if large else 1024}",
        note="a shorter pass than the server's default batch ("
        + ("8192 or more on this GPU" if large else "2048 or more")
        + "); where chunked prefill is off (--no-enable-chunked-prefill, or V0 below a 32K "
        "context) the scheduler refuses a value below max_model_len: turn it on, or shorten "
        "--max-model-len",
    )
    return (cause, [shorter, context, gpus])
