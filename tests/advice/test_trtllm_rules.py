"""doctor on TensorRT-LLM's start-up failures: logs written from TensorRT-LLM's own source.

The memory monitor's message is built as ``_ExecutorMemoryMonitor._maybe_explain_if_oom``
builds it (tensorrt_llm/_torch/pyexecutor/py_executor_creator.py), for every component its
source names (``patcher/advice/trtllm-memory.json``), behind TensorRT-LLM's logger prefix
and after the CUDA out-of-memory error it chains from.
"""

from __future__ import annotations

import json
import subprocess
from importlib import resources
from pathlib import Path

import pytest

from patcher.advice.doctor import diagnose_text
from patcher.advice.log_rules import Fix
from patcher.advice.trtllm_rules import _FLAGS, TORCH_ONLY_ARGS
from tests.conftest import SNAPSHOTS

READING = json.loads(resources.files("patcher.advice").joinpath("trtllm-memory.json").read_text())
COMPONENTS: dict[str, str | None] = READING["components"]
# One line of each rule's, as the source words it (the marker test in test_doctor reads them).
TRTLLM_LINES = [
    "The following component could not be created: KV cache",
    "ValueError: Unknown architecture for AutoModelForCausalLM: Qwen3NextForCausalLM",
    "NotImplementedError: The given huggingface model architecture DeepseekV3ForCausalLM is "
    "not supported in TRT-LLM yet",
    "TypeError: LlmArgs.__init__() got an unexpected keyword argument 'enable_attention_dp'",
    # Triton's TensorRT-LLM backend: protobuf refusing an unfilled template, and the engine
    # folder's config.json not found
    "Error parsing text-format inference.ModelConfig: 29:17: Expected integer, got: $",
    "E1212 03:05:00.535254 11684 backend_model.cc:553] ERROR: Failed to create instance: "
    "unexpected error when creating modelInstanceState: [json.exception.parse_error.101] parse "
    "error at line 1, column 1: syntax error while parsing value - unexpected end of input; "
    "expected '[', '{', or a literal",
    # Triton without the TensorRT-LLM backend (the plain tritonserver image)
    "failed to load 'tensorrt_llm' version 2: Invalid argument: unable to find "
    "'tensorrtllm/model.py' for model 'tensorrt_llm', in /opt/tritonserver/backends/tensorrtllm",
    # the early LLM API (hlapi), which converted two architectures
    "KeyError: 'Unsupported model architecture: Qwen2ForCausalLM, only LlamaForCausalLM, "
    "MixtralForCausalLM are supported now.'",
    # kvCacheManager.cpp's TLLM_CHECK_WITH_INFO, as tensorrt_llm's assert prints it
    "[TensorRT-LLM][ERROR] Assertion failed: maxTokensInPagedKvCache (256) must be large enough "
    "to process at least 1 sequence to completion (i.e. must be larger than beam_width (1) * "
    "tokensPerBlock (64) * maxBlocksPerSeq (32))",
    # cacheTransBuffer.cpp's TLLM_CHECK (snapshots/engines/trtllm-cache-transfer.txt)
    "[TensorRT-LLM][ERROR] Assertion failed: maxNumTokens.value() % tokensPerBlock == 0 "
    "(../tensorrt_llm/batch_manager/cacheTransBuffer.cpp:206)",
    # llmapi/llm.py's own check of the arguments against the backend's class
    # (snapshots/engines/trtllm-torch-args.txt)
    "[09/16/2025-03:59:59] [TRT-LLM] [E] Failed to parse the arguments for the LLM constructor: "
    "_TrtLLM got invalid argument: disable_overlap_scheduler",
    # Triton core's model config check (model_config_utils.cc): a scalar input, no batching
    "failed to load 'tensorrt_llm' version 1: Invalid argument: model input 'input_lengths' "
    "cannot have empty reshape for non-batching model as scalar tensors are not supported",
]
LOGGER = "[07/08/2026-19:47:15] [TRT-LLM] [RANK 1] [E] Failed to initialize executor on rank 1: "


