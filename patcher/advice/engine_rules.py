"""doctor's rules for the engines' own start-up strings, with the structured parts read.

Each rule is (code, pattern, explain), like ``log_rules.py``'s: these are vLLM's and SGLang's
format strings (sources in docs/advice.md, "doctor"); the patterns read the parts a fix needs
(the AttentionSelectorConfig and each backend's reasons, the sizes of a memory error, the
lengths of a context error). ``_MARKERS`` holds one plain word of each, so that every other
line of a log is passed over after one search.
"""

from __future__ import annotations

import re

from patcher.advice.architectures import architecture, config_attribute, sglang_architecture
from patcher.advice.attention_rules import ATTENTION_MARKERS, ATTENTION_RULES
from patcher.advice.backend_gpu import BACKEND_GPU_MARKERS, BACKEND_GPU_RULES
from patcher.advice.dtypes import DTYPE_MARKERS, DTYPE_RULES
from patcher.advice.engine_defects import circular_import, missing_logger_method, undefined_name
from patcher.advice.env_bounds import ENV_BOUND_MARKERS, ENV_BOUND_RULES
from patcher.advice.extensions import undefined_symbol
from patcher.advice.flag_choices import (
    NOT_JSON,
    arguments_required,
    invalid_choice,
    invalid_object,
    invalid_parser,
    json_flag,
    port_in_use,
    unexpected_argument,
    unrecognized_arguments,
)
from patcher.advice.flashinfer_dispatch import (
    FLASHINFER_DISPATCH_MARKERS,
    FLASHINFER_DISPATCH_RULES,
)
from patcher.advice.fp8e4nv import FP8E4NV_MARKERS, FP8E4NV_RULES
from patcher.advice.hub_access import HUB_MARKERS, HUB_RULES
from patcher.advice.hub_names import invalid_repo_id
from patcher.advice.hybrid_manager import HYBRID_MANAGER_MARKERS, HYBRID_MANAGER_RULES
from patcher.advice.json_files import bom, not_json
from patcher.advice.kernels import kernel_gap, stated
from patcher.advice.log_rules import FAMILY_MARKERS, FAMILY_RULES, Fix, LogContext, Rule
from patcher.advice.lora_adapter import LORA_ADAPTER_MARKERS, LORA_ADAPTER_RULES
from patcher.advice.machine import ENVIRONMENT_MARKERS, ENVIRONMENT_RULES
from patcher.advice.marlin import MARLIN_MARKERS, MARLIN_RULES
from patcher.advice.mistral_format import MISTRAL_MARKERS, MISTRAL_RULES
from patcher.advice.no_config_fix import unknown_gguf_type
from patcher.advice.quantization_rules import (
    modelopt_algo,
    no_quantization_config,
    quantization_gpu,
    quantization_mismatch,
    quantized_weights,
    unknown_quantization,
)
from patcher.advice.quantized_modules import excluded_scale
from patcher.advice.ray_cluster import RAY_CLUSTER_MARKERS, RAY_CLUSTER_RULES
from patcher.advice.remote_tokenizers import REMOTE_TOKENIZER_MARKERS, REMOTE_TOKENIZER_RULES
from patcher.advice.safetensors_files import SAFETENSORS_MARKERS, SAFETENSORS_RULES
from patcher.advice.scheme_capabilities import SCHEME_MARKERS, SCHEME_RULES
from patcher.advice.speculative import SPECULATIVE_MARKERS, SPECULATIVE_RULES
from patcher.advice.startup_memory import (
    DP_CAUSE,
    DP_FIXES,
    fitting_length,
    kv_share,
    no_cache_memory,
    round_length,
    too_little_free,
)
from patcher.advice.tensor_sizes import SIZE_MARKERS, SIZE_RULES
from patcher.advice.transformers_rules import (
    STRICT_MARKERS,
    STRICT_RULES,
    TRANSFORMERS_MARKERS,
    TRANSFORMERS_RULES,
)
from patcher.advice.triton_resources import TRITON_RESOURCE_MARKERS, TRITON_RESOURCE_RULES
from patcher.advice.trtllm_engine_rules import TRTLLM_ENGINE_MARKERS, TRTLLM_ENGINE_RULES
from patcher.advice.trtllm_gen import TRTLLM_GEN_MARKERS, TRTLLM_GEN_RULES
from patcher.advice.trtllm_rules import TRTLLM_MARKERS, TRTLLM_RULES
from patcher.advice.unknown_weights import (
    LM_HEAD,
    MISTRAL_NAME,
    lm_head,
    mistral_names,
    unknown_weight,
)
from patcher.engines.launch_flags import MAX_MODEL_LEN_AUTO_FROM

