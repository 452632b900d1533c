"""doctor on a TensorRT-LLM engine refused by the runtime that starts it: logs written from
TensorRT-LLM's own checks (snapshots/engines/trtllm-*.txt hold the source read)."""

from __future__ import annotations

import re

import pytest

from patcher.advice.doctor import diagnose_text
from tests.conftest import SNAPSHOTS

# One line of each rule's (test_doctor's marker test takes them with its own cases).
ENGINE_LINES = [
    # TensorRT's own check (snapshots/engines/tensorrt-plan-version.txt)
    "[TensorRT-LLM][ERROR] 6: The engine plan file is not compatible with this version of "
    "TensorRT, expecting library version 9.2.0.5 got 9.3.0.1, please rebuild.",
    "[TensorRT-LLM][ERROR] 1: [stdArchiveReader.cpp::stdArchiveReaderInitCommon::47] Error Code 1: "
    "Serialization (Serialization assertion stdVersionRead == kSERIALIZATION_VERSION failed."
    "Version tag does not match. Note: Current Version: 226, Serialized Engine Version: 228)",
    "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp "
    "(/app/tensorrt_llm/cpp/tensorrt_llm/runtime/worldConfig.cpp:80)",
    # the Python runtime's own check (snapshots/engines/trtllm-world-size.txt)
    "AssertionError: Engine world size (2 * 1) != Runtime world size (1)",
    # trtGptModelInflightBatching.cpp / executorImpl.cpp (snapshots/engines/trtllm-cross-kv.txt)
    "[TensorRT-LLM][ERROR] Assertion failed: Must set crossKvCacheFraction for encoder-decoder "
    "model (/app/cpp/tensorrt_llm/batch_manager/trtGptModelInflightBatching.cpp:210)",
    # trtGptModelInflightBatching.cpp (snapshots/engines/trtllm-block-reuse.txt)
    "[TensorRT-LLM][ERROR] Assertion failed: When KV cache block reuse is set, model has to be "
    "built with paged context FMHA support (/app/cpp/trtGptModelInflightBatching.cpp:140)",
    # trtGptModelInflightBatching.cpp (snapshots/engines/trtllm-inflight-batching.txt)
    "E1024 07:33:56.907690 74602 model_lifecycle.cc:622] failed to load 'tensorrt_llm' version 1: "
    "Internal: unexpected error when creating modelInstanceState: TrtGptModelInflightBatching "
    "requires GPT attention/Mamba Conv 1d plugin with packed input and paged KV cache.",
    # tllmBuffers.h's allocator creating the instance (snapshots/engines/trtllm-runtime-oom.txt)
    "E1103 02:59:01.152656 81041 backend_model.cc:553] ERROR: Failed to create instance: "
    "unexpected error when creating modelInstanceState: [TensorRT-LLM][ERROR] CUDA runtime error "
    "in ::cudaMallocAsync(ptr, n, mCudaStream->get()): out of memory "
    "(/app/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:112)",
    # gptJsonConfig.cpp's at() on a plugin key (snapshots/engines/trtllm-engine-keys.txt)
    "unexpected error when creating modelInstanceState: [json.exception.out_of_range.403] "
    "key 'tokens_per_block' not found",
    # a plugin's deserialization check (snapshots/engines/trtllm-engine-keys.txt)
    "[TensorRT-LLM][ERROR] Assertion failed: d == a + length "
    "(/app/cpp/tensorrt_llm/plugins/gemmPlugin/gemmPlugin.cpp:80)",
    # the Python runtime's tensor names (snapshots/engines/trtllm-engine-tensors.txt)
    "RuntimeError: Tensor names in engine are not the same as expected.",
    # the C++ runtime's inputs (snapshots/engines/trtllm-engine-tensors.txt)
    "[TensorRT-LLM][ERROR] Encountered an error in forward function: Input tensor "
    "'host_max_kv_cache_length_0' not found; expected shape: (1) "
    "(/app/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmRuntime.cpp:149)",
]


@pytest.mark.parametrize("line", ENGINE_LINES)
def test_each_rule_reads_its_line_alone(line: str) -> None:
    found = diagnose_text(line + "\n")
    assert found.code is not None and found.code.startswith("trtllm-"), line
    assert found.fixes


def _world_size_wordings() -> list[str]:
    """The wordings of TensorRT-LLM's rank-count check as read
    (snapshots/engines/trtllm-world-size.txt)."""
    text = (SNAPSHOTS / "engines" / "trtllm-world-size.txt").read_text()
    return [line for line in text.splitlines() if line.startswith("Assertion failed: ")]