def monitor_log(component: str) -> str:
    """The chained failure a TensorRT-LLM start-up prints when ``component`` does not fit."""
    message = "\n".join(
        [
            READING["opening"],
            "",
            READING["component_line"] + component,
            "Total GPU memory (GiB): 140.06",
            "Free GPU memory before component creation attempt (GiB): 108.86",
            "",
            "Previously created components and free GPU memory before/after creation (GiB):",
            "Model: 139.55 / 110.70",
            "Sampler: 110.70 / 110.70",
        ]
    )
    return "\n".join(
        [
            "[TensorRT-LLM] TensorRT-LLM version: 1.1.0",
            "Traceback (most recent call last):",
            '  File "/usr/local/lib/python3.12/dist-packages/tensorrt_llm/_torch/pyexecutor/'
            'py_executor_creator.py", line 120, in observe_creation_stage',
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has "
            "a total capacity of 140.06 GiB of which 1.50 MiB is free.",
            "",
            "The above exception was the direct cause of the following exception:",
            "",
            LOGGER + message,
        ]
    )


@pytest.mark.parametrize("line", TRTLLM_LINES)
def test_each_rule_reads_its_line_alone(line: str) -> None:
    code = diagnose_text(line + "\n").code
    assert code is not None and code.startswith("trtllm-")


def flags(fixes: tuple[Fix, ...]) -> list[str]:
    return [f.text.split()[0] for f in fixes if f.kind == "flag"]


@pytest.mark.parametrize("component", sorted(COMPONENTS))
def test_every_component_gets_the_flag_its_own_advice_names(component: str) -> None:
    diagnosis = diagnose_text(monitor_log(component))
    assert diagnosis.code == "trtllm-executor-memory"
    assert diagnosis.error == READING["component_line"] + component  # not the CUDA OOM above it
    suggestion = COMPONENTS[component]
    if suggestion is None:
        assert flags(diagnosis.fixes) == []
        return
    named = [flag for option, flag in _FLAGS.items() if option in suggestion]
    if "tensor parallelism" in suggestion:
        named.append("--tp_size")
    assert flags(diagnosis.fixes) == named and named
    assert all(f.text.startswith("--") for f in diagnosis.fixes if f.kind == "flag")


def test_kv_cache_gets_a_lower_fraction_than_trtllm_serves_default() -> None:
    diagnosis = diagnose_text(monitor_log("KV cache"))
    (fix,) = diagnosis.fixes
    assert fix.text == "--kv_cache_free_gpu_memory_fraction 0.8"  # serve.py's default is 0.9


def test_the_pytorch_backends_missing_model_is_no_config_fix() -> None:
    log = (
        '  File "/usr/local/lib/python3.12/dist-packages/tensorrt_llm/_torch/models/'
        'modeling_auto.py", line 37, in from_config\n'
        "ValueError: Unknown architecture for AutoModelForCausalLM: "
        "WhisperForConditionalGeneration\n"
        "RuntimeError: Executor worker returned error\n"
    )
    diagnosis = diagnose_text(log)
    assert diagnosis.code == "trtllm-no-model-class"
    assert [f.kind for f in diagnosis.fixes] == ["advice"]
    assert "not a config problem" in diagnosis.cause


