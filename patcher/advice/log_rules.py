"""doctor's rules for the failure families users report (beside the engines' own strings).

Each rule is (code, pattern, explain): the pattern is matched on one log line with its prefix
removed, and explain gives the cause and the fixes. The strings are the engines' words as real
reports quote them (the vLLM, SGLang, TensorRT-LLM and transformers trackers; the train half of
the corpus in the research notes, 2026-12), each tested verbatim in ``tests/advice``. Where one
line cannot tell two causes apart, the cause says what it cannot tell and both fixes are given
(fp8e4nv.py: an FP8 KV cache or FP8 weights, told apart by the traceback where it shows one).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from patcher.advice.catalogue import Engine, feature_releases, version_key
from patcher.advice.tokenizer_findings import TOKENIZER_CLASS_RENAMES

# transform: a patcher command; flag: engine flags alone; env: NAME=value (or unset NAME);
# dependency: a package to install; advice: prose, when no runnable fix is known.
FixKind = Literal["transform", "flag", "env", "dependency", "advice"]


@dataclass(frozen=True, slots=True)
class Fix:
    """One way out: a patcher command, an engine flag, an environment variable, or advice."""

    kind: FixKind
    text: str  # a transform: a command that runs as pasted; a flag: the flags alone
    note: str | None = None  # prose about it, never inside text


def vllm_env(assignment: str, effect: str, version: tuple[int, ...] | None) -> list[Fix]:
    """``VAR=value`` as a fix, where vLLM reads ``VAR`` in a release read (envs.py), its
    ``effect`` noted with those releases; none where no release read has it, or where the
    log's ``version`` is older than the first release read that has it (``None``: the log
    names no release; every caller passes the log's, so none offers an env it predates)."""
    read = feature_releases("vllm", "env", assignment.split("=", 1)[0])
    if not read or (version is not None and version < version_key(read[0])):
        return []
    return [
        Fix("env", assignment, note=f"{effect} (envs.py, read in vLLM {read[0]} to {read[-1]})")
    ]


