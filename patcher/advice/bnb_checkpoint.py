"""doctor's answer when vLLM reads a bitsandbytes pre-quantized checkpoint with another loader.

A checkpoint bitsandbytes quantized ahead of time (``quantization_config.quant_method:
bitsandbytes``; Unsloth's ``-bnb-4bit`` uploads) stores each quantized weight packed, with its
quantization state beside it under names only bitsandbytes writes: a last part holding
``absmax``, ``quant_map``, ``nested_absmax``, ``nested_quant_map`` or ``bitsandbytes``
(``weight.quant_state.bitsandbytes__nf4``) for 4-bit, ending ``.SCB`` or ``.weight_format`` for
8-bit. Only vLLM's ``BitsAndBytesModelLoader`` reads those names (``_is_4bit_weight_name`` and
``_is_8bit_weight_name`` in ``model_executor/model_loader/loader.py``, read in 0.6.6.post1 and
0.7.3); every other loader looks each name up among the model's parameters, and the first
quantization state it meets is a ``KeyError``. Up to 0.7.3 (read) vLLM chose that loader only
for ``--load-format bitsandbytes`` with ``--quantization bitsandbytes`` (``arg_utils.py`` refuses
either without the other); from 0.8.5 (read) it sets both from the checkpoint's
``quantization_config``, so there the error means a config.json that does not say it. Either
way, both flags make vLLM read the checkpoint as what it is.
"""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix, LogContext, Rule

# A KeyError naming a bitsandbytes quantization-state weight (the loader's suffixes above).
STATE_KEY = re.compile(
    r"KeyError: '([\w.]*\.(?:[\w]*(?:absmax|quant_map|bitsandbytes)\w*|SCB|weight_format))'",
    re.IGNORECASE,
)


def state_unread(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A bitsandbytes quantization-state weight no loader took: the bitsandbytes loader."""
    if ctx.engine == "sglang":
        return "", []  # SGLang's loader is not read here
    return (
        f"the checkpoint is bitsandbytes pre-quantized ({m.group(1)} is bitsandbytes' "
        "quantization state), and vLLM read it with a loader that does not know those weights: "
        "only its bitsandbytes loader reads them, chosen by --load-format bitsandbytes (up to "
        "0.7.3, read) or by a quantization_config in config.json (0.8.5 on, read)",
        [
            Fix(
                "flag",
                "--quantization bitsandbytes --load-format bitsandbytes",
                note="both: vLLM up to 0.7.3 refuses either without the other",
            ),
        ],
    )


BNB_CHECKPOINT_RULES: tuple[Rule, ...] = (("bnb-prequantized-checkpoint", STATE_KEY, state_unread),)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
BNB_CHECKPOINT_MARKERS = ("KeyError: '",)