def _model_map() -> list[str]:
    """The TensorRT backend's architectures as read (snapshots/engines/trtllm-model-map.txt)."""
    text = (SNAPSHOTS / "engines" / "trtllm-model-map.txt").read_text()
    return [line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"]


def test_the_packaged_converter_list_is_the_reading() -> None:
    packaged = resources.files("patcher.advice").joinpath("trtllm-model-map.json").read_text()
    assert json.loads(packaged)["architectures"] == _model_map()


@pytest.mark.parametrize("arch", ["ExaoneForCausalLM", "Gemma3ForCausalLM", "DbrxForCausalLM"])
def test_an_architecture_the_tensorrt_backend_converts_is_sent_there(arch: str) -> None:
    # TensorRT-LLM 1.0 made the PyTorch backend the default; the TensorRT one still converts it
    assert arch in _model_map()
    log = (
        f"ValueError: Unknown architecture for AutoModelForCausalLM: {arch}\n\n"
        "[TRT-LLM] [E] Failed to initialize executor on rank 0: Unrecognized model in "
        "/home/u/trt_engine/m.\n"
    )
    diagnosis = diagnose_text(log)
    assert diagnosis.code == "trtllm-no-model-class"
    assert diagnosis.fixes[0].text == "--backend tensorrt"
    assert "tensorrt_llm._tensorrt_engine import LLM" in diagnosis.fixes[1].text


def test_a_missing_converter_names_the_pytorch_backend_with_its_condition() -> None:
    log = (
        "ValueError: Inferred model format _ModelFormatKind.HF, but failed to load config.json: "
        "The given huggingface model architecture MiniMaxM2ForCausalLM is not supported in "
        "TRT-LLM yet\n"
    )
    diagnosis = diagnose_text(log)
    assert diagnosis.code == "trtllm-no-converter"
    (fix,) = diagnosis.fixes  # a way out with its condition: the registry is not read
    assert fix.kind == "advice" and fix.text.startswith("--backend pytorch")


def test_an_option_of_another_release_is_named() -> None:
    diagnosis = diagnose_text(
        "TypeError: TorchLlmArgs.__init__() got an unexpected keyword argument 'moe_config'\n"
    )
    assert diagnosis.code == "trtllm-unknown-option"
    assert "remove moe_config from the --extra_llm_api_options file" in diagnosis.fixes[0].text


def test_a_kv_pool_smaller_than_one_sequence_gets_a_bigger_pool_or_a_shorter_sequence() -> None:
    """kvCacheManager.cpp: the pool must hold one sequence of the longest window in whole
    blocks times the beam width; with the numbers, the longest sequence it holds is named."""
    found = diagnose_text(next(line for line in TRTLLM_LINES if "maxTokensInPaged" in line) + "\n")
    assert found.code == "trtllm-kv-pool"
    assert "256 tokens; one sequence needs 2048" in found.cause
    assert [f.text for f in found.fixes if f.kind == "flag"] == [
        "--kv_cache_free_gpu_memory_fraction 0.9",
        "--max_seq_len 256",
    ]
    # Triton's wording, without the numbers: the same failure, answered in the parameters
    # of Triton's tensorrt_llm model (its template's keys), the window left to choose
    bare = diagnose_text(
        "unexpected error when creating modelInstanceState: maxTokensInPagedKvCache must be "
        "large enough to process at least 1 sequence to completion\n"
    )
    assert bare.code == "trtllm-kv-pool" and not flags(bare.fixes)
    texts = [f.text for f in bare.fixes]
    assert any("kv_cache_free_gpu_mem_fraction:0.9" in t for t in texts)
    assert any("max_attention_window_size:N" in t for t in texts)
    keys = TEMPLATES["models"]["tensorrt_llm"]
    assert "kv_cache_free_gpu_mem_fraction" in keys and "max_attention_window_size" in keys


TEMPLATES = json.loads(
    resources.files("patcher.advice").joinpath("trtllm-templates.json").read_text()
)
# each place where the read templates hold one placeholder, a sample across the files
SINGLE = [(p, k[0]) for p, k in TEMPLATES["places"].items() if len(k) == 1][::25]


@pytest.mark.parametrize(("place", "key"), SINGLE)
def test_an_unfilled_template_names_the_key_at_that_place(place: str, key: str) -> None:
    line, column = place.split(":")
    # libprotobuf's line, wrapped where a terminal breaks it, then Triton's
    log = (
        "[libprotobuf ERROR /tmp/tritonbuild/tritonserver/build/_deps/repo-third-party-build/"
        "grpc-repo/src/grpc/third_party/protobuf/src/google/protobuf/text_format.cc:335] Error "
        "parsing text-format\n"
        f"inference.ModelConfig: {line}:{column}: Expected integer, got: $\n"
        "E1212 04:49:30.187206 1230 model_repository_manager.cc:1309] Poll failed for model "
        "directory 'ensemble': failed to read text proto from /models/ensemble/config.pbtxt\n"
    )
    found = diagnose_text(log)
    assert found.code == "trtllm-template"
    assert f"{key}:VALUE" in found.fixes[0].text
    assert "fill_template.py" in found.fixes[0].text


def test_the_engine_folder_is_named_in_both_of_the_backend_s_words() -> None:
    older = diagnose_text(TRTLLM_LINES[5] + "\n")
    newer = diagnose_text(
        "[TensorRT-LLM][ERROR] Assertion failed: Decoder (GPT) model path at "
        "/models/tensorrt_llm/1 does not exist. (/tmp/tritonbuild/model_instance_state.cc:745)\n"
    )
    for found in (older, newer):
        assert found.code == "trtllm-engine-path"
        assert "engine_dir:ENGINE_DIR" in found.fixes[0].text  # gpt_model_path's placeholder


def test_a_key_the_backend_s_config_json_lacks_is_not_taken_for_a_path() -> None:
    # an encoder model's engine (BERT) has no num_layers: not a folder the path misses
    found = diagnose_text(
        "E0524 03:33:12.868443 2517 backend_model.cc:691] ERROR: Failed to create instance: "
        "unexpected error when creating modelInstanceState: [json.exception.out_of_range.403] "
        "key 'num_layers' not found\n"
    )
    assert found.code != "trtllm-engine-path"
    assert not found.fixes


def test_the_reader_takes_each_placeholder_s_place_from_the_backend_s_history(
    tmp_path: Path,
) -> None:
    from tools.read_triton_templates import read

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *args],
            check=True,
            capture_output=True,
        )

    models = tmp_path / "all_models" / "inflight_batcher_llm"
    (models / "ensemble").mkdir(parents=True)
    (models / "tensorrt_llm").mkdir(parents=True)
    (models / "ensemble" / "config.pbtxt").write_text(
        'name: "ensemble"\nplatform: "ensemble"\nmax_batch_size: ${triton_max_batch_size}\n'
    )
    (models / "tensorrt_llm" / "config.pbtxt").write_text(
        'parameters: {\n  key: "gpt_model_path"\n  value: {\n    string_value: "${engine_dir}"'
        "\n  }\n}\n"
    )
    # a template that reshapes an input to a scalar: its batch size is kept
    (models / "tensorrt_llm_bls").mkdir(parents=True)
    (models / "tensorrt_llm_bls" / "config.pbtxt").write_text(
        "max_batch_size: ${triton_max_batch_size}\ninput [\n  {\n    reshape: { shape: [ ] }\n"
        "  }\n]\n"
    )
    source = tmp_path / "inflight_batcher_llm" / "src" / "model_instance_state.cc"
    source.parent.mkdir(parents=True)
    source.write_text('GetParameter<std::string>("gpt_model_path");\n')
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "backend")
    git("rm", "-rq", "inflight_batcher_llm")  # the backend's C++ moved out, as it did
    git("commit", "-qm", "moved")
    reading = read(tmp_path)
    assert reading["places"] == {
        "1:17": ["triton_max_batch_size"],
        "3:17": ["triton_max_batch_size"],
        "4:20": ["engine_dir"],
    }
    assert reading["models"] == {
        "ensemble": ["triton_max_batch_size"],
        "tensorrt_llm": ["engine_dir"],
        "tensorrt_llm_bls": ["triton_max_batch_size"],
    }
    assert reading["engine_path_placeholders"] == ["engine_dir"]
    assert reading["scalar_inputs"] == {"tensorrt_llm_bls": ["${triton_max_batch_size}"]}