@dataclass(frozen=True, slots=True)
class LogContext:
    """What a rule knows beyond its line: the checkpoint as a shell word, the engine version
    the log named, and whether an earlier line said a model class failed to import."""

    checkpoint: str
    version: tuple[int, ...] | None
    import_failed: bool = False
    engine: str | None = None  # "vllm" or "sglang", when the log's earlier lines say which
    # SGLang's free memory per GPU before and after the weights load (GB), from its
    # "Load weight begin/end. ... avail mem=X GB" lines: what --mem-fraction-static must leave.
    memory: tuple[float, float] | None = None
    # The --mem-fraction-static the log shows SGLang ran with (its server_args line, or the
    # refusal's own "Current value"), when it shows one.
    fraction: float | None = None
    # Whether a line before it shows the weights being loaded (a loader's frame or log line).
    loading: bool = False
    # Whether the log shows a draft model (speculative decoding): SGLang's server_args line,
    # a command line's or vLLM's args' speculative settings.
    draft: bool = False
    # The tensor-parallel size the log's command line shows (vLLM's non-default args or engine
    # config, SGLang's server_args), when it shows one.
    tp: int | None = None
    # The KV cache dtype the log's command line set (--kv-cache-dtype), when it shows one.
    kv_dtype: str | None = None
    # The pipeline-parallel size the log's command line shows, when it shows one.
    pp: int | None = None
    # The quantization method the log shows the engine built the model with ("None" where it
    # shows none), when it shows one.
    quantization: str | None = None
    # The model's own transformers config class a traceback went through
    # ("transformers/models/llama/configuration_llama.py"), when it shows one.
    config_file: str | None = None
    # The model's own tokenizer file (``tokenization_baichuan.py``, loaded with remote code) a
    # traceback reached from inside transformers' tokenizer ``__init__``, when it shows one.
    remote_tokenizer: str | None = None
    # The setting whose config class a pydantic error names ("1 validation error for
    # SpeculativeConfig": speculative_config), when the log shows one.
    validated: str | None = None
    # The architecture vLLM resolved the model to (its "Resolved architecture: X" line, 0.10 on),
    # when the log shows it.
    architecture: str | None = None
    # The compute capability of the GPU the log states or names (a refusal's "compute
    # capability 7.5", a driver name such as "NVIDIA GeForce RTX 5090"), when it does.
    gpu: tuple[int, int] | None = None
    # The last traceback frame in the engine's package ('File ".../gptq.py", line 347, in f'),
    # when the log shows one.
    frame: str | None = None
    # The model dtype the command forced (--dtype half, the args line's dtype='half'), when
    # the log shows one other than auto.
    dtype: str | None = None
    # The last ``from X import ...`` source line a traceback showed (what a failing import asked
    # for), when the log shows one.
    imported: str | None = None
    # Whether an earlier line said vLLM's compiled extension failed to import ("Failed to
    # import from vllm._C with ImportError(...)"): that line holds the cause of any op missing.
    extension_failed: bool = False
    # Whether the traceback's last frame is the registration every transformers Auto class
    # ends in (models/auto/*.py, in register), where a model's own code registers its classes.
    registering: bool = False
    # The switches a line before it shows that turn vLLM's hybrid KV cache manager off
    # (hybrid_manager.py: "--disable-hybrid-kv-cache-manager", "--kv-transfer-config", ...).
    hybrid_off: tuple[str, ...] = ()
    # Whether the command runs SGLang's data-parallel attention (--enable-dp-attention, its
    # server_args' enable_dp_attention=True).
    dp_attention: bool = False
    # Whether vLLM said it runs its V2 model runner ("Using V2 Model Runner", gpu_worker.py).
    v2_runner: bool = False
    # Whether SGLang records the experts' distribution as metrics (its server_args'
    # enable_expert_distribution_metrics=True, the command's flag): a GPU-to-CPU read at the
    # end of every forward pass (cuda_graph.py).
    expert_metrics: bool = False
    # NCCL's last warning, which torch appends to its NCCL errors after "Last error:"
    # (nccl_transports.last_error), when the log shows it.
    nccl_last_error: str | None = None

    def engines(self) -> tuple[Engine, ...]:
        """The engine the log shows, or both engines read where it shows none."""
        if self.engine == "vllm":
            return ("vllm",)
        if self.engine == "sglang":
            return ("sglang",)
        return ("vllm", "sglang")

    def mem_fraction(self) -> Fix:
        """SGLang's ``--mem-fraction-static`` that leaves the KV pool room after the weights.

        SGLang 0.5.23 (mem_cache/kv_cache_configurator.py ``_profile_available_bytes``) sizes
        the pool from ``free after load - free before load x (1 - mem_fraction_static)``; it
        must be positive, so the fraction must exceed ``1 - after / before``. 0.03 more leaves
        the pool about 3% of the GPU."""
        if self.memory is None or self.memory[0] <= 0:
            if self.draft:
                ran = f" (it ran with {self.fraction:g})" if self.fraction is not None else ""
                return Fix(
                    "advice",
                    "a draft model's pool is sized beside the target's from the same fraction, "
                    "so a higher --mem-fraction-static can run out of memory where a lower one "
                    f"leaves no pool{ran}: raise it in small steps; if it then runs out of "
                    "memory, fewer CUDA graphs (--cuda-graph-max-bs), a smaller draft, or more "
                    "GPUs (--tp-size)",
                )
            if self.fraction is not None and self.fraction >= 0.9:
                return Fix(
                    "advice",
                    f"it ran with --mem-fraction-static {self.fraction:g} already and the log "
                    "shows no free-memory figures: more GPUs (--tp-size 2x), a smaller "
                    "checkpoint, or free the GPU of other users",
                )
            if self.fraction is None:  # the default is set from the GPU's memory: unknown
                return Fix(
                    "flag",
                    "--mem-fraction-static F",
                    note="F above the fraction it ran with (its server_args line shows it), up "
                    "to 0.9 if the GPU has no other users; the log shows no free-memory "
                    "figures to compute it",
                )
            return Fix(
                "flag",
                "--mem-fraction-static 0.9",
                note=f"above the {self.fraction:g} it ran with, if the GPU has no other users "
                "(the log shows no free-memory figures to compute it)",
            )
        before, after = self.memory
        least = 1 - after / before
        wanted = math.ceil((least + 0.03) * 100) / 100
        if wanted > 0.95:
            return Fix(
                "advice",
                f"the weights leave {after:.1f} of {before:.1f} GB free per "
                "GPU: no fraction leaves a KV pool; more GPUs (--tp-size 2x) or a "
                "smaller checkpoint",
            )
        if self.fraction is not None and wanted <= self.fraction:
            return Fix(
                "advice",
                f"the weights leave {after:.1f} of {before:.1f} GB free per GPU, and at the "
                f"--mem-fraction-static {self.fraction:g} it ran with (above the {least:.2f} "
                "they need) the pool still had no room: something else holds the GPU's memory "
                "(another process, CUDA graphs, a draft model); free it, or more GPUs",
            )
        return Fix(
            "flag",
            f"--mem-fraction-static {wanted:.2f}",
            note=f"the weights leave {after:.1f} of {before:.1f} GB free per GPU: "
            f"above {least:.2f} the KV pool gets room",
        )

    def apply(self, transform: str, params: str = "") -> Fix:
        return Fix("transform", f"patcher apply {self.checkpoint} {transform}{params}".rstrip())

    def set(self, file: str, pointer: str, value: str) -> Fix:
        """The ``patcher set`` command that writes ``value`` (JSON) at ``pointer`` of ``file``."""
        return Fix("transform", f"patcher set {self.checkpoint} {file} {pointer} {value}")

    def at_least(self, *version: int) -> bool | None:
        return None if self.version is None else self.version >= version