def test_every_wording_of_the_rank_count_check_is_the_launch_not_the_engine() -> None:
    wordings = _world_size_wordings()
    assert len(wordings) == 4
    for wording in wordings:
        for prefix in (
            "RuntimeError: [TensorRT-LLM][ERROR] ",
            "E1114 09:30:00.910920 6946 "
            "model_lifecycle.cc:621] failed to load 'tensorrt_llm' version 1: Internal: "
            "unexpected error when creating modelInstanceState: [TensorRT-LLM][ERROR] ",
        ):
            found = diagnose_text(prefix + wording + "\n")
            assert found.code == "trtllm-world-size", wording
            assert found.fixes[0].text.startswith("mpirun -n ")


def test_the_numbers_the_newer_wording_prints_are_the_ranks_to_start() -> None:
    found = diagnose_text(
        "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: MPI size 1 != TP size 4 * PP size "
        "2 * CP Size 1 (/src/cpp/tensorrt_llm/runtime/worldConfig.cpp:110)\n"
    )
    assert "started with 1 MPI rank" in found.cause and "built for 8" in found.cause
    assert found.fixes[0].text == "mpirun -n 8 --allow-run-as-root <the same command>"


TRITON = (
    "E0131 07:18:59.626800 38258 backend_model.cc:634] ERROR: Failed to create instance: "
    "unexpected error when creating modelInstanceState: [TensorRT-LLM][ERROR] Assertion failed: "
)


def test_block_reuse_of_an_engine_built_without_paged_context_fmha_names_both_ways() -> None:
    text = (SNAPSHOTS / "engines" / "trtllm-block-reuse.txt").read_text()
    reuse, onboard = [line for line in text.splitlines() if not line.startswith("#")]
    found = diagnose_text(f"{TRITON}{reuse} (/src/trtGptModelInflightBatching.cpp:140)\n")
    assert found.code == "trtllm-block-reuse"
    texts = [f.text for f in found.fixes]
    assert texts[0].startswith("enable_kv_cache_reuse: false")
    assert "--use_paged_context_fmha enable" in texts[1]
    other = diagnose_text(f"[TensorRT-LLM][ERROR] Assertion failed: {onboard} (/x.cpp:1)\n")
    assert other.code == "trtllm-block-reuse"
    assert other.fixes[0].text.startswith("kv_cache_onboard_blocks: true")


def test_every_wording_of_the_inflight_batching_check_is_the_engine_build() -> None:
    text = (SNAPSHOTS / "engines" / "trtllm-inflight-batching.txt").read_text()
    wordings = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert len(wordings) == 2
    for wording in wordings:
        found = diagnose_text(
            "E1025 09:17:53.664847 126 backend_model.cc:553] ERROR: Failed to create instance: "
            f"unexpected error when creating modelInstanceState: {wording}\n"
        )
        assert found.code == "trtllm-inflight-batching", wording
        texts = [f.text for f in found.fixes]
        # the three build options the check reads, each enabled; the launch is not the cause
        for option in (
            "--gpt_attention_plugin",
            "--remove_input_padding enable",
            "--paged_kv_cache enable",
        ):
            assert option in texts[0]
        assert "gpt_model_type: V1" in texts[1]
        assert not any(t.startswith("mpirun") for t in texts)


def test_the_runtime_out_of_memory_creating_the_instance_is_the_build_or_the_kv_share() -> None:
    text = (SNAPSHOTS / "engines" / "trtllm-runtime-oom.txt").read_text()
    (wording,) = [line for line in text.splitlines() if line and not line.startswith("#")]
    found = diagnose_text(
        "Model 'tensorrt_llm' loading failed with error: version 1 is at UNAVAILABLE state: "
        "Internal: unexpected error when creating modelInstanceState: [TensorRT-LLM][ERROR] "
        f"{wording} (/app/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:112)\n"
    )
    assert found.code == "trtllm-runtime-oom"
    texts = [f.text for f in found.fixes]
    assert "--max_batch_size" in texts[0]
    assert "kv_cache_free_gpu_mem_fraction" in texts[1]
    # the same allocator failing while a request runs is no start-up failure of the build
    serving = diagnose_text(
        "[TensorRT-LLM][ERROR] Encountered an error in forward function: [TensorRT-LLM][ERROR] "
        f"{wording} (/app/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:112)\n"
    )
    assert serving.code != "trtllm-runtime-oom"