_Context = LogContext


def _kv_memory(m: re.Match[str], ctx: _Context) -> tuple[str, list[Fix]]:
    wanted = int(m.group("len"))
    estimate = m.groupdict().get("estimate")
    fixes: list[Fix] = []
    sizes = None if estimate else kv_share(m.string)
    if sizes:  # before 0.10 vLLM gives the KV sizes, not the length they hold
        estimate = str(fitting_length(wanted, sizes))
    if estimate:
        length = round_length(int(estimate))
        fixes.append(Fix("flag", f"--max-model-len {length}"))
        fixes.append(ctx.apply("set-context-length", f" --set length={length}"))
        cause = f"one sequence of {wanted} tokens does not fit in the KV cache; about {estimate} do"
        if sizes:
            cause += " (in proportion to the KV cache sizes the message names)"
    else:
        fixes.append(
            Fix("advice", "a smaller --max-model-len: patcher kv-budget CKPT --gpu NAME finds it")
        )
        cause = f"one sequence of {wanted} tokens does not fit in the KV cache"
    if ctx.at_least(*MAX_MODEL_LEN_AUTO_FROM) is not False:
        fixes.append(
            Fix("flag", "--max-model-len auto", note="vLLM 0.14 and later fit it themselves")
        )
    given = m.groupdict().get("utilization")
    if m.groupdict().get("all"):
        # 0.34's extensible KV cache takes all memory left: no utilization gives more.
        fixes.append(Fix("advice", "more GPUs (--tensor-parallel-size) or GPUs with more memory"))
    elif given is not None:
        fixes.append(
            Fix("flag", "--gpu-memory-utilization 1.0", note=f"up from {given}: the default there")
        )
    elif ctx.at_least(0, 34) is not True:  # 0.34 defaults to 1.0 on CUDA already
        fixes.append(
            Fix("flag", "--gpu-memory-utilization 0.95", note="if the GPU has no other users")
        )
    return cause, fixes


def _too_long(m: re.Match[str], ctx: _Context) -> tuple[str, list[Fix]]:
    derived = int(m.group(3))  # vLLM prints a float (262144.0); the whole part
    return (
        f"--max-model-len {m.group(1)} is above the {derived} vLLM derives from {m.group(2)}",
        [
            Fix("flag", f"--max-model-len {derived}"),
            # VLLM_ALLOW_LONG_MAX_MODEL_LEN is no fix: positions past the derived length give
            # NaNs (vLLM PR #20904). YaRN over the derived length is, with its factor.
            ctx.apply(
                "set-rope-scaling-yarn",
                f" --set factor={_yarn_factor(int(m.group(1)), derived)} --set original={derived}",
            ),
        ],
    )


def _yarn_factor(wanted: int, derived: int) -> str:
    factor = wanted / derived if derived else 1.0
    return f"{max(1.0, float(int(factor) if factor == int(factor) else int(factor) + 1)):g}"


def _required_fields(m: re.Match[str], ctx: _Context) -> tuple[str, list[Fix]]:
    return (
        f"{m.group(1)} quantization needs {m.group(2)} in hf_quant_config.json's 'quantization' "
        "table: an edit deleted it (kv_cache_quant_algo: null means no KV quantization)",
        [
            Fix("transform", f"patcher revert {ctx.checkpoint} strip-fp8-kv-cache"),
            ctx.apply("strip-fp8-kv-cache"),
            Fix("advice", 'or put the key back by hand: "kv_cache_quant_algo": null'),
        ],
    )


