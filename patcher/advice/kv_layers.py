"""The layers of a model as vLLM's KV cache sees them: sliding-window layers (``layer_types``),
the KV-cache groups a pool block holds, and the layers each pipeline stage keeps.

A sliding-window layer holds at most its window plus the tokens in flight, whatever the
context; read from vLLM 0.32's ``v1/kv_cache_interface.py`` (SlidingWindowSpec),
``v1/core/kv_cache_utils.py`` (the group size, the start-up check's held-back block, the logged
KV cache size) and ``distributed/utils.py`` (get_pp_indices), and held to the live engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Tokens scheduled but not yet freed, which a sliding-window layer holds beside its window
# (vLLM 0.32 SlidingWindowSpec: max_concurrent_batches x max_num_batched_tokens). On the CPU
# backend 2,048 (one batch of the API server's default; the live engine agrees to the token,
# states h2 and h3); on GPUs it depends on the GPU and async scheduling, so an allowance: two
# batches of 8,192 (the API server's default on large GPUs).
IN_FLIGHT_CPU = 2048
IN_FLIGHT_GPU_ALLOWANCE = 2 * 8192
LONGEST = 2**31 - 1


@dataclass(frozen=True, slots=True)
class SlidingLayers:
    """The sliding-window layers of a config (``layer_types``), and what bounds their KV."""

    layers: int
    window: int
    in_flight_tokens: int
    in_flight_source: str
    group_size: int  # layers per KV-cache group: one pool block holds a group's block

    def to_json(self) -> dict[str, Any]:
        """Sliding layers as JSON."""
        return {
            "layers": self.layers,
            "window": self.window,
            "in_flight_tokens": self.in_flight_tokens,
            "in_flight_source": self.in_flight_source,
            "group_size": self.group_size,
        }


def sliding_layers(model: dict[str, Any], layers: int) -> tuple[list[bool], int] | None:
    """Which layers ``layer_types`` marks "sliding_attention", and their window, when the
    config has one (gpt-oss, Gemma 3, Llama-style hybrids); None otherwise."""
    kinds = model.get("layer_types")
    window = model.get("sliding_window")
    if model.get("use_sliding_window") is False or not isinstance(window, int) or window < 1:
        return None
    if not isinstance(kinds, list) or len(kinds) != layers:
        return None
    marks = [kind == "sliding_attention" for kind in kinds]
    return (marks, window) if any(marks) else None


def pipeline_stages(layers: int, stages: int) -> list[tuple[int, int]]:
    """The layers each pipeline stage holds, as vLLM splits them (distributed/utils.py
    get_pp_indices, 0.32): evenly, the remainder one each to the stages before the last."""
    sizes = [layers // stages] * stages
    for i in range(2, layers % stages + 2):
        sizes[-i] += 1
    starts = [sum(sizes[:i]) for i in range(stages)]
    return [(start, start + size) for start, size in zip(starts, sizes, strict=True)]


def group_size(full: int, sliding: int) -> int:
    """vLLM's KV-cache group size (kv_cache_utils, 0.32): the smaller count of layers of one
    kind, or the larger when they are within 1.5x of each other; all layers when uniform."""
    if not full or not sliding:
        return full + sliding
    small, large = min(full, sliding), max(full, sliding)
    return large if large < small * 1.5 else small


def context_hint(model: dict[str, Any]) -> int | None:
    """The context the engine would serve, for the KV cache size it logs (a hybrid's size in
    tokens depends on it): max_position_embeddings."""
    raw = model.get("max_position_embeddings")
    return raw if isinstance(raw, int) and not isinstance(raw, bool) and raw > 0 else None


def hybrid_figures(
    full: int,
    sliding: SlidingLayers,
    layer_token_bytes: int,
    block: int,
    free: int,
    context: int | None,
) -> tuple[int, int, int]:
    """(longest context, pool blocks, logged KV cache size) for a model with sliding-window
    layers, as vLLM 0.32 counts them (v1/kv_cache_interface.py and core/kv_cache_utils.py):
    a full layer needs ceil(L / B) blocks, a sliding one ceil(min(W - 1 + F, L) / B) + 1, the
    start-up check holds one pool block back, and the logged size is the pool's blocks over a
    request's blocks, times the context."""
    page = block * layer_token_bytes

    def window_blocks(length: int) -> int:
        span = min(sliding.window - 1 + sliding.in_flight_tokens, length)
        return -(-span // block) + 1

    def needed(length: int) -> int:
        full_blocks = full * -(-length // block)
        return (full_blocks + sliding.layers * window_blocks(length)) * page

    usable = free - page * sliding.group_size
    low, high, longest = 1, LONGEST, 0
    if usable > 0 and needed(1) <= usable:
        while low <= high:
            mid = (low + high) // 2
            if needed(mid) <= usable:
                longest, low = mid, mid + 1
            else:
                high = mid - 1
    pool = max(0, free // (page * sliding.group_size))
    length = context or block
    groups_full = -(-full // sliding.group_size) if full else 0
    groups_sliding = -(-sliding.layers // sliding.group_size)
    per_request = groups_full * -(-length // block) + groups_sliding * window_blocks(length)
    return longest, pool, int(pool / per_request * length)
