"""The answers of the families with no config fix: a file missing from the checkpoint, a model
class or engine path this release lacks, a request the model cannot take. Each says what would
help where no checkpoint edit or flag does."""

from __future__ import annotations

import re
from collections.abc import Callable

from patcher.advice.catalogue import Matched
from patcher.advice.log_rules import Fix, LogContext


def _no_config_fix(
    cause: str, advice: str
) -> Callable[[Matched, LogContext], tuple[str, list[Fix]]]:
    """An answer that is the same for every message of its family: the cause, and what would
    help where no config edit does."""

    def explain(_m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
        return cause, [Fix("advice", advice)]

    return explain


# A file of the checkpoint missing or unreadable.
_files = _no_config_fix(
    "a file the engine needs is missing or unreadable in the checkpoint (weights, index, "
    "config): no config edit helps",
    "check the model path and download the missing files (huggingface-cli download REPO)",
)
# A model class of this release without the path a quantization method's loader needs.
explain_feature_gap = _no_config_fix(
    "this release's model class has no path for this feature (the weight mapping a "
    "quantization method's loader needs): an engine gap; no config edit helps",
    "a later engine release may add it (which one is not read), or a checkpoint of the model "
    "in a format this release loads (AWQ, GPTQ, FP8, or unquantized)",
)


def explain_files(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    """A checkpoint file missing or unreadable; vLLM's "No supported config format found"
    (transformers_utils/config.py ``get_config``: config.json, then Mistral's params.json,
    each looked for at the model path or on the Hub) is neither file readable there."""
    if not re.search(r"config format found|detect config format", m.line, re.IGNORECASE):
        return _files(m, ctx)
    return (
        "neither config.json nor params.json could be read at the model path: a directory "
        "without them, or a Hub repository this machine cannot read (a gated one needs a "
        "token with access; offline, the cache must hold them)",
        [
            Fix("env", "HF_TOKEN=YOUR_TOKEN", note="for a gated Hub repository you have access to"),
            Fix("advice", "or the local directory that holds config.json as the model path"),
        ],
    )


# Weights or sizes that do not match the model class.
explain_shape = _no_config_fix(
    "the weights' shapes or the config's sizes do not match what the engine's model class "
    "builds: a checkpoint saved for another configuration, or an engine gap; no transform "
    "fixes it",
    "compare the config's sizes (hidden, intermediate, layers) with the weights; or another "
    "engine release",
)
# A request's input the model cannot take (a modality, a size): not a start-up failure.
explain_request = _no_config_fix(
    "a request's input (its modality, size or prompt) that this model's processor refuses: "
    "the server itself runs; no config edit helps",
    "send the input the message asks for, or serve a model that takes it",
)
# An engine invariant, or a path not implemented.
explain_internal = _no_config_fix(
    "an engine invariant failed, or the path is not implemented for this model: an engine "
    "bug or gap; no config edit helps",
    "report it to the engine with the full log; try another release",
)