def _block_size(m: re.Match[str], _ctx: _Context) -> tuple[str, list[Fix]]:
    return (
        f"no attention backend takes the KV block size {m.group(1)} the model asks for "
        f"({m.group(2)}); an MLA model type (deepseek_v3, kimi_k2) asks for 16, which the CPU "
        "backend does not take: a model_type that does not match the weights does this",
        [
            Fix("advice", "check config.json model_type against architectures and the weights"),
            Fix("advice", "or --block-size with a size the backend lists"),
        ],
    )


def _remote_code(_m: re.Match[str], _ctx: _Context) -> tuple[str, list[Fix]]:
    # transformers asks for the code only where no class of its own knows the model type
    # (resolve_trust_remote_code): removing auto_map leaves an unknown type, not a fix
    return (
        "the config needs the checkpoint's own Python code (auto_map)",
        [Fix("flag", "--trust-remote-code", note="after reading the repository's code")],
    )


def _bf16(m: re.Match[str], ctx: _Context) -> tuple[str, list[Fix]]:
    fixes = [Fix("flag", "--dtype half"), ctx.apply("set-torch-dtype", " --set dtype=float16")]
    gpu = stated(m.string) or ctx.gpu
    gap = kernel_gap(gpu, ctx.version) if gpu is not None else None
    if gpu is not None and gap is not None and gap[0].kind == "advice":
        # float16 passes this check, and the GPU then has none of vLLM's kernels
        return (
            f"bfloat16 was asked of a GPU of compute capability {gpu[0]}.{gpu[1]}, for which "
            "no vLLM release read has kernels: float16 would only meet the next refusal",
            gap,
        )
    return ("bfloat16 was forced on a GPU below compute capability 8.0", [*fixes, *(gap or [])])


def _no_model_type(_m: re.Match[str], ctx: _Context) -> tuple[str, list[Fix]]:
    # transformers' AutoConfig, in every release read: not strict validation, a missing key
    return (
        "config.json has no model_type, so transformers cannot pick its config class (a draft "
        "or adapter config saved without one, typically)",
        [
            Fix(
                "transform",
                f"patcher set {ctx.checkpoint} config.json /model_type TYPE",
                note="the model type of the family its architectures name (llama for a "
                "LlamaForCausalLM draft)",
            )
        ],
    )


def _rope_keys(m: re.Match[str], ctx: _Context) -> tuple[str, list[Fix]]:
    fixes = [ctx.apply("set-rope-scaling-yarn", " --set factor=F")]
    if "rope_theta" in m.group(3):
        fixes.insert(0, ctx.apply("add-rope-theta-to-rope-parameters"))
    return (f"the {m.group(2)} RoPE block lacks {m.group(3)} in {m.group(1)}", fixes)


def _sglang_memory(_m: re.Match[str], ctx: _Context) -> tuple[str, list[Fix]]:
    if ctx.dp_attention:  # the weights themselves take more of each GPU
        measured = [ctx.mem_fraction()] if ctx.memory is not None else []  # from the figures
        cause = f"SGLang's KV pool has no room left after the weights: {DP_CAUSE}"
        return (cause, [*measured, *DP_FIXES])
    return ("SGLang's KV pool has no room left after the weights", [ctx.mem_fraction()])


