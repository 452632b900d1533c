"""The Marlin kernel refusing a weight shard that is not a multiple of its tile.

Marlin runs weight-only quantized layers (GPTQ and AWQ, and FP8 or FP4 on a GPU without native
support for the format). Its repack takes a shard of the weight, per tensor-parallel rank, only
in multiples of its tile ("size_n = 2736 is not divisible by tile_n_size = 64": GLM-4.5-Air's
gate and up projections, 2 x 10944, split eight ways). vLLM pads a shard to the tiles from the
releases whose ``marlin_utils.py`` defines the padding and another module calls it (feature
``marlin_pads``: ``dense`` linear layers, ``moe`` experts); before them, a smaller tensor-parallel
size whose shard is a multiple, the GPUs kept by pipeline parallelism, can do.
"""

from __future__ import annotations

import re

from patcher.advice.catalogue import feature_releases, span_of
from patcher.advice.log_rules import Fix, LogContext, Rule

_TILE = re.compile(r"size_([nk]) = (\d+) is not divisible by tile_[nk]_size = (\d+)")


def padding_release() -> str | None:
    """The first vLLM release of the last unbroken run that pads both the dense and the expert
    shards to Marlin's tiles."""
    padded = {path: set(feature_releases("vllm", "marlin_pads", path)) for path in ("dense", "moe")}
    span = span_of("vllm", lambda r: all(r in releases for releases in padded.values()))
    return span[0] if span is not None and span[1] is None else None


def _smaller_tp(size: int, tile: int, tp: int) -> int | None:
    """The largest power of two below ``tp`` whose shard of the whole dimension is a multiple
    of the tile (the whole: ``size`` on each of ``tp`` ranks)."""
    whole = size * tp
    fits = [t for t in (tp >> s for s in range(1, tp.bit_length())) if whole % (t * tile) == 0]
    return fits[0] if fits else None


def marlin_tile(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A shard the Marlin repack refuses: the release that pads it, or a smaller shard."""
    axis, size, tile = m.group(1), int(m.group(2)), int(m.group(3))
    fixes: list[Fix] = []
    release = padding_release()
    if release is not None and "vllm" in ctx.engines():
        fixes.append(
            Fix(
                "dependency",
                f"pip install 'vllm>={release}'",
                note="the first vLLM release read that pads a weight shard to Marlin's tiles, "
                "linear layers and experts (marlin_utils.py)",
            )
        )
    tp = ctx.tp or 1
    smaller = _smaller_tp(size, tile, tp) if tp > 1 else None
    if smaller is not None:
        flag = "--tp-size" if ctx.engine == "sglang" else "--tensor-parallel-size"
        stages = "--pp-size" if ctx.engine == "sglang" else "--pipeline-parallel-size"
        fixes.append(
            Fix(
                "advice",
                f"or {flag} {smaller} {stages} {tp // smaller}: this weight's shard becomes "
                f"{size * tp // smaller}, a multiple of {tile}, on the same {tp} GPUs (another "
                "weight may still need the same)",
            )
        )
    split = f" (the weight split {tp} ways)" if tp > 1 else ""
    return (
        f"the Marlin kernel (weight-only quantized layers) takes a weight shard only in "
        f"multiples of its tile: this rank's {axis} dimension is {size}, not a multiple of "
        f"{tile}{split}",
        fixes,
    )


MARLIN_RULES: tuple[Rule, ...] = (("marlin-tile", _TILE, marlin_tile),)
MARLIN_MARKERS = ("is not divisible by tile_",)
