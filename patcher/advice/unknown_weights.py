"""doctor's answer when the weights hold a tensor the model the engine built has no place for:
vLLM's ``There is no module or parameter named 'X' in ARCH`` (its weight loader,
``models/utils.py``, every release read from 0.6.6).

The tensor's name says which of three things happened:

- ``ARCH`` is vLLM's Transformers backend (``Transformers...ForCausalLM``): the model has no
  vLLM implementation and transformers' own modelling code has no such parameter. No config
  edit loads it.
- the name ends in a quantized tensor's (a scale, packed weights, group indices): the
  checkpoint is quantized where the engine built the layer unquantized.
- otherwise the checkpoint's own files describe another model than its weights: a
  Mistral-format checkpoint (``params.json``, ``consolidated.safetensors``) read through its
  ``config.json``, or an ``architectures`` entry of another class."""

from __future__ import annotations

import re

from patcher.advice.catalogue import at_or_below, feature_releases, releases, version_key
from patcher.advice.log_rules import Fix, LogContext

# The tensors quantization methods add beside (or in place of) a layer's weight, by the names
# the checkpoints' formats give them (GPTQ/AWQ: qweight, qzeros, scales, g_idx; FP8/FP4 and
# compressed-tensors: *_scale, weight_packed, weight_shape; bitsandbytes: absmax, quant_map).
_QUANTIZED = re.compile(
    r"(?:^|\.)(?:\w*_scale(?:_2|_inv)?|qweight|qzeros|scales|g_idx|weight_packed|weight_shape|"
    r"weight_zero_point|absmax|quant_map|quant_state\w*)$"
)


def mistral_formats(ctx: LogContext, note: str) -> Fix | None:
    """vLLM's flags that read a checkpoint in Mistral's own format (params.json,
    consolidated*.safetensors), where the log's vLLM release (any read release, when it names
    none) has ``--load-format mistral``; None for a release without it, or an SGLang log."""
    having = feature_releases("vllm", "choices:--load-format", "mistral")
    if not having or ctx.engine == "sglang":
        return None
    if ctx.version is not None and at_or_below(releases("vllm"), ctx.version) not in having:
        return None
    return Fix(
        "flag", "--config-format mistral --load-format mistral --tokenizer-mode mistral", note=note
    )


def unknown_weight(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """``There is no module or parameter named 'X' in ARCH``."""
    name, arch = m.group(1), m.group(2)
    if arch.startswith("Transformers"):
        return (
            f"vLLM has no implementation of this model and ran it through transformers' own "
            f"code ({arch}), which has no parameter {name}: an engine gap, no config edit "
            "loads these weights",
            [
                Fix(
                    "advice",
                    "no config fix: a vLLM release that implements the model's architecture "
                    "itself (its supported-models list), or a transformers release whose code "
                    "for the model has this parameter",
                ),
            ],
        )
    if _QUANTIZED.search(name):
        return (
            f"the checkpoint ships {name}, a quantized tensor, for a layer the engine built "
            f"unquantized ({arch}): the quantization config does not cover that layer (its "
            "exclude or ignore list names it, or the config is missing)",
            [
                Fix(
                    "advice",
                    f"patcher check {ctx.checkpoint} shows the quantization config; the layers "
                    "it leaves out must be the ones the checkpoint stores unquantized",
                )
            ],
        )
    mistral = mistral_formats(
        ctx,
        "if the checkpoint holds params.json and consolidated*.safetensors (Mistral's own "
        "format): they are its weights' description, not config.json",
    )
    fixes = [] if mistral is None else [mistral]
    fixes.append(
        Fix(
            "advice",
            f"otherwise config.json's architectures ({arch}) is not the model of these "
            f"weights: patcher check {ctx.checkpoint}, and the checkpoint's upstream config",
        )
    )
    return (
        f"the weights hold {name}, which {arch} (the class the config resolved to) has no "
        "place for: the checkpoint's config describes another model than its weights",
        fixes,
    )


# Mistral's own names for a checkpoint's tensors (params.json's consolidated*.safetensors), as
# a loader that read that file beside the transformers-format shards looks them up in the
# model it built (sglang#519's "KeyError: 'layers.0.attention.wk.weight'").
MISTRAL_NAME = re.compile(
    r"KeyError: '((?:model\.)?(?:layers\.\d+\.(?:attention\.w[qkvo]|feed_forward\.w[123]|"
    r"attention_norm|ffn_norm)|tok_embeddings)\.weight)'"
)
# The first release read whose loader reads only the files model.safetensors.index.json lists
# (filter_duplicate_safetensors_files in its weight_utils.py): every release read of either
# engine has it, vLLM 0.4.0.post1 none (snapshots/engines/index-only-loading.txt).
_INDEX_ONLY = {"vllm": "0.4.3", "sglang": "0.4.0"}


def mistral_names(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A tensor of Mistral's own format looked up in a transformers-format model: the engine
    read consolidated*.safetensors beside the shards the index lists."""
    engines = [ctx.engine] if ctx.engine in _INDEX_ONLY else list(_INDEX_ONLY)
    fixes = [
        Fix(
            "dependency",
            f"pip install '{engine}>={_INDEX_ONLY[engine]}'",
            note=f"{engine} {_INDEX_ONLY[engine]} and every later release read load only the "
            "files model.safetensors.index.json lists",
        )
        for engine in engines
    ]
    fixes.append(
        Fix(
            "advice",
            "or move consolidated*.safetensors out of the checkpoint's folder: the "
            "model-*.safetensors shards hold the same weights under the names config.json's "
            "model expects",
        )
    )
    return (
        f"the engine read Mistral's own consolidated*.safetensors (its tensor names, such as "
        f"{m.group(1)}) beside the transformers-format shards of the same weights, and the "
        "model it built from config.json has no such parameter",
        fixes,
    )


# A tied model's output projection in the checkpoint, looked up among the parameters of a model
# that has none of its own (vLLM's loaders up to 0.7: ``param = params_dict[name]``).
LM_HEAD = re.compile(r"KeyError: '((?:model\.|transformer\.)?lm_head\.weight)'")
_MODEL_FILE = re.compile(r"/models/(\w+)\.py\", line \d+, in load_weights")


def lm_head(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """``KeyError: 'lm_head.weight'`` in a model file's ``load_weights``: the checkpoint saved
    the output projection a tied model shares with its embeddings; the releases read whose
    model file passes over it (tools/read_model_classes.py's ``skips_lm_head``)."""
    where = _MODEL_FILE.search(ctx.frame or "")
    if where is None:
        return "", []
    model = where.group(1)
    skipping = feature_releases("vllm", "skips_lm_head", model)
    later = [r for r in skipping if ctx.version is None or version_key(r) > ctx.version]
    fixes: list[Fix] = []
    if later:
        fixes.append(
            Fix(
                "dependency",
                f"pip install 'vllm>={later[0]}'",
                note=f"the releases read whose models/{model}.py passes over lm_head.weight "
                f"where the model ties it to the embeddings: {later[0]} to {skipping[-1]}",
            )
        )
    fixes.append(
        Fix(
            "advice",
            "or save the checkpoint without lm_head.weight: with tie_word_embeddings it is a "
            "copy of the embeddings (model.embed_tokens.weight)",
        )
    )
    return (
        f"the checkpoint holds {m.group(1)}, which this release's {model} model has no "
        "parameter for: it ties the output projection to the embeddings, and its weight "
        "loader does not pass over the saved copy (a trainer saved it)",
        fixes,
    )