def test_a_cpp_check_triton_wraps_is_quoted_from_the_check_without_its_frames() -> None:
    # Triton's backend wraps the C++ check in its own words, and newer Triton quotes it with its
    # stack frames joined by a written "\\n"; no rule reads this check, and the root doctor
    # quotes is the check itself, not "no known failure" and not the frames
    check = (
        "[TensorRT-LLM][ERROR] Assertion failed: 16 != 40 "
        "(/workspace/tensorrt_llm/cpp/tensorrt_llm/layers/lookaheadDecodingLayer.cpp:56)"
    )
    frames = "\\n1       0x7ff34f6bdff8 tensorrt_llm::common::throwRuntimeError(char const*, int)"
    for tail in ("", frames + '"'):
        found = diagnose_text(
            TRITON.removesuffix("[TensorRT-LLM][ERROR] Assertion failed: ") + check + tail + "\n"
        )
        assert found.code is None and not found.fixes
        assert found.error == check


_KEYS = (SNAPSHOTS / "engines" / "trtllm-engine-keys.txt").read_text().splitlines()


@pytest.mark.parametrize(
    ("key", "layout"),
    [(line, False) for line in _KEYS if line and not line.startswith("#")]
    + [(line.removeprefix("# layout: "), True) for line in _KEYS if line.startswith("# layout: ")],
)
def test_a_key_the_engine_lacks_is_an_engine_of_another_release(key: str, layout: bool) -> None:
    # a plugin option the engine's writer gained later, or a layout key: an engine the new
    # builder API wrote has no builder_config, which a runtime from before the engine's
    # "version" was read takes with at() (the snapshot's notes)
    found = diagnose_text(
        "E0618 08:11:17.058465 1 model_lifecycle.cc:630] failed to load 'tensorrt_llm' version 1: "
        "Internal: unexpected error when creating modelInstanceState: "
        f"[json.exception.out_of_range.403] key '{key}' not found\n"
    )
    assert found.code == "trtllm-engine-release"
    assert "another TensorRT-LLM release" in found.cause
    assert (f"no top-level '{key}'" in found.cause) == layout
    assert found.fixes[0].text.startswith("build the engine again")


def test_an_architecture_key_the_engine_lacks_is_not_called_another_release() -> None:
    found = diagnose_text(
        "unexpected error when creating modelInstanceState: "
        "[json.exception.out_of_range.403] key 'num_layers' not found\n"
    )
    assert found.code != "trtllm-engine-release"


@pytest.mark.parametrize(
    "wording",
    [
        "Assertion failed: d == a + length "
        "(/app/tensorrt_llm/cpp/tensorrt_llm/plugins/gptAttentionCommon/gptAttentionCommon.cpp:320)",
        "Assertion failed: Expected length (1024) != real length (1016). This is often caused by "
        "using different TensorRT-LLM version to build engine and run engine.",
    ],
)
def test_a_plugin_of_another_release_in_the_engine_is_a_rebuild(wording: str) -> None:
    # the older bare check and the words later releases give it
    # (snapshots/engines/trtllm-engine-keys.txt)
    found = diagnose_text(f"{TRITON.split('[TensorRT-LLM]')[0]}[TensorRT-LLM][ERROR] {wording}\n")
    assert found.code == "trtllm-engine-release"
    assert found.fixes[0].text == "build the engine again with the TensorRT-LLM that runs it"


