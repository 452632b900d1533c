"""The answers of the families with no config fix: a file missing from the checkpoint, a model
class or engine path this release lacks, a request the model cannot take. Each says what would
help where no checkpoint edit or flag does."""

from __future__ import annotations

import re
from collections.abc import Callable

from patcher.advice.catalogue import Matched, feature_span, releases, within
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
# A Hub cache's snapshot folder (huggingface_hub's layout: models--ORG--NAME/snapshots/REV).
_SNAPSHOT = re.compile(r"models--([\w.-]+?)--([\w.-]+)/snapshots/([0-9a-f]{7,40})")
# "Model GemmaForCausalLM does not support LoRA" (vLLM's loader, 0.4 to 0.6), "X does not support
# LoRA yet." (model_runner.py), "Model X does not support BitsAndBytes quantization yet": a class
# named, and a feature the read releases mark per class (tools/read_model_classes.py).
_CLASS_LACKS = re.compile(
    r"\b([A-Z]\w*(?:For\w+|Model|LM))\w* does not support (LoRA|BitsAndBytes)"
)
_GGUF = re.compile(r"GGUF model with architecture (\S+?) is not supported")


# transformers' load_gguf_checkpoint before 4.5x: "Architecture gemma2 not supported"
GGUF_OLD = re.compile(r"^(?:ValueError: )?Architecture (\S+) not supported$")


def gguf_gap(architecture: str) -> tuple[str, list[Fix]]:
    """transformers' GGUF loader (modeling_gguf_pytorch_utils.py) has no mapping for a .gguf
    file's architecture: the transformers releases read whose loader maps it (``gguf``,
    tools/read_model_classes.py), or none."""
    names = (architecture, architecture.replace("-", "_"), architecture.replace("_", ""))
    span = next(
        (s for n in names if (s := feature_span("transformers", "gguf", n)) is not None), None
    )
    if span is None:
        read = list(releases("transformers"))
        return (
            f"the GGUF loader (transformers') has no mapping for the architecture "
            f"{architecture}, in no transformers release read ({read[0]} to {read[-1]}): no "
            "config edit of the .gguf file helps",
            [Fix("advice", "the model's safetensors checkpoint")],
        )
    first, after = span
    return (
        f"the GGUF loader of this transformers has no mapping for the architecture "
        f"{architecture}; transformers {first}{' to before ' + after if after else ' and later'}"
        " map it (read from their source)",
        [
            Fix(
                "dependency",
                f"pip install 'transformers{within(first, after)}'",
            ),
            Fix("advice", "or the model's safetensors checkpoint"),
        ],
    )


def unknown_gguf_type(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """vLLM's GGUF loader (``gguf_loader.py``) finds no GGUF architecture for the model type:
    the first release read whose loader maps it by name (``gguf_model_type``,
    tools/read_model_classes.py), within the releases that read GGUF at all."""
    model_type = m.group(1)
    mapped = feature_span("vllm", "gguf_model_type", model_type)
    readable = feature_span("vllm", "choices:--quantization", "gguf")
    if mapped is None or readable is None:
        return (
            f"vLLM's GGUF loader maps no GGUF architecture to the model type {model_type}, in "
            "no release read: no config edit of the .gguf file helps",
            [Fix("advice", "no config fix: the model's safetensors checkpoint")],
        )
    upper = readable[1]
    bounds = within(mapped[0], upper)
    return (
        f"this vLLM's GGUF loader maps no GGUF architecture to the model type {model_type}; "
        f"vLLM {mapped[0]} and later map it (read from their gguf_loader.py)",
        [
            Fix("dependency", f"pip install 'vllm{bounds}'"),
            Fix("advice", "or the model's safetensors checkpoint"),
        ],
    )


def explain_feature_gap(m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
    """A model class or loader of this release without a feature the command line asks for:
    the first release read whose class has it, where the read releases say."""
    gguf = _GGUF.search(m.line)
    if gguf:
        return gguf_gap(gguf.group(1))
    lacks = _CLASS_LACKS.search(m.line)
    if lacks is None or m.template.engine != "vllm":
        return (
            "this release's model class or loader has no path for this feature: an engine gap; "
            "no config edit helps",
            [
                Fix(
                    "advice",
                    "a later engine release may add it (which one is not read), or a checkpoint "
                    "of the model in a format this release loads",
                )
            ],
        )
    name, what = lacks.groups()
    feature = "lora" if what == "LoRA" else "bnb"
    span = feature_span("vllm", feature, name)
    fixes = [
        Fix(
            "dependency",
            f"pip install 'vllm{within(*span)}'",
            note=f"the releases read whose {name} has {what}"
            + (f" ({span[1]} read without it)" if span[1] else ""),
        )
        if span
        else Fix("advice", f"no vLLM release read gives {name} {what}: no config fix")
    ]
    if feature == "lora":
        fixes.append(
            Fix(
                "advice",
                "or leave out --enable-lora and --lora-modules",
                note="the base model alone; or merge the adapter into the weights",
            )
        )
    else:
        fixes.append(
            Fix(
                "advice",
                "or a checkpoint of the model in a format this release loads (AWQ, GPTQ, FP8, "
                "or unquantized)",
            )
        )
    return (
        f"this release's {name} has no {what} path (its class lacks the interface or mapping "
        "the loader needs): an engine gap, no config edit helps",
        fixes,
    )


def explain_files(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    """A checkpoint file missing or unreadable; vLLM's "No supported config format found"
    (transformers_utils/config.py ``get_config``: config.json, then Mistral's params.json,
    each looked for at the model path or on the Hub) is neither file readable there."""
    if re.search(r"No adapter found for", m.line):
        # vLLM's worker_manager.py: the LoRA path is neither a local directory with a PEFT
        # adapter (adapter_config.json) nor an adapter repository on the Hub
        return (
            "the LoRA adapter path holds no PEFT adapter (no adapter_config.json there, and no "
            "adapter repository of that name on the Hub)",
            [
                Fix(
                    "advice",
                    "--lora-modules NAME=DIR with DIR the adapter's own directory: its "
                    "adapter_config.json and adapter_model.safetensors",
                    note="a training checkpoint directory may hold a full model or nest the "
                    "adapter one level down",
                ),
            ],
        )
    if not re.search(r"config format found|detect config format", m.line, re.IGNORECASE):
        cause, fixes = _files(m, ctx)
        snapshot = _SNAPSHOT.search(m.line)
        if snapshot is not None:
            org, name, revision = snapshot.groups()
            fixes.insert(
                0,
                Fix(
                    "advice",
                    f"hf download {org}/{name} --revision {revision}",
                    note="the Hub cache's snapshot of that revision lacks files (a download cut "
                    "short, or a newer revision the cache's ref moved to): this fills it in; or "
                    "give the path of a complete snapshot",
                ),
            )
        return cause, fixes
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
