"""doctor's answer when the checkpoint given as the model is a LoRA adapter's weights.

PEFT saves a LoRA adapter's weights under the names of the modules they adapt, with
``lora_A``/``lora_B`` (``lora_embedding_A``/``lora_embedding_B`` for an embedding) before the
last part and, from a ``PeftModel``, the prefix ``base_model.model.``. The engines read such
names only on their LoRA path (vLLM's ``parse_fine_tuned_lora_name`` in ``vllm/lora/utils.py``,
read in 0.6.6.post1: it strips ``base_model.model.`` and takes ``lora_A``/``lora_B``); a model's
own ``load_weights`` looks them up among the base model's parameters and fails on the first:
``KeyError: 'base_model.model.model.layers.0.self_attn.qkv_proj.lora_A.weight'``. The adapter is
served beside its base model (vLLM's ``--enable-lora --lora-modules NAME=PATH``, 0.4.3 on, read;
SGLang's ``--lora-paths NAME=PATH``, 0.4.0 on, read), or merged into it and saved whole.
"""

from __future__ import annotations

import re

from patcher.advice.catalogue import Engine, read_span
from patcher.advice.log_rules import Fix, LogContext, Rule

# A KeyError (or vLLM's "no module or parameter named") over a LoRA adapter's weight name.
ADAPTER_WEIGHT = re.compile(
    r"(?:KeyError: |There is no module or parameter named )"
    r"'?((?:base_model\.model\.)?[\w.]*\.lora_(?:embedding_)?[AB](?:\.[\w]+)?)\b'?"
)


def adapter_as_model(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A LoRA adapter given as the model: beside its base model, or merged into it."""
    sglang = ctx.engine == "sglang"
    engine: Engine = "sglang" if sglang else "vllm"
    flags = (
        "--lora-paths NAME=ADAPTER_DIR"
        if sglang
        else "--enable-lora --lora-modules NAME=ADAPTER_DIR"
    )
    span = read_span(engine, "flags", "--lora-paths" if sglang else "--lora-modules")
    return (
        f"the checkpoint given as the model holds a LoRA adapter's weights ({m.group(1)}: "
        "PEFT's lora_A/lora_B names), which only the engine's LoRA path reads: the model's own "
        "loader finds no such parameter",
        [
            Fix(
                # placeholders to fill: not a command to paste as printed
                "advice",
                f"--model BASE_MODEL {flags}",
                note="the base model the adapter was trained on (adapter_config.json's "
                "base_model_name_or_path), the adapter beside it"
                + (f"; {'SGLang' if sglang else 'vLLM'} {span}, read" if span else ""),
            ),
            Fix(
                "advice",
                "or merge the adapter into the base model (peft's merge_and_unload()) and serve "
                "the merged checkpoint",
            ),
        ],
    )


LORA_ADAPTER_RULES: tuple[Rule, ...] = (
    ("lora-adapter-as-model", ADAPTER_WEIGHT, adapter_as_model),
)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
LORA_ADAPTER_MARKERS = ("KeyError: ", "There is no module or parameter named ")