@pytest.mark.parametrize(
    "wording",
    [
        line
        for line in (SNAPSHOTS / "engines" / "tensorrt-plan-version.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ],
)
def test_a_plan_another_tensorrt_built_is_built_again_where_it_is_served(wording: str) -> None:
    found = diagnose_text(f"{TRITON.split('[TensorRT-LLM]')[0]}{wording}\n")
    assert found.code == "trtllm-engine-release"
    numbers = re.search(r"expecting library version ([\d.]+) got ([\d.]+)", wording)
    formats = re.search(r"Current Version: (\d+), Serialized Engine Version: (\d+)", wording)
    if numbers is not None:
        # both releases are named; which loads it is told as the reports read show it
        assert f"({numbers.group(1)} and {numbers.group(2)};" in found.cause
    else:  # the format numbers, each named as the message names it
        assert formats is not None
        assert f"format {formats.group(2)} in the engine, {formats.group(1)} in the" in found.cause
    assert (
        found.fixes[0].text == "build the engine again with the TensorRT the server loads it with"
    )


def test_the_plugin_check_quoted_alone_is_still_a_rebuild() -> None:
    # a report's title quotes the check's words without the prefix or the file: the check
    # exists only in the plugins' constructors from the engine's bytes (the snapshot's note)
    found = diagnose_text("Assertion failed: d == a + length\n")
    assert found.code == "trtllm-engine-release"
    assert found.fixes[0].text == "build the engine again with the TensorRT-LLM that runs it"


@pytest.mark.parametrize(
    "wording",
    [
        line
        for line in (SNAPSHOTS / "engines" / "trtllm-engine-tensors.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ],
)
def test_an_engine_whose_tensors_the_runtime_does_not_expect_is_a_rebuild(wording: str) -> None:
    found = diagnose_text(
        "[01/29/2024-10:00:00] [TRT-LLM] [E] The following expected tensors are not found: "
        "{'host_request_types'}\n"
        '  File "/usr/local/lib/python3.10/dist-packages/tensorrt_llm/runtime/generation.py", '
        "line 560, in __init__\n"
        f"RuntimeError: {wording}\n"
    )
    assert found.code == "trtllm-engine-release"
    assert found.fixes[0].text == "build the engine again with the TensorRT-LLM that runs it"


def test_an_input_the_cxx_runtime_does_not_fill_names_the_tensor_and_a_rebuild() -> None:
    # Triton's tensorrtllm backend loading an engine another release built: the runtime's
    # first forward throws for the engine's input it does not know (tllmRuntime.cpp)
    found = diagnose_text(
        "I1213 08:00:00.000000 100 model_lifecycle.cc:461] loading: tensorrt_llm:1\n"
        "[TensorRT-LLM][INFO] Engine version 0.7.0 found in the config file, assuming engine(s) "
        "built by new builder API.\n"
        "[TensorRT-LLM][ERROR] Encountered an error in forward function: Input tensor "
        "'host_kv_cache_block_pointers_0' not found; expected shape: (-1, 2, -1) "
        "(/app/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmRuntime.cpp:143)\n"
    )
    assert found.code == "trtllm-engine-release"
    assert "'host_kv_cache_block_pointers_0'" in found.cause
    assert [f.text for f in found.fixes][:1] == [
        "build the engine again with the TensorRT-LLM that runs it"
    ]


def test_the_python_runtime_s_rank_check_is_the_same_launch() -> None:
    # both wordings (snapshots/engines/trtllm-world-size.txt), under the examples' run.py
    text = (SNAPSHOTS / "engines" / "trtllm-world-size.txt").read_text()
    wordings = [line for line in text.splitlines() if line.startswith("AssertionError: ")]
    assert len(wordings) == 2
    for wording in wordings:
        found = diagnose_text(
            '  File "/code/tensorrt_llm/examples/llama/run.py", line 54, in read_config\n'
            "    assert world_size == tensorrt_llm.mpi_world_size(), \\\n"
            f"{wording}\n"
        )
        assert found.code == "trtllm-world-size"
        assert "started with 1 MPI rank, and the engine is built for 2" in found.cause
        assert found.fixes[0].text == "mpirun -n 2 --allow-run-as-root <the same command>"
    # more ranks than the engine's: the number to start is still the engine's
    found = diagnose_text("AssertionError: Engine world size (1) != Runtime world size (8)\n")
    assert found.fixes[0].text == "mpirun -n 1 --allow-run-as-root <the same command>"


def test_the_cross_attention_share_is_left_out_for_a_decoder_and_set_for_an_encoder_decoder() -> (
    None
):
    text = (SNAPSHOTS / "engines" / "trtllm-cross-kv.txt").read_text()
    refused, needed = [line for line in text.splitlines() if line and not line.startswith("#")]
    # as Triton's backend wraps the check, newer Triton quoting it with its frames
    found = diagnose_text(
        f"{TRITON.removesuffix('Assertion failed: ')}Assertion failed: {refused} "
        "(/workspace/tensorrt_llm/cpp/tensorrt_llm/executor/executorImpl.cpp:322)\\n1       "
        '0x7fdb13d6ed3b tensorrt_llm::common::throwRuntimeError(char const*, int)"\n'
    )
    assert found.code == "trtllm-cross-kv"
    assert found.fixes[0].text.startswith("remove the cross_kv_cache_fraction parameter")
    found = diagnose_text(f"[TensorRT-LLM][ERROR] Assertion failed: {needed}\n")
    assert found.code == "trtllm-cross-kv"
    assert found.fixes[0].text.startswith("cross_kv_cache_fraction: 0.5")
