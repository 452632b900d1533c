"""doctor's answer for CUDA running out of memory during start-up, by the phase it ran out in.

A CUDA out-of-memory error says only that an allocation failed; which way out works depends on
what the engine was doing, which the log's earlier lines say:

- loading the weights: the weights do not fit on these GPUs. vLLM's utilization and SGLang's
  static fraction size the KV cache after the weights, so neither helps; more GPUs, a smaller
  checkpoint or a GPU free of other processes does.
- after the weights, before the KV cache is sized: vLLM's profiling pass, which
  ``--gpu-memory-utilization`` does not size; a shorter pass does (profile_pass.py). SGLang
  allocates its KV pool here, from ``--mem-fraction-static``: a lower fraction leaves room.
- profiling the CUDA graphs' memory (vLLM 0.29: "Profiling CUDA graph memory", a capture beside a
  minimal KV cache, still before the cache is sized): no graphs, or fewer.
- after the KV cache is sized, before CUDA graphs: the cache was sized too close to the GPU's
  end. A lower ``--gpu-memory-utilization`` (vLLM) or ``--mem-fraction-static`` (SGLang)
  leaves the rest room.
- capturing CUDA graphs: the graphs need memory the cache left no room for. The engines' own
  hints say what helps (vLLM's gpu_model_runner: "consider decreasing gpu_memory_utilization or
  switching to eager mode ... reduce the max_num_seqs"; SGLang's cuda_graph_runner: a smaller
  --mem-fraction-static, a smaller CUDA graph batch size, or no CUDA graph).
- after the graphs ("Graph capturing finished"): vLLM's warm-up, which runs after the KV
  cache took its share (gpu_worker's compile_or_warm_up_model: a dummy run and the sampler's
  or pooler's over min(max_num_seqs, max_num_batched_tokens) requests, read in the 0.26.0
  wheel, snapshots/engines/vllm-warmup-after-graphs.txt). A smaller share or fewer sequences,
  as its own message for the sampler says; the graphs are already taken.

A log that shows none of these phases gets no answer: the phase decides the direction, and a
fix in the wrong direction costs more than none.
"""

from __future__ import annotations

import re
from typing import Literal

from patcher.advice.log_rules import Fix
from patcher.advice.profile_pass import Chunking, profile_pass
from patcher.advice.startup_memory import fewer_sequences, more_gpus

Phase = Literal["loading", "loaded", "graphs", "sized", "capture", "warmup"]

# The phase lines, as vLLM (0.10 to 0.34, V1 and V0) and SGLang (0.5.x) log them, each with
# words one of which its lines hold (a substring test before the pattern).
_PHASES: tuple[tuple[Phase, tuple[str, ...], re.Pattern[str]], ...] = (
    ("warmup", ("aptur",), re.compile(r"Graph capturing finished")),
    (
        "capture",
        ("aptur",),
        re.compile(
            r"Capturing (?:CUDA graph|cudagraphs|the model for CUDA graphs)|"
            r"Capture (?:\w+ )?(?:cuda|CUDA) graph (?:begin|failed)"
        ),
    ),
    (
        "sized",
        ("emory", "ache", "blocks"),
        re.compile(
            r"Memory profiling|Available KV cache memory|KV Cache is allocated|Memory pool end|"
            r"GPU KV cache size|# GPU blocks"
        ),
    ),
    (
        "graphs",
        ("graph memory",),
        re.compile(r"Profiling CUDA graph memory"),
    ),
    (
        "loaded",
        ("weight end", "took"),
        re.compile(r"Load weight end|Model loading took|Loading (?:model )?weights took"),
    ),
    (
        "loading",
        ("begin", "load model", "shards"),
        re.compile(
            r"Load weight begin|Starting to load model|Loading (?:safetensors|pt) checkpoint shards"
        ),
    ),
)
# Every phase line holds one of these, a capture line the first (and every out-of-memory error
# and utilization "emory", or torch's "total capacity"): doctor tests a line for them (plain
# substring tests, in doctor.py) before any pattern here.
NOTED = ("aptur", "oad", "emory", "ache", "blocks")
# The allocation failure itself, as torch and the CUDA runtime word it (not the engines' hints
# that mention running out of memory).
OOM_WORDS = ("CUDA out of memory", "error: out of memory", "OutOfMemoryError")
# The utilization vLLM ran with: its non-default args, its memory profiling line, the command.
_UTILIZATION = re.compile(r"gpu[_-]memory[_-]utilization'?[:= ] ?([\d.]+)")


# The largest batch vLLM captures a CUDA graph for follows max_num_seqs: fewer, fewer graphs
_FEWER_GRAPHS = Fix("flag", "--max-num-seqs 128", note="fewer CUDA graph sizes to capture")