def test_a_backend_left_as_a_template_key_is_filled_and_a_missing_one_is_the_trtllm_image() -> None:
    unfilled = diagnose_text(
        "failed to load 'tensorrt_llm' version 1: Invalid argument: unable to find backend "
        "library for backend '${triton_backend}', try specifying runtime on the model "
        "configuration.\n"
    )
    assert unfilled.code == "trtllm-no-backend"
    assert "triton_backend:tensorrtllm" in unfilled.fixes[0].text
    assert "triton_backend" in TEMPLATES["models"]["tensorrt_llm"]  # the key the reading has
    missing = diagnose_text(TRTLLM_LINES[6] + "\n")
    assert missing.code == "trtllm-no-backend"
    assert "-trtllm-python-py3" in missing.fixes[0].text


def test_the_backend_built_against_another_tensorrt_llm_is_one_release_s_container() -> None:
    found = diagnose_text(
        "UNAVAILABLE: Not found: unable to load shared library: /opt/tritonserver/backends/"
        "tensorrtllm/libtriton_tensorrtllm.so: undefined symbol: "
        "_ZNK12tensorrt_llm8executor8Response11getErrorMsgB5cxx11Ev\n"
    )
    assert found.code == "undefined-symbol"
    assert "another TensorRT-LLM release" in found.cause
    assert "-trtllm-python-py3" in found.fixes[0].text


def test_the_early_llm_api_s_two_architectures_are_an_engine_gap_not_a_config_edit() -> None:
    found = diagnose_text(TRTLLM_LINES[7] + "\n")
    assert found.code == "trtllm-no-model-class"
    assert "Qwen2ForCausalLM" in found.fixes[0].text
    assert not any(f.kind == "transform" for f in found.fixes)


