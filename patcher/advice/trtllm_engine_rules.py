"""doctor's rules for a TensorRT-LLM engine against the runtime that starts it, from
TensorRT-LLM's own source (read through the workplace's code index; no wheel is reachable).

An engine is built for a number of GPUs, with or without cross attention and paged context
FMHA, by one TensorRT-LLM release; the runtime (the C++ executor behind Triton's backend and
the LLM API, or the Python runtime of the examples' run.py) checks each at start-up:

- the MPI ranks started against the engine's tensor x pipeline parallel size, in the C++
  wordings of its releases and the Python runtime's (snapshots/engines/trtllm-world-size.txt);
- the cross-attention share of the KV cache, which an encoder-decoder engine needs and a
  decoder-only one refuses (snapshots/engines/trtllm-cross-kv.txt);
- KV cache block reuse of an engine built without paged context FMHA, and blocks left off the
  GPU with those kernels (snapshots/engines/trtllm-block-reuse.txt);
- in-flight batching of an engine built without the attention plugin, packed input or a paged
  KV cache (snapshots/engines/trtllm-inflight-batching.txt);
- the runtime's own GPU buffers and KV cache pools not fitting beside the loaded engine
  (snapshots/engines/trtllm-runtime-oom.txt);
- an engine built by another release: a ``plugin_config`` key the runtime reads with ``at()``
  (snapshots/engines/trtllm-engine-keys.txt), a plugin's serialized length, the Python
  runtime's tensor names and the C++ runtime's inputs (snapshots/engines/trtllm-engine-tensors.txt),
  or TensorRT's own check of the release that serialized the plan
  (snapshots/engines/tensorrt-plan-version.txt).
"""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix, LogContext, Rule


def _launch_fixes(shown: str) -> list[Fix]:
    return [
        Fix(
            "advice",
            f"mpirun -n {shown} --allow-run-as-root <the same command>",
            note=f"Triton: python3 scripts/launch_triton_server.py --world_size {shown}, "
            "which runs mpirun so",
        ),
        Fix("advice", "or an engine built for the GPUs the launch starts (trtllm-build --tp_size)"),
    ]


def _ranks_cause(ranks: int, needed: int) -> str:
    return (
        f"TensorRT-LLM was started with {ranks} MPI rank{'s' if ranks != 1 else ''}, and the "
        f"engine is built for {needed} (tensor x pipeline parallel, one process per GPU): the "
        "launch, not the engine"
    )