_RANK: dict[Phase | None, int] = {
    None: 0,
    "loading": 1,
    "loaded": 2,
    "graphs": 3,
    "sized": 4,
    "capture": 5,
    "warmup": 6,
}


def is_oom(line: str) -> bool:
    """Whether ``line`` is the allocation failure, as torch words it: whole, or quoted from
    its second sentence on ("Tried to allocate 136.00 MiB. GPU 0 has a total capacity of ...",
    c10's CUDACachingAllocator; "... total capacity; ..." before torch 2.1)."""
    return any(w in line for w in OOM_WORDS) or (
        "ried to allocate" in line and "otal capacity" in line
    )


def phase_of(line: str, past: Phase | None = None) -> Phase | None:
    """The start-up phase a log line says the engine has reached, if it is further than
    ``past`` (a later phase line is only searched for: most lines of a log repeat one)."""
    for phase, words, pattern in _PHASES:
        if _RANK[phase] <= _RANK[past]:
            return None
        if any(w in line for w in words) and pattern.search(line):
            return phase
    return None


def utilization_in(line: str) -> float | None:
    """The ``gpu_memory_utilization`` a vLLM log line shows, if it shows one."""
    found = _UTILIZATION.search(line)
    return float(found.group(1)) if found else None


def explain_oom(
    phase: Phase,
    engine: str | None,
    utilization: float | None = None,
    fraction: float | None = None,
    version: tuple[int, ...] | None = None,
    gpu: tuple[int, int] | None = None,
    chunked: Chunking = (None, None),
    *,
    tp: int | None = None,
    max_model_len: int | None = None,
) -> tuple[str, list[Fix]]:
    """The cause and the fixes of a CUDA out-of-memory error in ``phase`` of start-up (the
    release and the GPU the log shows size the sequences a warm-up is asked to run; chunked
    prefill, the length of vLLM's profiling pass)."""
    sglang = engine == "sglang"
    if phase == "loading":
        flag = "--tp-size" if sglang else "--tensor-parallel-size"
        return (
            "CUDA ran out of memory while loading the weights: they do not fit on these GPUs "
            "(the KV cache is sized after them, so no memory setting helps)",
            [
                more_gpus(flag, tp),
                Fix(
                    "advice",
                    "a smaller or quantized checkpoint, or free the GPU of other processes",
                ),
            ],
        )
    if phase == "loaded" and not sglang:
        return profile_pass(chunked, gpu, tp=tp, max_model_len=max_model_len)
    if phase == "graphs" and not sglang:
        return (
            "CUDA ran out of memory profiling the CUDA graphs' memory: vLLM captures them beside "
            "a minimal KV cache before it sizes the cache, so --gpu-memory-utilization does not "
            "size this",
            [
                Fix("flag", "--enforce-eager", note="no CUDA graphs to profile: slower decoding"),
                _FEWER_GRAPHS,
            ],
        )
    lower = _lower(fraction if sglang else utilization, sglang)
    if sglang:
        fixes = [lower]
        if phase == "capture":
            fixes += [
                Fix("flag", "--cuda-graph-max-bs 16", note="fewer, smaller CUDA graphs"),
                Fix("flag", "--disable-cuda-graph", note="no CUDA graphs: slower decoding"),
            ]
        return (_cause(phase, "the KV pool --mem-fraction-static sized"), fixes)
    fixes = [lower]
    if phase == "warmup":
        return (
            "CUDA ran out of memory in the warm-up after the CUDA graphs: it runs beside the "
            "share the KV cache took (--gpu-memory-utilization), over max_num_seqs requests",
            [lower, fewer_sequences(version, gpu, "the warm-up")],
        )
    if phase == "capture":
        fixes = [
            Fix("flag", "--enforce-eager", note="no CUDA graphs: slower decoding"),
            lower,
            _FEWER_GRAPHS,
        ]
    return (_cause(phase, "the KV cache --gpu-memory-utilization sized"), fixes)


def _cause(phase: Phase, sized: str) -> str:
    doing = {
        "capture": "capturing CUDA graphs",
        "sized": "after the KV cache was sized",
    }.get(phase, "after loading the weights")
    return (
        f"CUDA ran out of memory {doing}: {sized} left too little for the activations and "
        "the graphs"
    )


def _lower(ran: float | None, sglang: bool) -> Fix:
    """A lower memory share than the one the engine ran with (its default when not shown)."""
    flag = "--mem-fraction-static" if sglang else "--gpu-memory-utilization"
    if ran is None:
        default = "SGLang's default, set from the GPU's memory" if sglang else "0.9, the default"
        return Fix("flag", f"{flag} F", note=f"F below the share it ran with ({default})")
    value = max(0.1, round(ran - 0.05, 2))
    return Fix("flag", f"{flag} {value:g}", note=f"below the {ran:g} it ran with")
