"""doctor's answer when the GPU lacks, at start, the memory vLLM asks for: ``Free memory on
device (free/total GiB) on startup is less than desired GPU memory utilization (u, asked
GiB)`` (``v1/worker/gpu_worker.py``, every release read). Something else holds the GPU's
memory, so a higher ``--gpu-memory-utilization`` only asks for more: the way out is the GPU
freed, or a utilization within what is free, where the model fits in that.

And the answer when what the profile run leaves holds no KV cache block (``No available memory
for the cache blocks``): the profile's step is too large for the GPU, or the share too small.

And a setting held against the blocks the cache got (``max_num_seqs (1024) exceeds available
Mamba cache blocks (969)``, vLLM's hybrid models: each running sequence holds one state block):
the setting at most what is available.

And the length a KV cache too small holds: vLLM's own estimate, or, where its message names
only the GiB one sequence needs and the GiB the cache has (0.9's, or a report's retelling of
it), the length asked in that proportion; never the length asked itself."""

from __future__ import annotations

import math
import re

from patcher.advice.catalogue import declared
from patcher.advice.log_rules import Fix, LogContext
from patcher.advice.own_remedy import as_flag

# vLLM's KV sizes for one sequence of the length asked: "(1.75 GiB KV cache is needed, which is
# larger than the available KV cache memory (0.13 GiB)", or a report's shorter retelling of it
# ("1.75 GiB KV cache is needed, available 0.13 GiB").
_KV_SIZES = re.compile(
    r"(\d+(?:\.\d+)?) ?GiB KV cache is needed\b.*?\bavailable\b\D*?(\d+(?:\.\d+)?) ?GiB",
    re.IGNORECASE,
)


def kv_share(line: str) -> tuple[float, float] | None:
    """The GiB one sequence of the length asked needs and the GiB the KV cache has, from vLLM's
    words, where the line gives both and the first is the larger; else None."""
    sizes = _KV_SIZES.search(line)
    if sizes is None:
        return None
    needed, available = float(sizes[1]), float(sizes[2])
    return (needed, available) if 0 < available < needed else None


def fitting_length(asked: int, sizes: tuple[float, float]) -> int:
    """The length the KV memory left holds, in proportion to the one asked: vLLM's own estimate
    where it prints none (before 0.10). No more: the layers of a sliding window need less per
    token, so the proportion holds at least this many."""
    needed, available = sizes
    return int(asked * available / needed)