def _sglang_length(m: re.Match[str], _ctx: _Context) -> tuple[str, list[Fix]]:
    return (
        f"the context length {m.group(1)} is above the derived {m.group(2)}",
        [
            Fix("flag", f"--context-length {m.group(2)}"),
            Fix("env", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"),
        ],
    )


RULES: tuple[Rule, ...] = (
    *ATTENTION_RULES,
    (
        "kv-cache-memory",
        re.compile(
            r"To serve at least one request with the models?'s max seq len \((?P<len>\d+)\)"
            r"(?:.*?estimated maximum model length is (?P<estimate>\d+))?"
            # vLLM 0.34's hint, with the extensible KV cache (its default on CUDA): the
            # utilization given, or that the cache already takes all memory left.
            r"(?:.*?`gpu_memory_utilization`=(?P<utilization>[\d.]+))?"
            r"(?:.*?(?P<all>already takes all device memory))?"
        ),
        _kv_memory,
    ),
    (
        "kv-cache-memory",
        re.compile(
            # the whole message, or its start where a title or a wrapped line cut it
            r"The model's max seq len \((?P<len>\d+)\)(?: is larger than the maximum number "
            r"of tokens that can be stored in KV cache \((?P<estimate>\d+)\))?"
        ),
        _kv_memory,
    ),
    (
        "no-kv-cache-memory",
        re.compile(r"No available memory for the cache blocks"),
        no_cache_memory,
    ),
    (
        "no-kv-cache-memory",
        re.compile(r"Cannot auto-fit max_model_len: not enough GPU memory"),
        no_cache_memory,
    ),
    (
        "max-model-len-too-long",
        re.compile(
            r"User-specified max_model_len \((\d+)\) is greater than the derived max_model_len "
            r"\((\w+)=(\d+)(?:\.\d*)?"
        ),
        _too_long,
    ),
    (
        "quant-required-fields",
        re.compile(
            r"(NVFP4|MXFP8) quantization requires the following fields in "
            r"hf_quant_config\.json: (\[.*?\])"
        ),
        _required_fields,
    ),
    ("unknown-modelopt-algo", re.compile(r"Unknown ModelOpt quant algo: (\S+)"), modelopt_algo),
    (
        "startup-free-memory",
        re.compile(
            r"[Ff]ree memory on device (?:\S+ )?\(([\d.]+)/([\d.]+) GiB\) on startup is less "
            r"than desired GPU memory utilization \(([\d.]+), ([\d.]+) GiB\)"
        ),
        too_little_free,
    ),
    (
        "excluded-quantized-module",
        re.compile(r"There is no module or parameter named '(lm_head\.\w+_scale\w*)'"),
        excluded_scale,
    ),
    (
        # vLLM's loader; transformers' own wording goes on "in gguf-py" (its catalogue answer)
        "gguf-model-type",
        re.compile(r"Unknown gguf model_type: ([\w.-]+)(?![\w.-])(?! in gguf-py)"),
        unknown_gguf_type,
    ),
    (
        "hub-repo-id",
        re.compile(
            r"(?:Repo id must (?:be in the form|use alphanumeric chars)[^:]*?:|"
            r"Incorrect path_or_model_id:)\s*'([^']+)'"
        ),
        invalid_repo_id,
    ),
    (
        "engine-defect",
        re.compile(r"NameError: name '(\w+)' is not defined"),
        undefined_name,
    ),
    (
        "engine-defect",
        re.compile(r"'Logger' object has no attribute '(\w+)'"),
        missing_logger_method,
    ),
    (
        "engine-defect",
        re.compile(r"cannot import name '(\w+)' from partially initialized module '\w+'"),
        circular_import,
    ),
    # a LoRA adapter's weights given as the model, before any other reading of the name
    *LORA_ADAPTER_RULES,
    (
        # the weight loader's words: quoted up to 0.14, bare (and followed by the layer's
        # parameters) from 0.15
        "unknown-weight",
        re.compile(r"There is no module or parameter named '?([\w.]+?)'? in (\w+)"),
        unknown_weight,
    ),
    (
        "quantization-mismatch",
        re.compile(
            r"Quantization method specified in the model config \((\S*?)\) does not match the "
            # the argument's name in backticks, which a log pasted through Markdown loses
            r"quantization method specified in the `?quantization`? argument \((\S+?)\)"
        ),
        quantization_mismatch,
    ),
    (
        "unknown-quantization",
        re.compile(r"Unknown quantization method: (\S+?)\.? Must be one of"),
        unknown_quantization,
    ),
    (
        "invalid-value",
        re.compile(r"error: argument ([-\w/]+): \d+ validation errors? for (\w+)"),
        invalid_object,
    ),
    ("flag-json", NOT_JSON, json_flag),
    (
        "invalid-choice",
        re.compile(r"error: argument ([-\w/]+): invalid choice: '([^']*)' \(choose from"),
        invalid_choice,
    ),
    (
        "invalid-choice",
        re.compile(r"(invalid tool call parser|invalid reasoning parser): (\S+?) \(chose from"),
        invalid_parser,
    ),
    (
        "unrecognized-arguments",
        # argparse's message after its "PROG: error: ", or alone, as a report quotes it
        re.compile(r"(?:error: |^\s*)unrecognized arguments: (.+?)\s*$"),
        unrecognized_arguments,
    ),
    (
        "arguments-required",
        re.compile(r"error: the following arguments are required: (.+?)\s*$"),
        arguments_required,
    ),
    (
        "unexpected-engine-argument",
        # TensorRT-LLM's LlmArgs are its own rule's (trtllm_rules)
        re.compile(r"(?<!LlmArgs\.)__init__\(\) got an unexpected keyword argument '(\w+)'"),
        unexpected_argument,
    ),
    (
        "undefined-symbol",
        # Python's ImportError, transformers' lazy import of it (the path alone on its line),
        # Triton's "unable to load shared library: X.so: undefined symbol: S"
        re.compile(r"(/?[^\s:]+?\.so(?:\.\d+)*): undefined symbol: (\S+)"),
        undefined_symbol,
    ),
    (
        "port-in-use",
        re.compile(
            r"error while attempting to bind on address \('([^']*)', (\d+)\): "
            r"\[?.*address already in use",
            re.IGNORECASE,
        ),
        port_in_use,
    ),
    (
        "quantization-config-missing",
        re.compile(r"Cannot find the config file for (\w+)"),
        no_quantization_config,
    ),
    ("mistral-weights", MISTRAL_NAME, mistral_names),
    ("tied-lm-head", LM_HEAD, lm_head),
    (
        "quantized-weights-unquantized-model",
        re.compile(r"KeyError: '([\w.]*?\.(qweight|qzeros|g_idx|weight_packed|weight_scale_inv))'"),
        quantized_weights,
    ),
    (
        "quantization-gpu",
        re.compile(
            r"The quantization method (\S+) is not supported for the current GPU\. Minimum "
            r"capability: (\d+)\. Current capability: (\d+)"
        ),
        quantization_gpu,
    ),
    (
        "unsupported-architecture",
        re.compile(r"Model architectures (\[.*?\]) are not supported for now"),
        architecture,
    ),
    (
        "unsupported-architecture",
        re.compile(r"Unsupported architectures: (\S+?)\.? Supported list"),
        sglang_architecture,
    ),
    (
        "block-size",
        re.compile(r"No common block size for (\d+) \((.*)\)"),
        _block_size,
    ),
    (
        "remote-code",
        re.compile(
            r"consider setting .trust_remote_code=True.|contains custom code which must be "
            r"executed|Please pass the argument .trust_remote_code=True."
        ),
        _remote_code,
    ),
    (
        # transformers' wrapper of config.json's JSONDecodeError; json's own BOM refusal
        "unreadable-json",
        re.compile(
            r"It looks like the config file at '(?:[^']*/)?([^'/]+)' is not a valid JSON file"
            r"|Unexpected UTF-8 BOM \(decode using utf-8-sig\)()"
        ),
        bom,
    ),
    (
        "no-model-type",
        re.compile(r"Unrecognized model in \S+?\.? Should have a `model_type` key"),
        _no_model_type,
    ),
    (
        "unreadable-json",
        re.compile(r"Expecting value: line 1 column 1 \(char 0\)"),
        not_json,
    ),
    (
        "bfloat16-gpu",
        re.compile(r"Bfloat16 is only supported on GPUs with compute capability of at least 8\.0"),
        _bf16,
    ),
    (
        "rope-missing-keys",
        re.compile(
            r"Missing required keys in .(rope_(?:scaling|parameters)). for "
            r"'rope_type'='(\w+)': (\{.*?\}|\[.*?\]|set\(.*?\))"
        ),
        _rope_keys,
    ),
    (
        "sglang-memory",
        # its words, or their start where a report's quote ends there
        re.compile(
            r"Not enough memory\. Please try to increase --mem-fraction-static"
            r"|RuntimeError: Not enough memory(?![\w .])"
        ),
        _sglang_memory,
    ),
    (
        "sglang-context-length",
        re.compile(
            r"context_length \((\d+)\) is greater than the derived context_length \((\d+)\)"
        ),
        _sglang_length,
    ),
    *STRICT_RULES,
    *HYBRID_MANAGER_RULES,
    # before the families: a capture's failure quoting the check is answered by its bound
    *ENV_BOUND_RULES,
    *SPECULATIVE_RULES,
    *RAY_CLUSTER_RULES,
    *TRITON_RESOURCE_RULES,
    *TRTLLM_GEN_RULES,
    *BACKEND_GPU_RULES,
    *FLASHINFER_DISPATCH_RULES,
    *FP8E4NV_RULES,
    *FAMILY_RULES,
    *SIZE_RULES,
    *DTYPE_RULES,
    *MARLIN_RULES,
    *MISTRAL_RULES,
    *TRANSFORMERS_RULES,
    *REMOTE_TOKENIZER_RULES,
    *SAFETENSORS_RULES,
    *SCHEME_RULES,
    *TRTLLM_RULES,
    *TRTLLM_ENGINE_RULES,
    *ENVIRONMENT_RULES,
    *HUB_RULES,
    # last: a config class lacking a field, where no rule above names a cause of its own
    (
        "config-attribute",
        re.compile(r"AttributeError: '(\w+?)Config' object has no attribute '(\w+)'"),
        config_attribute,
    ),
)


# A line can only meet a rule if it holds one of these words (each is plain text of a rule's
# pattern, one per alternative), so every other line of a debug log is passed over after one
# C search and is never cleaned nor tried against each rule.
_MARKERS = (
    "on startup is less than desired",
    *LORA_ADAPTER_MARKERS,
    *STRICT_MARKERS,
    *HYBRID_MANAGER_MARKERS,
    "Expecting value: line 1 column 1",
    "Should have a `model_type` key",
    "No common block size",
    *ATTENTION_MARKERS,
    "max seq len",
    "memory for the cache blocks",
    "max_model_len",
    "quantization requires",
    "quant algo",
    "quantization method",
    "Model architectures",
    "trust_remote_code",
    "custom code",
    "Bfloat16",
    "is not a valid JSON file",
    "Unexpected UTF-8 BOM",
    "Missing required keys",
    "Not enough memory",
    "context_length",
    "Cannot find the config file for",
    "invalid choice",
    "invalid tool call parser",
    "invalid reasoning parser",
    "cannot be converted to <function",
    "validation error",
    "unrecognized arguments",
    "arguments are required",
    "unexpected keyword argument",
    "attempting to bind on address",
    "undefined symbol",
    "Config' object has no attribute",
    "KeyError: '",
    "is not defined",
    "'Logger' object has no attribute",
    "from partially initialized module '",
    "Repo id must ",
    "Unknown gguf model_type",
    "Incorrect path_or_model_id",
    *FAMILY_MARKERS,
    *FP8E4NV_MARKERS,
    *SIZE_MARKERS,
    *DTYPE_MARKERS,
    *MARLIN_MARKERS,
    *MISTRAL_MARKERS,
    *ENV_BOUND_MARKERS,
    *SPECULATIVE_MARKERS,
    *RAY_CLUSTER_MARKERS,
    *TRITON_RESOURCE_MARKERS,
    *TRTLLM_GEN_MARKERS,
    *BACKEND_GPU_MARKERS,
    *FLASHINFER_DISPATCH_MARKERS,
    *TRANSFORMERS_MARKERS,
    *REMOTE_TOKENIZER_MARKERS,
    *SAFETENSORS_MARKERS,
    *SCHEME_MARKERS,
    *TRTLLM_MARKERS,
    *TRTLLM_ENGINE_MARKERS,
    *ENVIRONMENT_MARKERS,
    *HUB_MARKERS,
)