Explain = Callable[[re.Match[str], LogContext], tuple[str, list[Fix]]]
Rule = tuple[str, re.Pattern[str], Explain]


def _fp8_layout_required(_m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        "this model's MLA layout (DeepSeek-V4's fp8_ds_mla) needs an FP8 KV cache, and "
        "--kv-cache-dtype auto did not resolve to one: do not strip the FP8 KV directive here",
        [
            Fix("flag", "--kv-cache-dtype fp8"),
            replace(
                ctx.apply("set-fp8-kv-cache"),
                note="a ModelOpt checkpoint, where the flag cannot be passed",
            ),
        ],
    )


def _fp8_kv_backend(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    fixes = [Fix("flag", "--kv-cache-dtype " + (m.group(2) or "auto"))]
    fixes.append(ctx.apply("strip-fp8-kv-cache"))
    return (
        f"the {m.group(1)} attention backend has no FP8 KV cache on this GPU (native fp8e4nv "
        "needs SM89 or newer): a BF16/FP16 cache takes twice the bytes per token; if the "
        "checkpoint declares the FP8 cache, strip it, else drop --kv-cache-dtype fp8",
        fixes,
    )


def _negative_kv(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        f"the weights and the profiling peak already exceed the memory vLLM may use "
        f"(available KV cache memory {m.group(1)} GiB): lowering gpu_memory_utilization makes "
        "it worse; no config edit helps",
        [
            Fix(
                "flag",
                "--gpu-memory-utilization 0.95",
                note="raise it, if the GPU has no other users",
            ),
            Fix("flag", "--enforce-eager", note="or more GPUs: --tensor-parallel-size N"),
        ],
    )


def _sglang_negative(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        f"SGLang profiled {m.group(2)} tokens of KV space: the weights leave no memory for "
        "the KV cache on each GPU",
        [
            ctx.mem_fraction(),
            Fix("advice", "more GPUs (--tp N), or a smaller or more quantized checkpoint"),
        ],
    )


def _sglang_too_long(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        f"a request of {m.group(1)} tokens is longer than SGLang's context ({m.group(2)}): "
        "SGLang derives it at start-up; editing rope_scaling alone may not change it",
        [
            Fix(
                "flag",
                f"--context-length {m.group(1)}",
                note="SGLang; with a RoPE scaling that fits",
            ),
            ctx.apply(
                "set-rope-scaling-yarn",
                f" --set factor={-(-int(m.group(1)) // int(m.group(2)))}.0"
                f" --set original={m.group(2)}",
            ),
        ],
    )


def _rope_type_key(_m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        "rope_scaling has no rope_type key (an old 'type' key, or a partial block) and this "
        "engine's validation needs it",
        [
            Fix("advice", 'in config.json rope_scaling, rename "type" to "rope_type" (keep both)'),
            Fix("advice", 'or --hf-overrides with rope_scaling\'s keys and "rope_type" added'),
        ],
    )


def _rotary_type(_m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        "TensorRT-LLM's build reads rope_scaling['type'], which a rope_type-only block "
        "(Llama 3.1 style) lacks",
        [
            Fix("advice", "upgrade TensorRT-LLM (0.12 reads rope_type)"),
            Fix("advice", 'or add "type" beside "rope_type" in the converted rope_scaling'),
        ],
    )


def _chat_template(_m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        "the tokenizer defines no chat template and transformers no longer supplies a default: "
        "chat requests fail (completions still work)",
        [
            ctx.apply("set-chat-template", " --set template=TEMPLATE.jinja"),
            Fix("flag", "--chat-template TEMPLATE.jinja"),
        ],
    )


def _tokenizer_class(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    name = m.group(1)
    better = TOKENIZER_CLASS_RENAMES.get(name.replace("CodeLLaMA", "LLaMA"))
    fixes = [
        ctx.apply("set-tokenizer-class", f" --set class={better or 'PreTrainedTokenizerFast'}"),
        Fix("advice", "or install the transformers the checkpoint was saved with"),
    ]
    if better is None:
        fixes[0] = replace(fixes[0], note="PreTrainedTokenizerFast reads tokenizer.json")
    return (
        f"tokenizer_config.json names tokenizer class {name}, which this transformers does not "
        "have (an early conversion's spelling, or a class of a newer transformers)",
        fixes,
    )


def _float16_denied(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        f"vLLM refuses float16 for {m.group(1) or m.group(2)} (numerical instability)",
        [Fix("flag", "--dtype bfloat16"), ctx.apply("set-torch-dtype", " --set dtype=bfloat16")],
    )


def _quantized_dtype(_m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        "a warning, not a failure: --dtype bfloat16 was given for a quantized checkpoint whose "
        "kernels need float16, so vLLM serves float16",
        [Fix("flag", "--dtype auto", note="leave it auto for quantized checkpoints")],
    )


def _trtllm_quantization(_m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        "TensorRT-LLM's loader does not read this quantization format (compressed-tensors); "
        "no config edit makes it",
        [Fix("advice", "use a ModelOpt-format checkpoint (hf_quant_config.json) for TensorRT-LLM")],
    )


def _unit_scales(_m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        "a warning, not a failure: the FP8 KV cache runs with scales of 1.0 (the checkpoint has "
        "no calibrated k/v scales), which can cost accuracy",
        [ctx.apply("strip-fp8-kv-cache"), Fix("advice", "or a checkpoint with calibrated scales")],
    )


def _rope_theta(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        f"code written for transformers 4 reads {m.group(1)}.rope_theta, which transformers 5 "
        "keeps only inside rope_parameters: the config and the library disagree on the layout",
        [
            Fix(
                "advice",
                "add the top-level rope_theta back to config.json (the value in "
                "rope_parameters), or use the transformers the engine was built with",
            ),
        ],
    )


def _backend_unnamed(_m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        "no attention backend of this vLLM accepts the configuration, and this line does not "
        "show why (the full error lists each backend's reasons). The common cause is an MLA "
        "checkpoint that declares an FP8 KV cache on a GPU whose MLA backends take none (SM12x "
        "before vLLM 0.18); if the checkpoint declares no FP8 KV cache, read the reasons",
        [
            ctx.apply("strip-fp8-kv-cache"),
            Fix("advice", "vLLM 0.18 and later run an FP8 MLA KV cache on SM12x"),
        ],
    )


def _backend_refuses_kv(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        f"the {m.group(1)} attention backend refuses this KV cache dtype (an FP8 cache it has "
        "no kernel for): a BF16 cache boots, at twice the bytes per token",
        [
            Fix("flag", "--kv-cache-dtype auto", note="drop --kv-cache-dtype fp8*"),
            ctx.apply("strip-fp8-kv-cache"),
        ],
    )


def _model_refuses_fp8_kv(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        f"{m.group(1)} has no FP8 KV cache in this engine, and the runtime's KV dtype 'auto' "
        "inherits the checkpoint's FP8 KV directive (kv_cache_quant_algo / kv_cache_scheme): "
        "a runtime flag does not clear it, the directive must go",
        [ctx.apply("strip-fp8-kv-cache")],
    )


def _template_mapping(_m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        "the chat template iterates a value as a mapping (|items) that the request sent as a "
        "string: templates written for tool_calls[].function.arguments as an object fail on "
        "OpenAI clients, which send the arguments as a JSON string",
        [
            ctx.apply("set-chat-template", " --set template=TEMPLATE.jinja"),
            Fix(
                "advice",
                "or parse function.arguments to an object in the client before sending",
            ),
        ],
    )


FAMILY_RULES: tuple[Rule, ...] = (
    (
        "fp8-kv-required",
        re.compile(r"fp8_ds_mla layout only supports fp8 kv-cache, got (\w+)"),
        _fp8_layout_required,
    ),
    (
        "fp8-kv-backend",
        re.compile(
            r"FP8 KV cache is not supported by the (\w+) attention backend.*?"
            r"(?:Re-run with --kv-cache-dtype (\w+))?\.?$"
        ),
        _fp8_kv_backend,
    ),
    (
        "negative-kv-memory",
        re.compile(r"Available KV cache memory: (-\d+(?:\.\d+)?) GiB"),
        _negative_kv,
    ),
    (
        "no-kv-cache-memory",
        re.compile(r"max_total_tokens=(\d+) is larger than the profiled value (-\d+)"),
        _sglang_negative,
    ),
    (
        "request-too-long",
        re.compile(
            r"The input \((\d+) tokens\) is longer than the model\\?'s context length "
            r"\((\d+) tokens\)"
        ),
        _sglang_too_long,
    ),
    ("rope-type-key", re.compile(r"rope_scaling should have a 'rope_type' key"), _rope_type_key),
    ("rope-type-key", re.compile(r"rotary_type = rotary_scaling\['type'\]"), _rotary_type),
    (
        "no-chat-template",
        re.compile(r"ChatTemplateResolutionError|default chat template is no longer allowed"),
        _chat_template,
    ),
    (
        "tokenizer-class",
        re.compile(r"Tokenizer class (\w+) does not exist or is not currently imported"),
        _tokenizer_class,
    ),
    (
        "float16-refused",
        re.compile(r"(?:The model type '(\w+)'|\b(\w+)) does not support float16"),
        _float16_denied,
    ),
    (
        "quantized-dtype",
        re.compile(r"You are loading a quantized model with dtype torch\.bfloat16, which vLLM"),
        _quantized_dtype,
    ),
    (
        "unsupported-quantization-format",
        re.compile(r"NotImplementedError: Unsupported quantization_config"),
        _trtllm_quantization,
    ),
    (
        "rope-theta-layout",
        re.compile(r"AttributeError: '(\w+Config)' object has no attribute 'rope_theta'"),
        _rope_theta,
    ),
    (
        "no-attention-backend",
        re.compile(r"No valid attention backend found(?! for \w+ with AttentionSelectorConfig)"),
        _backend_unnamed,
    ),
    (
        "fp8-kv-backend",
        re.compile(r"\b([A-Z][A-Z0-9_]+)\W{1,5}\[kv_cache_dtype not supported\]"),
        _backend_refuses_kv,
    ),
    (
        "fp8-kv-unsupported-model",
        re.compile(r"(\w+) does not support FP8 KV cache"),
        _model_refuses_fp8_kv,
    ),
    (
        "chat-template-mapping",
        re.compile(r"Can only get item pairs from a mapping"),
        _template_mapping,
    ),
    (
        "fp8-kv-unit-scales",
        re.compile(r"Using KV cache scaling factor 1\.0 for fp8"),
        _unit_scales,
    ),
)
# A line is tried against the rules only when it holds one of these (one per rule above).
FAMILY_MARKERS = (
    "fp8_ds_mla layout",
    "FP8 KV cache is not supported",
    "Available KV cache memory: ",
    "is larger than the profiled value",
    "is longer than the model",
    "should have a 'rope_type' key",
    "rotary_scaling",
    "ChatTemplateResolutionError",
    "default chat template is no longer allowed",
    "does not exist or is not currently imported",
    "There is no module or parameter named",
    "Unsupported architectures:",
    "does not support float16",
    "You are loading a quantized model",
    "Unsupported quantization_config",
    "no attribute 'rope_theta'",
    "KV cache scaling factor",
    "No valid attention backend found",
    "kv_cache_dtype not supported",
    "does not support FP8 KV cache",
    "Can only get item pairs",
)
IMPORT_FAILED = "Ignore import error when loading sglang.srt.models"
# vLLM's _custom_ops.py warning when its compiled extension does not import.
EXTENSION_FAILED = "Failed to import from vllm._C"