def _world_size(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """cpp/tensorrt_llm/runtime/worldConfig.cpp, ``WorldConfig::mpi``: the MPI ranks started
    must be the engine's tp x pp (x cp); a tensor-parallel engine started as one process (a
    bare ``tritonserver``, ``run.py`` without ``mpirun -n``) fails here
    (snapshots/engines/trtllm-world-size.txt)."""
    ranks = int(m.group(1)) if m.group(1) else None
    sizes = [int(g) for g in m.groups()[1:] if g]
    needed = 1
    for size in sizes:
        needed *= size
    if ranks is not None and sizes:
        return _ranks_cause(ranks, needed), _launch_fixes(str(needed))
    # without the numbers: the engine's own (its config.json's mapping.world_size)
    cause = (
        "TensorRT-LLM was started with another number of MPI ranks than the engine's "
        "tensor x pipeline parallel size (one process per GPU): the launch, not the engine"
    )
    return cause, _launch_fixes("<mapping.world_size of the engine's config.json>")


def _engine_world_size(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """The Python runtime's own check of the same (``ModelRunner``, ``GenerationSession`` and
    the examples' ``read_config``): ``Engine world size (tp[ * pp]) != Runtime world size
    (mpi_world_size())`` (snapshots/engines/trtllm-world-size.txt)."""
    needed = int(m.group(1)) * (int(m.group(2)) if m.group(2) else 1)
    return _ranks_cause(int(m.group(3)), needed), _launch_fixes(str(needed))


def _cross_kv(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """trtGptModelInflightBatching.cpp (executorImpl.cpp in later releases): the cross-attention
    share of the KV cache must be set for an engine with cross attention and left unset for
    one without (snapshots/engines/trtllm-cross-kv.txt)."""
    if m.group(1) == "Do not":
        return (
            "a cross-attention share of the KV cache (cross_kv_cache_fraction) was set for a "
            "decoder-only engine, which has no cross attention",
            [
                Fix(
                    "advice",
                    "remove the cross_kv_cache_fraction parameter from Triton's tensorrt_llm "
                    "config.pbtxt (or leave it as the template's ${cross_kv_cache_fraction})",
                    note="the LLM API: no kv_cache_config.cross_kv_cache_fraction",
                )
            ],
        )
    return (
        "an encoder-decoder engine (cross attention) needs the cross-attention share of its KV "
        "cache set (cross_kv_cache_fraction), and none was",
        [
            Fix(
                "advice",
                "cross_kv_cache_fraction: 0.5 in Triton's tensorrt_llm config.pbtxt (the "
                "share of the KV cache for cross attention, between 0 and 1)",
                note="the LLM API: kv_cache_config.cross_kv_cache_fraction; 0.5 is the value "
                "TensorRT-LLM's encoder-decoder examples give",
            )
        ],
    )


def _plan_version(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """TensorRT's own refusal of a serialized engine (the plan) another TensorRT release built:
    by default an engine runs only with the TensorRT that built it (NVIDIA's TensorRT
    documentation, Version Compatibility; snapshots/engines/tensorrt-plan-version.txt)."""
    loading, built = m.group(1), m.group(2)
    return _refused_plan(
        f"{loading} and {built}; in the reports read the first is the TensorRT that loads it, "
        "the second the one that built it"
    )


def _serialized_version(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """The same refusal in TensorRT's serialization format numbers: the message names which
    is the loading TensorRT's ("Current") and which the engine's ("Serialized Engine")."""
    loading, built = m.group(1), m.group(2)
    return _refused_plan(f"format {built} in the engine, {loading} in the TensorRT that loads it")


def _refused_plan(which: str) -> tuple[str, list[Fix]]:
    """The answer to a plan another TensorRT built, ``which`` saying the two releases."""
    return (
        f"the engine was serialized by another TensorRT release than the one loading it "
        f"({which}): an engine runs only with the TensorRT that built it",
        [
            Fix(
                "advice",
                "build the engine again with the TensorRT the server loads it with",
                note="python -c 'import tensorrt; print(tensorrt.__version__)' where it runs; "
                "for Triton, run trtllm-build inside the same nvcr.io/nvidia/tritonserver "
                "<YY.MM>-trtllm-python-py3 container that serves it",
            ),
            Fix("advice", "or serve it with the TensorRT release that built it"),
        ],
    )


def _engine_tensors(_m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        "the engine's input and output tensors are not the ones this TensorRT-LLM runtime "
        "expects: the engine was built by another release, or with other build options",
        [
            *_rebuild(),
            Fix(
                "advice",
                "the 'expected tensors are not found' and 'not expected' lines before it name "
                "the tensors that differ: a build option the runtime's config.json does not say",
            ),
        ],
    )


def _engine_input(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """cpp/tensorrt_llm/runtime/tllmRuntime.cpp, ``TllmRuntime::setInputTensors``: each input
    the engine declares must be one the runtime fills; one it does not know is an engine built
    by another release (snapshots/engines/trtllm-engine-tensors.txt)."""
    return (
        f"the engine takes an input '{m.group(1)}' that this TensorRT-LLM runtime does not "
        "provide (tllmRuntime.cpp, setInputTensors): the engine was built by another "
        "TensorRT-LLM release than the one that runs it",
        _rebuild(),
    )


def _block_reuse(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    if m.group(1):  # reuse asked of an engine built without paged context FMHA
        return (
            "KV cache block reuse was asked of an engine built without paged context FMHA, "
            "which reuse needs (trtGptModelInflightBatching.cpp)",
            [
                Fix(
                    "advice",
                    "enable_kv_cache_reuse: false in Triton's tensorrt_llm config.pbtxt "
                    "(kv_cache_config: {enable_block_reuse: false} in the LLM API)",
                ),
                Fix(
                    "advice",
                    "or build the engine again with trtllm-build --use_paged_context_fmha enable",
                    note="keeps the reuse",
                ),
            ],
        )
    return (
        "KV cache blocks left off the GPU (onboard_blocks false) with context FMHA or XQA "
        "kernels, which need them onboard",
        [
            Fix(
                "advice",
                "kv_cache_onboard_blocks: true in Triton's tensorrt_llm config.pbtxt "
                "(kv_cache_config: {onboard_blocks: true} in the LLM API)",
            )
        ],
    )


def _inflight_batching(_m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """trtGptModelInflightBatching.cpp: batching in flight needs the engine built with the GPT
    attention plugin, packed input (no padding) and a paged KV cache, three build options; the
    executor refuses it once the engine is loaded, before it allocates its buffers
    (snapshots/engines/trtllm-inflight-batching.txt)."""
    return (
        "the engine was built without one of the three options in-flight batching needs: the "
        "GPT attention plugin, packed input (remove_input_padding) and a paged KV cache "
        "(its config.json's plugin_config says which): the engine's build, not the launch",
        [
            Fix(
                "advice",
                "build the engine again with trtllm-build --gpt_attention_plugin auto "
                "--remove_input_padding enable --paged_kv_cache enable",
                note="the older per-model build.py: --use_gpt_attention_plugin <dtype> "
                "--remove_input_padding --paged_kv_cache",
            ),
            Fix(
                "advice",
                "or serve this engine unbatched: gpt_model_type: V1 in Triton's tensorrt_llm "
                "config.pbtxt",
                note="one request at a time per batch; no in-flight batching",
            ),
        ],
    )


def _runtime_oom(_m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """tllmBuffers.h's CudaAllocatorAsync, which the runtime's buffers and the paged KV cache's
    pools are allocated through after TensorRT loaded the engine, failing as Triton creates the
    model instance: the buffers the engine's build sizes and the KV cache's share of what is
    left do not fit together (snapshots/engines/trtllm-runtime-oom.txt)."""
    return (
        "TensorRT-LLM's runtime ran out of GPU memory allocating its own buffers after the "
        "engine loaded: the buffers its build sizes (max_batch_size x the sequence length, "
        "max_num_tokens) and the KV cache's share of what is left do not fit together",
        [
            Fix(
                "advice",
                "build the engine again with a smaller --max_batch_size (and --max_input_len, "
                "--max_seq_len or --max_num_tokens, which size the same buffers)",
            ),
            Fix(
                "advice",
                "or a smaller share of the free memory for the KV cache: "
                "kv_cache_free_gpu_mem_fraction below the default 0.85 to 0.9 in Triton's "
                "tensorrt_llm config.pbtxt",
                note="trtllm-serve --kv_cache_free_gpu_memory_fraction; the LLM API's "
                "kv_cache_config.free_gpu_memory_fraction",
            ),
        ],
    )


# The plugin_config keys the runtime reads with at() (gptJsonConfig.cpp's parsePluginConfig and
# parseLora; snapshots/engines/trtllm-engine-keys.txt): options the engine writer gained release by
# release. An architecture key missing (num_layers) is an engine the backend does not serve.
PLUGIN_KEYS = frozenset(
    {
        "gpt_attention_plugin",
        "remove_input_padding",
        "paged_kv_cache",
        "tokens_per_block",
        "use_custom_all_reduce",
        "use_context_fmha_for_generation",
        "use_paged_context_fmha",
        "lora_plugin",
    }
)
# The top-level keys of the engine's config.json the runtime reads with at() for its layout
# (snapshots/engines/trtllm-engine-keys.txt, "layout:"): which of them an engine has is the
# builder release's, so one missing is an engine of another release, like a plugin key.
LAYOUT_KEYS = frozenset({"builder_config", "build_config", "pretrained_config", "plugin_config"})


def _rebuild() -> list[Fix]:
    return [
        Fix(
            "advice",
            "build the engine again with the TensorRT-LLM that runs it",
            note="pip show tensorrt_llm where it runs; in Triton, inside its "
            "nvcr.io/nvidia/tritonserver <YY.MM>-trtllm-python-py3 container",
        ),
        Fix(
            "advice",
            'or run it with the TensorRT-LLM that built it (config.json\'s "version")',
        ),
    ]


def _engine_release(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    if m.group(1) in LAYOUT_KEYS:
        return (
            f"the engine's config.json has no top-level '{m.group(1)}', which this TensorRT-LLM "
            "runtime reads for its layout (gptJsonConfig.cpp: the old builder's builder_config, "
            "the new builder API's version, build_config and pretrained_config): the engine was "
            "built by another TensorRT-LLM release than the one that runs it",
            _rebuild(),
        )
    if m.group(1) not in PLUGIN_KEYS:
        return "", []
    return (
        f"the engine's config.json has no '{m.group(1)}', which this TensorRT-LLM runtime "
        "reads (gptJsonConfig.cpp, nlohmann::json's at()): the engine was built by another "
        "TensorRT-LLM release than the one that runs it",
        _rebuild(),
    )


def _plugin_length(_m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    # the releases after the bare TLLM_CHECK(d == a + length) say it themselves: "This is
    # often caused by using different TensorRT-LLM version to build engine and run engine."
    return (
        "a plugin serialized in the engine is not the length this TensorRT-LLM reads back: the "
        "engine was built by another TensorRT-LLM release than the one that runs it",
        _rebuild(),
    )


TRTLLM_ENGINE_RULES: tuple[Rule, ...] = (
    (
        "trtllm-world-size",
        re.compile(
            r"Assertion failed: (?:mpiSize == tp \* pp|MPI size (\d+) != TP size (\d+) \* "
            r"PP size (\d+)(?: \* CP Size (\d+))?|With communicationMode kLEADER, MPI "
            r"worldSize is expected to be equal to tp\*pp)"
        ),
        _world_size,
    ),
    (
        "trtllm-world-size",
        re.compile(r"Engine world size \((\d+)(?: \* (\d+))?\) != Runtime world size \((\d+)\)"),
        _engine_world_size,
    ),
    (
        "trtllm-cross-kv",
        re.compile(r"(Do not|Must) set crossKvCacheFraction for (?:decoder-only|encoder-decoder)"),
        _cross_kv,
    ),
    (
        "trtllm-engine-release",
        re.compile(
            r"creating modelInstanceState: \[json\.exception\.out_of_range\.403\] "
            r"key '(\w+)' not found"
        ),
        _engine_release,
    ),
    (
        "trtllm-engine-release",
        re.compile(
            r"Assertion failed: d == a \+ length\b"
            r"|Expected length \(\d+\) != real length \(\d+\)\. This is often caused by using "
            r"different TensorRT-LLM version"
        ),
        _plugin_length,
    ),
    (
        "trtllm-engine-release",
        re.compile(r"Tensor names in engine are not the same as expected"),
        _engine_tensors,
    ),
    (
        "trtllm-engine-release",
        re.compile(r"Input tensor '(\w+)' not found; expected shape"),
        _engine_input,
    ),
    (
        "trtllm-engine-release",
        re.compile(
            r"The engine plan file is not compatible with this version of TensorRT, expecting "
            r"library version ([\d.]+) got ([\d.]+)"
        ),
        _plan_version,
    ),
    (
        "trtllm-engine-release",
        re.compile(
            r"Version tag does not match\. Note: Current Version: (\d+), Serialized Engine "
            r"Version: (\d+)"
        ),
        _serialized_version,
    ),
    (
        "trtllm-block-reuse",
        re.compile(
            r"(When KV cache block reuse is set, model has to be built with paged context FMHA)"
            r"|KV cache blocks need to be onboarded if context FMHA or XAQ kernels are used"
        ),
        _block_reuse,
    ),
    (
        "trtllm-inflight-batching",
        re.compile(
            r"TrtGptModelInflightBatching requires GPT attention(?:/Mamba Conv 1d)? plugin with "
            r"packed input and paged KV cache"
        ),
        _inflight_batching,
    ),
    (
        "trtllm-runtime-oom",
        re.compile(
            r"creating modelInstanceState: \[TensorRT-LLM\]\[ERROR\] CUDA runtime error in "
            r"::cudaMalloc(?:Async)?\(.*?\): out of memory"
        ),
        _runtime_oom,
    ),
)
# One plain word of each rule above (engine_rules' _MARKERS takes them; trtllm_rules' markers
# hold "Assertion failed: " and "creating modelInstanceState: " for the rules whose pattern
# holds one of them: the rank check, the engine's keys, the runtime's allocator).
TRTLLM_ENGINE_MARKERS = (
    "Runtime world size",
    "set crossKvCacheFraction",
    "KV cache block",
    "!= real length",
    "Tensor names in engine",
    "not found; expected shape",
    "TensorRT, expecting library",
    "Version tag does not match",
    "TrtGptModelInflightBatching requires",
)
