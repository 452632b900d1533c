"""doctor's rules for TensorRT-LLM's start-up failures, from TensorRT-LLM's own source.

TensorRT-LLM's wheels are not reachable from here (pypi.org carries stubs, the wheels are on
pypi.nvidia.com), so no release of it is read into the catalogue. These rules come from its
source as the public-code index holds it (``trtllm-memory.json`` names the files):

- the PyTorch executor's memory monitor (``_ExecutorMemoryMonitor``) names the component it
  could not create and, per component, the option that shrinks it; doctor maps that option to
  the ``trtllm-serve`` flag that sets it;
- the PyTorch backend's model registry (``_torch/models/modeling_auto.py``) and the TensorRT
  backend's converter registry (``models/automodel.py``) refuse an architecture each in its own
  words: the first has the TensorRT backend as a way out where its converters list the
  architecture (``MODEL_MAP``, read at one commit into ``trtllm-model-map.json``), the second
  may have the PyTorch backend;
- ``LlmArgs`` refuses an option it does not have (an options file written for another
  release);
- the C++ KV cache manager (``cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp``) refuses a
  pool smaller than one sequence at the longest attention window, in whole blocks, times the
  beam width (the TensorRT backend and Triton's say it; the numbers where the release prints
  them);
- the KV cache transfer buffer of disaggregated serving (``cacheTransBuffer.cpp``) refuses a
  token budget (``cache_transceiver_config.max_tokens_in_buffer``) that is not a whole number of
  KV blocks (``kv_cache_config.tokens_per_block``; snapshots/engines/trtllm-cache-transfer.txt);
- Triton's TensorRT-LLM backend (triton-inference-server/tensorrtllm_backend, read by
  tools/read_triton_templates.py into ``trtllm-templates.json``): its model templates'
  ``${key}`` placeholders, which Triton refuses unfilled in protobuf's words ("29:17: Expected
  integer, got: $"), and the engine folder its ``gpt_model_path`` must name, whose config.json
  the backend parses (before it checked the folder exists, a parse error at line 1, column 1).

The engine against the runtime that starts it (ranks, cross attention, block reuse, another
release's engine) is trtllm_engine_rules.py.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from patcher.advice.log_rules import Fix, LogContext, Rule
from patcher.advice.packaged import packaged

# trtllm-serve's flag for each option the memory monitor names (tensorrt_llm/commands/serve.py)
_FLAGS = {
    "free_gpu_memory_fraction": "--kv_cache_free_gpu_memory_fraction",
    "max_num_tokens": "--max_num_tokens",
    "max_seq_len": "--max_seq_len",
    "max_batch_size": "--max_batch_size",
}
# A value below trtllm-serve's default (serve.py; BuildConfig for the sizes), for a log that
# does not show the one it ran with.
_LOWER = {
    "--kv_cache_free_gpu_memory_fraction": "0.8",  # default 0.9
    "--max_num_tokens": "4096",  # default 8192
    "--max_batch_size": "128",  # default 256
}


@functools.cache
def _templates() -> dict[str, Any]:
    templates: dict[str, Any] = packaged("trtllm-templates.json")
    return templates


@functools.cache
def _suggestions() -> dict[str, str | None]:
    components: dict[str, str | None] = packaged("trtllm-memory.json")["components"]
    return components


def _memory(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    component = m.group(1).strip()
    suggestion = _suggestions().get(component)
    cause = f"TensorRT-LLM ran out of GPU memory creating its {component}" + (
        f" (its own advice: {suggestion})" if suggestion else ""
    )
    if suggestion is None:
        return cause + "; its source names no option for this component", [
            Fix("advice", "free the GPU of other processes, or more GPUs (--tp_size)")
        ]
    fixes: list[Fix] = []
    for option, flag in _FLAGS.items():
        if option in suggestion:
            value = _LOWER.get(flag)
            fixes.append(
                Fix(
                    "flag",
                    f"{flag} {value or 'N'}",
                    # the log does not show the value it ran with: below the default, or N
                    note="below trtllm-serve's default (lower still if it ran with less)"
                    if value
                    else "N below the value it ran with (the log does not show it)",
                )
            )
    if "tensor parallelism" in suggestion:
        fixes.append(
            Fix(
                "flag",
                "--tp_size N",
                note="N GPUs share the weights (or --pp_size N); the model did not fit on one",
            )
        )
    for option in ("max_attention_window_size", "max_draft_len"):
        if option in suggestion:
            fixes.append(Fix("advice", f"or a smaller {option} in --extra_llm_api_options"))
    return cause, fixes


@functools.cache
def _converted() -> frozenset[str]:
    """The architectures TensorRT-LLM's TensorRT backend converts (MODEL_MAP, read at one
    commit: trtllm-model-map.json)."""
    return frozenset(packaged("trtllm-model-map.json")["architectures"])


def _no_model_class(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """The PyTorch backend lacks the architecture: the TensorRT backend where its converters
    list it (from 1.0 the PyTorch backend is the default, and the LLM API names the other
    one's import in its own words), else an engine gap."""
    arch = m.group(1)
    if arch in _converted():
        return (
            f"TensorRT-LLM's PyTorch backend (the default from 1.0) has no model class for "
            f"{arch}, but its TensorRT backend converts it (MODEL_MAP, read from TensorRT-LLM's "
            "source): run it on the TensorRT backend, from the Hugging Face checkpoint or an "
            "engine trtllm-build made",
            [
                Fix("flag", "--backend tensorrt", note="trtllm-serve's, on the same model"),
                Fix(
                    "advice",
                    "in Python: from tensorrt_llm._tensorrt_engine import LLM (the LLM API's "
                    "own words for the TensorRT backend)",
                ),
            ],
        )
    return (
        f"TensorRT-LLM's PyTorch backend has no model class for {arch} (its model "
        "registry), and its TensorRT backend converts none of that name either: an engine "
        "gap, not a config problem",
        [Fix("advice", f"a TensorRT-LLM release that lists {arch}, or another engine")],
    )


def _llm_api_lists(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """The early LLM API (0.9-0.10's ``hlapi``) converts only the architectures it names."""
    return (
        f"this TensorRT-LLM's LLM API converts only {m.group(2)}, not {m.group(1)}: an engine "
        "gap of this release's LLM API, not a config problem",
        [
            Fix("advice", f"a TensorRT-LLM release whose LLM API lists {m.group(1)}"),
            Fix(
                "advice",
                f"or the model's own convert_checkpoint.py and trtllm-build for {m.group(1)}, "
                "then the engine folder",
            ),
        ],
    )


def _no_converter(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    # Which release's PyTorch backend lists which architecture is not read (no wheel here):
    # the way out is named with its condition, not as a fix (0.17's lists no DeepSeek-V3).
    return (
        f"TensorRT-LLM's TensorRT backend has no converter for {m.group(1)}; the PyTorch "
        "backend keeps a model registry of its own, unread here",
        [
            Fix(
                "advice",
                f"--backend pytorch (in Python, LLM(..., backend='pytorch')) where this "
                f"release's PyTorch backend lists {m.group(1)}; if it answers 'Unknown "
                "architecture for AutoModelForCausalLM', this release has no support for it",
            )
        ],
    )


def _kv_pool_too_small(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp, KVCacheManager's constructor: the
    pool (blocks x tokensPerBlock) must hold one sequence of the longest attention window,
    in whole blocks, times the beam width."""
    pool, beam, per_block, blocks = (int(g) if g else None for g in m.groups())
    needed = beam * per_block * blocks if beam and per_block and blocks else None
    fits = pool // (beam * per_block) * per_block if pool and beam and per_block else None
    sizes = f" ({pool} tokens; one sequence needs {needed})" if pool and needed else ""
    if "modelInstanceState" in m.string:  # Triton's backend: its model's parameters
        fixes = [
            Fix(
                "advice",
                _fill("tensorrt_llm", {"kv_cache_free_gpu_mem_fraction": "0.9"}),
                note="a larger share of the free memory for the pool, and no "
                "max_tokens_in_paged_kv_cache that caps it below one sequence (or these "
                "values in that file, where it was filled already)",
            ),
            Fix(
                "advice",
                _fill("tensorrt_llm", {"max_attention_window_size": str(fits or "N")}),
                note="the longest sequence the pool holds"
                if fits
                else "N a shorter window; or rebuild the engine with a smaller --max_seq_len",
            ),
        ]
    else:
        fixes = [
            Fix(
                "flag",
                "--kv_cache_free_gpu_memory_fraction 0.9",
                note="trtllm-serve's default; a smaller fraction or max_tokens_in_paged_kv_cache "
                "made the pool this small",
            ),
            Fix(
                "flag",
                f"--max_seq_len {fits}" if fits else "--max_seq_len N",
                note="the longest sequence the pool holds"
                if fits
                else "N a shorter sequence (or a smaller max_attention_window_size)",
            ),
        ]
    if beam and beam > 1:
        fixes.append(Fix("advice", "or a smaller beam width (max_beam_width)"))
    return (
        f"TensorRT-LLM's KV cache pool is smaller than one sequence at the longest length it "
        f"was built or started for{sizes}",
        fixes,
    )


def _unknown_option(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        f"this TensorRT-LLM's {m.group(1)} has no option {m.group(2)}: the options were "
        "written for another release",
        [
            Fix(
                "advice",
                f"remove {m.group(2)} from the --extra_llm_api_options file (or the LLM(...) "
                "call), or run the release it was written for",
            )
        ],
    )


# The fields the PyTorch backend's arguments (TorchLlmArgs) declare and the TensorRT backend's
# lack (llm_args.py, one stored version; snapshots/engines/trtllm-torch-args.txt).
TORCH_ONLY_ARGS = frozenset(
    {
        "use_cuda_graph",
        "cuda_graph_batch_sizes",
        "cuda_graph_max_batch_size",
        "cuda_graph_padding_enabled",
        "disable_overlap_scheduler",
        "moe_max_num_tokens",
        "moe_load_balancer",
        "attn_backend",
        "moe_backend",
        "mixed_sampler",
        "enable_trtllm_sampler",
        "kv_cache_dtype",
        "enable_iter_perf_stats",
        "enable_iter_req_stats",
        "print_iter_log",
        "torch_compile_config",
        "autotuner_enabled",
        "enable_layerwise_nvtx_marker",
        "load_format",
        "enable_min_latency",
        "stream_interval",
    }
)


def _invalid_argument(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """llmapi/llm.py: the LLM checks its keyword arguments against the arguments' class of the
    backend it runs (``_TrtLLM``: the TensorRT backend's TrtLlmArgs)."""
    llm, key = m.group(1), m.group(2)
    if llm == "_TrtLLM" and key in TORCH_ONLY_ARGS:
        return (
            f"{key} is an option of TensorRT-LLM's PyTorch backend, and this LLM runs the "
            "TensorRT backend (no --backend pytorch was given, where the release's default "
            "is the TensorRT one, or --backend tensorrt was)",
            [
                Fix(
                    "flag",
                    "--backend pytorch",
                    note="trtllm-serve and trtllm-bench; LLM(..., backend='pytorch') in Python",
                ),
                Fix("advice", f"or remove {key} from the --extra_llm_api_options file"),
            ],
        )
    return _unknown_option(m, ctx)


def _fill(model: str, values: dict[str, str]) -> str:
    """The backend's own command that fills ``model``'s template keys (tools/fill_template.py,
    ``key:value`` pairs joined by commas)."""
    pairs = ",".join(f"{key}:{value}" for key, value in values.items()) or "KEY:VALUE"
    return f"python3 tools/fill_template.py -i MODEL_REPO/{model}/config.pbtxt {pairs}"


def _unfilled(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """A ``${key}`` the backend's template fill (tools/fill_template.py) left in a model's
    config.pbtxt, at the line and column protobuf names: the keys the read templates have
    there, and the models whose templates have them."""
    line, column = m.group(1), m.group(2)
    keys = _templates()["places"].get(f"{line}:{column}", [])
    models = sorted({name for name, has in _templates()["models"].items() if set(keys) & set(has)})
    named = " or ".join(f"${{{k}}}" for k in keys) or "a ${...} placeholder"
    return (
        f"a model's config.pbtxt still holds {named} at line {line}, column {column}: the "
        "template was not filled in for it",
        [
            Fix(
                "advice",
                _fill("MODEL", dict.fromkeys(keys, "VALUE")),
                note="MODEL: the model directory the next log line names (Poll failed for "
                "model directory 'MODEL')"
                + (
                    f"; the backend's templates with this key: {', '.join(models)}"
                    if models
                    else ""
                ),
            )
        ],
    )


def _scalar_input(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """Triton's model config check (the core's model_config_utils.cc): an input reshaped to a
    scalar (``reshape: { shape: [ ] }``) is refused in a non-batching model
    (``max_batch_size: 0``). The backend's templates that reshape so (trtllm-templates.json)
    set ``max_batch_size`` from ``${triton_max_batch_size}``: it was filled with 0."""
    model = m.group("model") or m.group("loaded")
    scalar = _templates()["scalar_inputs"]
    whose = f"{model} model" if model else "model"
    return (
        f"the {whose}'s config.pbtxt has max_batch_size: 0 (a non-batching model), "
        "and its inputs are reshaped to scalars, which Triton takes only in a batching model; "
        f"the backend's templates that reshape so ({', '.join(sorted(scalar))}) set "
        "max_batch_size from ${triton_max_batch_size}",
        [
            Fix(
                "advice",
                _fill(model or "MODEL", {"triton_max_batch_size": "N"}),
                note="N >= 1, the engine's max batch size (trtllm-build --max_batch_size); or "
                "set max_batch_size: N in that file"
                + ("" if model else " (MODEL: the model Triton failed to load)"),
            )
        ],
    )


def _engine_path(_m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """The backend read no engine where ``gpt_model_path`` points: no config.json there."""
    parameter = _templates()["engine_path_parameter"]
    return (
        f"the tensorrt_llm model's {parameter} names no engine folder: the backend found no "
        "engine config.json there (a path that does not exist inside the server's container, "
        "or a template left unfilled)",
        [
            Fix(
                "advice",
                _fill(
                    "tensorrt_llm",
                    dict.fromkeys(_templates()["engine_path_placeholders"], "ENGINE_DIR"),
                ),
                note="ENGINE_DIR: the folder trtllm-build wrote (config.json, rank0.engine), as "
                "the server's container sees it",
            )
        ],
    )


def _no_backend(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """Triton has no TensorRT-LLM backend where it looks (``/opt/tritonserver/backends/``),
    or the model's ``backend`` is a template key left unfilled."""
    backend = m.group(1) or "tensorrtllm"
    unfilled = re.fullmatch(r"\$\{(\w+)\}", backend)
    if unfilled is not None:
        return (
            f"the tensorrt_llm model's config.pbtxt names its backend as {backend}: the "
            "template was not filled in for it",
            [
                Fix(
                    "advice",
                    _fill("tensorrt_llm", {unfilled.group(1): "tensorrtllm"}),
                    note="tensorrtllm: the C++ backend; python: the PyTorch one",
                )
            ],
        )
    return (
        "this Triton container has no TensorRT-LLM backend: the plain tritonserver image "
        "carries none",
        [
            Fix(
                "advice",
                "nvcr.io/nvidia/tritonserver:<yy.mm>-trtllm-python-py3, the release whose "
                "TensorRT-LLM built the engines (the backend's own docs)",
            )
        ],
    )


def _transfer_blocks(_m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        "the KV cache transfer buffer of disaggregated serving is sized in tokens "
        "(cache_transceiver_config.max_tokens_in_buffer; unset, the release fills it from "
        "max_seq_len, max_input_len or max_num_tokens), which must be a whole number of KV "
        "blocks (kv_cache_config.tokens_per_block, 32 by default)",
        [
            Fix(
                "advice",
                "cache_transceiver_config: {max_tokens_in_buffer: <a multiple of "
                "tokens_per_block>} in the --extra_llm_api_options YAML",
                note="or --max_seq_len and --max_num_tokens that are, where it is left unset",
            ),
            Fix(
                "advice",
                "or kv_cache_config: {tokens_per_block: <a divisor of that budget>}",
                note="a power of two the budget divides",
            ),
        ],
    )


TRTLLM_RULES: tuple[Rule, ...] = (
    (
        "trtllm-executor-memory",
        re.compile(r"The following component could not be created: (.+)"),
        _memory,
    ),
    (
        "trtllm-no-model-class",
        re.compile(r"Unknown architecture for AutoModelForCausalLM: (\w+)"),
        _no_model_class,
    ),
    (
        "trtllm-no-model-class",
        re.compile(r"Unsupported model architecture: (\w+), only (.+?) (?:is|are) supported now"),
        _llm_api_lists,
    ),
    (
        "trtllm-no-converter",
        re.compile(r"The given huggingface model architecture (\w+) is not supported in TRT-LLM"),
        _no_converter,
    ),
    (
        "trtllm-transfer-blocks",
        re.compile(r"Assertion failed: maxNumTokens(?:\.value\(\))? % tokensPerBlock == 0"),
        _transfer_blocks,
    ),
    (
        "trtllm-kv-pool",
        re.compile(
            r"maxTokensInPagedKvCache(?: \((\d+)\))? must be large enough to process at least "
            r"1 sequence(?: to completion \(i\.e\. must be larger than beam_width \((\d+)\) \* "
            r"tokensPerBlock \((\d+)\) \* maxBlocksPerSeq \((\d+)\))?"
        ),
        _kv_pool_too_small,
    ),
    (
        "trtllm-template",
        re.compile(r"inference\.ModelConfig: (\d+):(\d+): Expected \w+, got: \$"),
        _unfilled,
    ),
    (
        "trtllm-scalar-input",
        re.compile(
            r"(?:failed to load '(?P<loaded>\w+)'.*?)?model (?:input|output)(?: '[^']*')? cannot "
            r"have empty reshape for non-batching model(?: as scalar tensors are not "
            r"supported)?(?: for (?P<model>\w+))?"
        ),
        _scalar_input,
    ),
    (
        "trtllm-engine-path",
        re.compile(
            r"creating modelInstanceState: \[json\.exception\.parse_error\.101\] parse error "
            r"at line 1, column 1|Decoder \(GPT\) model path at \S+ does not exist"
        ),
        _engine_path,
    ),
    (
        "trtllm-no-backend",
        re.compile(
            r"unable to find (?:'tensorrtllm/model\.py' for model|backend library for backend "
            r"'([^']+)')"
        ),
        _no_backend,
    ),
    (
        "trtllm-unknown-option",
        re.compile(r"\b(\w*LlmArgs)\.__init__\(\) got an unexpected keyword argument '(\w+)'"),
        _unknown_option,
    ),
    (
        "trtllm-unknown-option",
        re.compile(r"\b(_TrtLLM|_TorchLLM|LLM) got invalid argument: (\w+)"),
        _invalid_argument,
    ),
)
# One plain word of each rule above (engine_rules' _MARKERS takes them).
TRTLLM_MARKERS = (
    "component could not be created",
    "Unknown architecture for AutoModelForCausalLM",
    "is not supported in TRT-LLM",
    "got an unexpected keyword argument",
    "got invalid argument: ",
    "maxTokensInPagedKvCache",
    "ModelConfig: ",
    "creating modelInstanceState: ",
    "model path at ",
    "cannot have empty reshape",
    "unable to find ",
    "Unsupported model architecture: ",
    "Assertion failed: ",
)