def round_length(length: int) -> int:
    """A length down to vLLM's step of 1,024 tokens, never below one step."""
    return max(1024, length // 1024 * 1024)


def shorter_lengths(line: str, asked: int | None, fits: int | None) -> list[Fix]:
    """``--max-model-len`` for a KV cache too small: the length that fits (vLLM's estimate, or
    its sizes' proportion), or the sizes' share of a length the line does not name, or an
    example shorter than the length asked, never the length asked itself."""
    sizes = kv_share(line)
    if not fits and asked and sizes:
        fits = fitting_length(asked, sizes)
    fixes: list[Fix] = []
    if asked and fits and fits < asked:
        fixes.append(Fix("flag", f"--max-model-len {round_length(fits)}"))
    if asked is None and sizes:
        needed, available = sizes
        # advice, not a flag: the length asked is not in the line, so no value can be given
        text = (
            f"a --max-model-len at most {available / needed:.0%} of the length asked: the KV "
            f"cache memory holds {available:g} of the {needed:g} GiB one sequence of it needs"
        )
        fixes.append(Fix("advice", text))
    elif asked is None or asked > 32768:
        note = "a shorter context needs less KV memory"
        fixes.append(Fix("flag", "--max-model-len 32768", note=note))
    elif asked >= 2048:  # an example, never one at or above the length asked
        note = f"an example: shorter than the {asked} asked; the log gives no KV size to fit it to"
        fixes.append(Fix("flag", f"--max-model-len {round_length(asked // 2)}", note=note))
    return fixes


# "SETTING (N) exceeds available WHAT (M)": a count the engine holds against what it allocated
EXCEEDS = re.compile(r"\b([a-z_]+) \((\d+)\) exceeds (?:the )?available ([\w ]+?) \((\d+)\)")


def too_little_free(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """The free and total GiB, the utilization and the GiB it asked for, from the message."""
    free, total, utilization, asked = (float(g) for g in m.groups())
    held = total - free
    cause = (
        f"something else holds {held:.2f} of the GPU's {total:.2f} GiB (another process: a "
        f"server, a notebook, one left over; or this one's own CUDA context), and vLLM asks "
        f"at start for {utilization:g} of it "
        f"({asked:.2f} GiB), more than the {free:.2f} GiB free: a higher utilization asks "
        "for more"
    )
    fixes = [Fix("advice", "free the GPU of the other process (nvidia-smi lists it)")]
    within = math.floor(free / total * 100) / 100 - 0.01  # a margin below the free share
    if within >= 0.1:
        fixes.append(
            Fix(
                "flag",
                f"--gpu-memory-utilization {within:.2f}",
                note=f"within the {free:.2f} GiB free, if the weights and a KV cache fit in "
                f"{within * total:.1f} GiB",
            )
        )
    return cause, fixes


# The first read release whose API server defaults to 1024 sequences on a GPU of 70 GiB or
# more, 256 before and on smaller GPUs (snapshots/engines/max-num-seqs-default-vllm.txt); every
# read release's profile run runs max_num_seqs sequences (V0's worker/model_runner.py, V1's
# _dummy_sampler_run), so fewer of them leave more memory for the KV cache.
_SEQS_1024_FROM = (0, 8, 5)
# The compute capabilities whose every GPU has 70 GiB or more (Hopper's H100/H200/H20/GH200,
# Blackwell's B200/B300): where a log names one, the default it ran with was the larger one.
_LARGE_ONLY = frozenset({9, 10})


def large_gpu(gpu: tuple[int, int] | None) -> bool:
    """Whether the GPU a log names (its compute capability) has 70 GiB or more, as vLLM's
    server defaults tell GPUs apart (arg_utils: more sequences and a larger batch above)."""
    return gpu is not None and gpu[0] in _LARGE_ONLY


def fewer_sequences(
    version: tuple[int, ...] | None, gpu: tuple[int, int] | None, run: str, more: str = ""
) -> Fix:
    """``--max-num-seqs``, a quarter of the default the run had as far as the log shows it
    (``version``, ``gpu``): 1024 only where it shows both a release from 0.8.5 (or none) and a
    GPU that has 70 GiB or more; else 256, the default everywhere else, said unsure where the
    log names no GPU. Never the default itself: a flag that changes nothing is no fix."""
    recent = version is None or version >= _SEQS_1024_FROM
    default = 1024 if recent and large_gpu(gpu) else 256
    unsure = default == 256 and recent and gpu is None
    return Fix(
        "flag",
        f"--max-num-seqs {default // 4}",
        note=f"fewer sequences in {run}: a quarter of the default, {default}"
        + (" (1024 from 0.8.5 on a GPU of 70 GiB or more; the log names no GPU)" if unsure else "")
        + more,
    )


def no_cache_memory(_m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """vLLM sizes the KV cache from what its profile run leaves: the weights and the largest
    step the flags allow (max_num_batched_tokens tokens over max_num_seqs sequences, their
    logits, a multimodal model's encoder items), so a smaller step is a way out, as is a larger
    share of the GPU."""
    return (
        "the weights and the profile run's largest step leave no memory for the KV cache",
        [
            fewer_sequences(
                ctx.version,
                ctx.gpu,
                "the profile run",
                "; lower still if it still finds no memory (a multimodal model profiles its "
                "items per sequence too: --limit-mm-per-prompt)",
            ),
            Fix(
                "flag",
                "--gpu-memory-utilization 0.95",
                note="or more GPUs: --tensor-parallel-size N",
            ),
            Fix("advice", "a smaller or more quantized checkpoint"),
        ],
    )


def within_available(line: str) -> list[Fix]:
    """``--SETTING M`` where the line holds a setting of vLLM (read) above the M available."""
    over = EXCEEDS.search(line)
    if over is None:
        return []
    flag = as_flag(over.group(1))
    if not declared("vllm", flag):
        return []
    return [
        Fix(
            "flag",
            f"{flag} {over.group(4)}",
            note=f"at most the {over.group(4)} {over.group(3)} the engine had ({over.group(2)} "
            "asked); more memory for the cache gives more",
        )
    ]


# The way out every memory shortage of vLLM's shares: the weights split over more GPUs.
MORE_GPUS = Fix("advice", "more GPUs: --tensor-parallel-size N divides the weights")


def more_gpus(flag: str = "--tensor-parallel-size", tp: int | None = None) -> Fix:
    """The weights split over N GPUs, as the engine's tensor-parallel ``flag``: a way out of
    memory where no share of the GPU is (loading the weights, vLLM's profiling pass). Where the
    log shows the size it ran with (``tp``), N is the next power of two above it, up to the
    eight GPUs of one node; past that, or where it shows none, N stays to be chosen."""
    if tp is not None and tp < 8:
        more = 1 << tp.bit_length()  # the next power of two above tp
        return Fix(
            "flag",
            f"{flag} {more}",
            note=f"more GPUs than the {tp} the log shows: each holds 1/{more} of the weights "
            "(the attention heads must divide by it)",
        )
    return Fix("flag", f"{flag} N", note="more GPUs: each holds 1/N of the weights")


# SGLang's data-parallel attention splits the attention weights over tensor-parallel size / dp
# size GPUs only, each data-parallel rank holding a copy: 0.4.1 sets the dp size to the tp size
# and builds every attention projection ReplicatedLinear and the embedding unsplit
# (server_args.py, models/deepseek_v2.py), later releases ``attn_tp_size = tp_size //
# dp_size`` (layers/dp_attention.py). Its weights take more of each GPU than tensor
# parallelism's, which no --mem-fraction-static at or below 0.9 may make up
# (snapshots/engines/sglang-dp-attention.txt).
DP_CAUSE = (
    "--enable-dp-attention keeps a copy of the attention weights on each data-parallel rank "
    "(tensor-parallel size / dp size GPUs share one, every GPU in SGLang 0.4.1), so the weights "
    "take more of each GPU than with tensor-parallel attention"
)
DP_FIXES = [
    Fix(
        "advice",
        "drop --enable-dp-attention",
        note="the attention weights are then divided over all --tp-size GPUs",
    ),
    Fix(
        "advice",
        "or a smaller --dp-size (fewer copies) where the release divides them over tp/dp "
        "GPUs (0.4.1 sets the dp size to the tp size), or more GPUs",
    ),
]
# The cause where a setting is held against the blocks the KV cache's pool got.
POOL_HELD = (
    "a setting is above the count of blocks the KV cache's pool got (the engine says so "
    "itself): the setting at most that count, or more memory for the pool"
)


def against_the_pool(line: str, own: list[Fix]) -> list[Fix]:
    """The answer where ``line`` holds a setting against a count the KV cache's pool got
    (vLLM's Mamba blocks, one per running sequence; config/compilation.py), with the message's
    ``own`` remedy; none where it holds no such count. The count is the pool's memory over its
    page and layers (kv_cache_utils.py's ``get_num_blocks``), which no shorter context changes:
    the setting at most the count, or more memory for the pool, as the message says."""
    held = within_available(line)
    if not held:
        return []
    return [
        *held,
        *own,
        Fix(
            "flag",
            "--gpu-memory-utilization N",
            note="a larger value gives the pool more blocks, in proportion to its memory (the "
            "message's own alternative): a share near the GPU's may still hold too few",
        ),
        MORE_GPUS,
    ]