def test_a_cpp_check_of_tensorrt_llm_is_quoted_as_the_root_where_no_rule_reads_it() -> None:
    # a TLLM_CHECK's bare condition, from the C++ decoding layers; no Python exception follows
    line = (
        "[TensorRT-LLM][ERROR] Assertion failed: 16 != 40 "
        "(/workspace/tensorrt_llm/cpp/tensorrt_llm/layers/lookaheadDecodingLayer.cpp:56)"
    )
    found = diagnose_text("[TensorRT-LLM][INFO] Initialized MPI\n" + line + "\n")
    assert found.code is None and not found.fixes  # not recognised: no fix is guessed
    assert found.error == line


def test_a_transfer_budget_not_in_whole_blocks_names_both_settings() -> None:
    # cacheTransBuffer.cpp's check, as its TLLM_CHECK prints it
    # (snapshots/engines/trtllm-cache-transfer.txt), from the executor of trtllm-serve
    text = (SNAPSHOTS / "engines" / "trtllm-cache-transfer.txt").read_text()
    wording = next(line for line in text.splitlines() if line.startswith("Assertion failed: "))
    found = diagnose_text(
        "[01/23/2026-04:43:47] [TRT-LLM] [E] Failed to initialize executor on rank 0: "
        f"[TensorRT-LLM][ERROR] {wording}\n"
    )
    assert found.code == "trtllm-transfer-blocks"
    assert "max_tokens_in_buffer" in found.fixes[0].text
    assert "tokens_per_block" in found.fixes[1].text
    assert not any(f.text.startswith("mpirun") for f in found.fixes)


def test_a_pytorch_backend_option_given_to_the_tensorrt_backend_names_the_backend() -> None:
    text = (SNAPSHOTS / "engines" / "trtllm-torch-args.txt").read_text()
    read = {line for line in text.splitlines() if line and not line.startswith("#")}
    assert read == TORCH_ONLY_ARGS  # the rule's list is the reading
    for key in sorted(read):
        found = diagnose_text(f"ValueError: _TrtLLM got invalid argument: {key}\n")
        assert found.code == "trtllm-unknown-option"
        assert found.fixes[0].text == "--backend pytorch", key
    # an option neither backend has is the options file of another release, as before
    other = diagnose_text("ValueError: _TorchLLM got invalid argument: pytorch_backend_config\n")
    assert other.code == "trtllm-unknown-option"
    assert other.fixes[0].text.startswith("remove pytorch_backend_config")


@pytest.mark.parametrize(
    ("line", "model"),
    [
        # Triton before the check named the input, the model after the message
        (
            "E0310 14:46:52.851000 8125 model_lifecycle.cc:638] failed to load 'tensorrt_llm' "
            "version 1: Invalid argument: model input cannot have empty reshape for "
            "non-batching model as scalar tensors are not supported for tensorrt_llm",
            "tensorrt_llm",
        ),
        # the core's model_config_utils.cc now: the input by name
        (
            "failed to load 'tensorrt_llm_bls' version 1: Invalid argument: model input "
            "'end_id' cannot have empty reshape for non-batching model as scalar tensors are "
            "not supported",
            "tensorrt_llm_bls",
        ),
        # a report that quotes the check alone: the model left to name
        (
            "model input 'end_id' cannot have empty reshape for non-batching model as scalar "
            "tensors are not supported",
            None,
        ),
    ],
)
def test_a_scalar_input_in_a_non_batching_model_fills_the_templates_batch_size(
    line: str, model: str | None
) -> None:
    found = diagnose_text(line + "\n")
    assert found.code == "trtllm-scalar-input"
    assert "max_batch_size: 0" in found.cause
    fix = found.fixes[0]
    assert "triton_max_batch_size:N" in fix.text and "N >= 1" in (fix.note or "")
    assert f"MODEL_REPO/{model or 'MODEL'}/config.pbtxt" in fix.text
    # every template the reading found reshaping to a scalar fills the size from the key
    for name in ("tensorrt_llm", "tensorrt_llm_bls"):
        assert "${triton_max_batch_size}" in TEMPLATES["scalar_inputs"][name]
        assert name in found.cause
