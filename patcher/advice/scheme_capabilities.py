"""A compressed-tensors scheme asking more of the GPU than it has.

``CompressedTensorsConfig`` checks each layer's scheme against the GPU and refuses with the two
numbers and not the scheme: "Quantization scheme is not supported for the current GPU. Min
capability: 80. Current capability: 75." (vLLM's compressed_tensors.py, every release read
from 0.5; SGLang's copy). Releases lowered some schemes' minimum (vLLM's WNA16, the weight-only
int4 and int8 of AWQ- and GPTQ-style checkpoints: 80 up to 0.11, 75 from 0.12, once it could
run them with the Exllama kernel), so a GPU one release refuses may run the same checkpoint on
another. ``tools/read_quantization.py`` reads each scheme's constant ``get_min_capability``
per release (``scheme_capability:<Scheme>``); the schemes that asked the refused minimum are
the candidates, and the releases where one of them asks no more than the GPU has are the fix.
Which candidate a checkpoint is says its ``config.json`` (``quantization_config``'s groups).
"""

from __future__ import annotations

import re

from patcher.advice.catalogue import Engine, feature_releases, features_named, span_where, within
from patcher.advice.log_rules import Fix, LogContext, Rule

_FEATURE = "scheme_capability:"
# The parts of the message are a tuple's strings in the releases that raise it as one, so the
# numbers may sit between quotes: "Min capability: ', '80. ', 'Current capability: 75.'".
SCHEME_GPU = re.compile(
    r"Quantization scheme is not supported for\W+the current GPU\. (?:Min|Required) "
    r"capability:\W*(\d+)\.\W*Current capability:\W*(\d+)"
)


def _schemes(engine: Engine, need: int) -> list[str]:
    """The schemes some release read of ``engine`` records asking ``need`` of the GPU."""
    return sorted(
        feature[len(_FEATURE) :]
        for feature in features_named(engine, _FEATURE)
        if feature_releases(engine, feature, str(need))
    )


def scheme_gpu(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A compressed-tensors scheme whose minimum compute capability is above the GPU's: the
    releases read where a scheme that asked that minimum asks no more than the GPU has, or a
    hardware limit where none does."""
    need, have = int(m.group(1)), int(m.group(2))
    engine: Engine = "sglang" if (ctx.engine == "sglang" or "sglang" in m.string) else "vllm"
    candidates = _schemes(engine, need)
    runs: dict[str, list[str]] = {}  # the pip specifier -> the schemes it runs here
    for scheme in candidates:
        span = span_where(engine, _FEATURE + scheme, lambda cap: int(cap) <= have)
        if span is not None:
            runs.setdefault(within(*span), []).append(scheme)
    asked = ", ".join(candidates) or "none read"
    if not runs:
        return (
            f"the checkpoint's compressed-tensors scheme needs compute capability {need}, the "
            f"GPU has {have}; no {engine} release read asks {have} or less of the schemes that "
            f"asked {need} ({asked}): a hardware limit, no config edit helps",
            [Fix("advice", "another GPU, or a checkpoint in a format this GPU runs")],
        )
    ordered = sorted(runs.items(), key=lambda run: _first_key(run[0]))
    fixes = [
        Fix(
            "dependency",
            f"pip install '{engine}{bound}'",
            note=f"a {' or '.join(schemes)} checkpoint",
        )
        for bound, schemes in ordered
    ]
    fixes.append(Fix("advice", "or another GPU, or a checkpoint in a format this GPU runs"))
    return (
        f"the checkpoint's compressed-tensors scheme needs compute capability {need} in this "
        f"{engine}, the GPU has {have}; of the schemes that asked {need} ({asked}), releases "
        f"read ask at most {have} of some (get_min_capability, read per release); which scheme "
        "the checkpoint is says its config.json quantization_config",
        fixes,
    )


def _first_key(bound: str) -> tuple[int, ...]:
    """The first release of a ``>=first[,<after]`` specifier as a sort key."""
    first = bound[2:].split(",")[0]
    return tuple(int(p) for p in re.findall(r"\d+", first)[:3])


SCHEME_RULES: tuple[Rule, ...] = (("compressed-tensors-gpu", SCHEME_GPU, scheme_gpu),)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
SCHEME_MARKERS = ("Quantization scheme is not supported",)
