"""CUDA out of memory at start-up, answered by the phase the log shows (cuda_oom.py).

The logs are written from the engines' own phase lines (vLLM's gpu_model_runner "Model loading
took" and "Capturing CUDA graphs", its loader's shard progress; SGLang's model_runner "Load
weight begin/end" and cuda_graph_runner "Capture cuda graph begin") and torch's own words.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from patcher.advice.doctor import diagnose_text
from tests.advice.test_trtllm_rules import monitor_log

SNAPSHOTS = Path(__file__).parents[2] / "snapshots" / "engines"

VLLM_ARGS = (
    "(APIServer pid=1) INFO 12-04 10:00:00 [utils.py:233] non-default args: {'model_tag': "
    "'/m', 'gpu_memory_utilization': 0.95}"
)
VLLM_LOADING = "(EngineCore_DP0 pid=2) Loading safetensors checkpoint shards:  40% | 2/5"
VLLM_LOADED = (
    "(EngineCore_DP0 pid=2) INFO 12-04 10:01:00 [gpu_model_runner.py:2000] Model loading took "
    "60.1 GiB memory and 30.0 seconds"
)
# The V1 worker's line once the profiling pass is over and the cache sized (gpu_worker.py)
VLLM_SIZED = (
    "(EngineCore_DP0 pid=2) INFO 12-04 10:01:30 [gpu_worker.py:630] Available KV cache memory: "
    "12.1 GiB"
)
VLLM_CAPTURE = "(EngineCore_DP0 pid=2) Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 10%"
TORCH_OOM = (
    "(EngineCore_DP0 pid=2) ERROR 12-04 10:02:00 [core.py:700] torch.OutOfMemoryError: CUDA out "
    "of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of 79.19 GiB of which "
    "1.02 GiB is free."
)
# The line vLLM logs when its graphs are captured (gpu_model_runner, V1; model_runner, V0):
# the warm-up after it runs beside the KV cache's share.
VLLM_CAPTURED = (
    "(EngineCore_DP0 pid=2) INFO 12-04 10:02:00 [gpu_model_runner.py:6845] Graph capturing "
    "finished in 9 secs, took 0.41 GiB"
)
SGLANG_ARGS = (
    "[2026-12-04 10:00:00] server_args=ServerArgs(model_path='/m', mem_fraction_static=0.88)"
)
SGLANG_LOADING = "[2026-12-04 10:00:05 TP0] Load weight begin. avail mem=78.50 GB"
SGLANG_LOADED = (
    "[2026-12-04 10:00:50 TP0] Load weight end. type=X, avail mem=20.00 GB, mem usage=58.50 GB."
)
SGLANG_CAPTURE = (
    "[2026-12-04 10:01:00 TP0] Capture cuda graph begin. This can take up to several minutes."
)


def _texts(log: list[str]) -> list[str]:
    found = diagnose_text("\n".join(log))
    assert found.code == "cuda-oom-startup", found
    return [f.text for f in found.fixes]


def test_vllm_out_of_memory_capturing_cuda_graphs_gets_eager_and_a_lower_utilization() -> None:
    texts = _texts([VLLM_ARGS, VLLM_LOADED, VLLM_CAPTURE, TORCH_OOM])
    assert texts == ["--enforce-eager", "--gpu-memory-utilization 0.9", "--max-num-seqs 128"]


def test_vllm_out_of_memory_after_the_kv_cache_is_sized_lowers_the_utilization() -> None:
    texts = _texts([VLLM_ARGS, VLLM_LOADED, VLLM_SIZED, TORCH_OOM])
    assert texts == ["--gpu-memory-utilization 0.9"]  # lowered, never raised
    # no graph was being captured, and the profiling pass is over


def test_vllm_out_of_memory_in_the_profiling_pass_shortens_the_pass_not_the_share() -> None:
    # between the weights and the KV cache: vLLM's profile_run, which the utilization does
    # not size (snapshots/engines/vllm-profile-run.txt)
    found = diagnose_text("\n".join([VLLM_ARGS, VLLM_LOADED, TORCH_OOM]))
    texts = [f.text for f in found.fixes]
    assert not any("utilization" in t for t in texts), texts
    # no GPU named: below every default batch of the server (2048 under 70 GiB)
    assert texts == [
        "--max-num-batched-tokens 1024",
        "--max-model-len N",
        "--tensor-parallel-size N",
    ]
    assert "profiling pass" in found.cause
    # an H100's default is 8192: half of it
    h100 = "INFO 03-18 10:02:40 [cuda.py:96] GPU: NVIDIA H100 80GB HBM3"
    assert _texts([h100, VLLM_ARGS, VLLM_LOADED, TORCH_OOM])[0] == "--max-num-batched-tokens 4096"


@pytest.mark.parametrize(
    "switch",
    [
        # the command line, vLLM's non-default args, V0's Namespace, the engine's config
        "vllm serve /m --max-model-len 262144 --no-enable-chunked-prefill",
        "(APIServer pid=1) INFO [utils.py:233] non-default args: {'enable_chunked_prefill': False}",
        "INFO api_server.py:1] args: Namespace(model='/m', enable_chunked_prefill=False)",
        "INFO llm_engine.py:1] Initializing an LLM engine with config: chunked_prefill_enabled"
        "=False",
    ],
)
def test_with_chunked_prefill_off_the_profiling_pass_is_the_whole_context(switch: str) -> None:
    # the scheduler refuses a max_num_batched_tokens below max_model_len then: no smaller batch
    texts = _texts([switch, VLLM_LOADED, TORCH_OOM])
    # half the context the command shows, where it shows one
    shorter = "--max-model-len 131072" if "262144" in switch else "--max-model-len N"
    assert texts[:2] == ["--enable-chunked-prefill", shorter]
    assert not any(t.startswith("--max-num-batched-tokens") for t in texts)


def test_with_chunked_prefill_on_the_pass_is_halved_from_the_batch_it_ran() -> None:
    on = (
        "INFO 12-04 10:00:00 [scheduler.py:276] Chunked prefill is enabled with "
        "max_num_batched_tokens=8192."
    )
    texts = _texts([on, VLLM_LOADED, TORCH_OOM])
    assert texts == ["--max-num-batched-tokens 4096", "--tensor-parallel-size N"]
    # half would be below the sequences the scheduler keeps by default (1024): more GPUs
    small = on.replace("8192", "1024")
    assert _texts([small, VLLM_LOADED, TORCH_OOM]) == ["--tensor-parallel-size N"]


def test_torch_s_words_quoted_from_their_second_sentence_are_the_error() -> None:
    # a report that wrapped torch's message and kept it from "Tried to allocate" on
    quoted = (
        "    Tried to allocate 136.00 MiB. GPU 0 has a total capacity of 22.36 GiB of\n"
        "    which 120.88 MiB is free."
    )
    command = "vllm serve /m --gpu-memory-utilization 0.98 --max-model-len 124000"
    found = diagnose_text("\n".join([command, VLLM_LOADED, VLLM_SIZED, quoted]))
    assert found.code == "cuda-oom-startup"
    assert found.error is not None and found.error.startswith("Tried to allocate 136.00 MiB")
    # the command line's own share, hyphenated, is the one lowered
    assert [f.text for f in found.fixes] == ["--gpu-memory-utilization 0.93"]
    # the words alone, without torch's capacity, are not the error
    assert diagnose_text(f"{VLLM_LOADED}\nTried to allocate a new block").code is None


def test_vllm_out_of_memory_profiling_the_graphs_gets_no_graphs_or_fewer() -> None:
    # vLLM 0.29's worker captures the graphs beside a minimal KV cache before sizing the
    # cache: the share does not size this either
    profiling = (
        "(EngineCore pid=2) INFO 04-14 23:39:44 [gpu_model_runner.py:5876] Profiling CUDA graph "
        "memory: PIECEWISE=51 (largest=512), FULL=35 (largest=256)"
    )
    texts = _texts([VLLM_ARGS, VLLM_LOADED, profiling, TORCH_OOM])
    assert texts == ["--enforce-eager", "--max-num-seqs 128"]
    # and the cache sized after it is still the later phase
    assert _texts([VLLM_ARGS, VLLM_LOADED, profiling, VLLM_SIZED, TORCH_OOM]) == [
        "--gpu-memory-utilization 0.9"
    ]


def test_sglang_out_of_memory_after_the_weights_still_lowers_the_static_fraction() -> None:
    # SGLang allocates its KV pool from the fraction right after the weights
    texts = _texts([SGLANG_ARGS, SGLANG_LOADING, SGLANG_LOADED, TORCH_OOM])
    assert texts == ["--mem-fraction-static 0.83"]


def test_the_profiling_pass_runs_before_the_cache_is_sized_in_the_read_releases() -> None:
    recorded = (SNAPSHOTS / "vllm-profile-run.txt").read_text()
    v1, v0 = recorded.split("## vllm-0.6.3.post1", 1)
    # V1: the pass, then the cache from the requested share less what the pass took
    assert v1.index("self.model_runner.profile_run()") < v1.index("self.requested_memory")
    assert "self._dummy_run(" in v1 and "enable_chunked_prefill: bool = True" in v1
    assert "smaller than max_model_len" in v1  # chunked prefill off: the pass is the context
    assert '"Profiling CUDA graph memory: %s"' in v1  # the graphs, still before the cache
    # the server's default batch: 8192 from 70 GiB, 2048 below (1024 is under both)
    assert "UsageContext.OPENAI_API_SERVER: 8192," in v1
    assert "UsageContext.OPENAI_API_SERVER: 2048," in v1
    # V0: the same order, and its own reason to turn chunked prefill on over 32K
    assert v0.index("profile_run()") < v0.index("gpu_memory_utilization")
    assert "to avoid OOM errors in the" in v0


def test_the_sizes_the_log_shows_fill_the_context_and_the_gpus() -> None:
    # vLLM's resolved length and its tensor-parallel size, as its lines echo them
    resolved = "(APIServer pid=1) INFO 12-04 10:00:01 [model.py:1510] Using max model len 131072"
    args = VLLM_ARGS.replace("}", ", 'tensor_parallel_size': 2}")
    texts = _texts([args, resolved, VLLM_LOADED, TORCH_OOM])
    assert texts[1:] == ["--max-model-len 65536", "--tensor-parallel-size 4"]
    # past one node's eight GPUs, the size stays to be chosen
    eight = VLLM_ARGS.replace("}", ", 'tensor_parallel_size': 8}")
    assert _texts([eight, VLLM_LOADING, TORCH_OOM])[0] == "--tensor-parallel-size N"
    assert _texts([args, VLLM_LOADING, TORCH_OOM])[0] == "--tensor-parallel-size 4"


def test_out_of_memory_loading_the_weights_gets_more_gpus_not_a_memory_share() -> None:
    for log in ([VLLM_ARGS, VLLM_LOADING, TORCH_OOM], [SGLANG_ARGS, SGLANG_LOADING, TORCH_OOM]):
        texts = _texts(log)
        assert not any("utilization" in t or "fraction" in t for t in texts), texts
        assert texts[0] in ("--tensor-parallel-size N", "--tp-size N")


def test_sglang_out_of_memory_capturing_lowers_the_static_fraction_it_ran_with() -> None:
    texts = _texts([SGLANG_ARGS, SGLANG_LOADING, SGLANG_LOADED, SGLANG_CAPTURE, TORCH_OOM])
    assert texts == ["--mem-fraction-static 0.83", "--cuda-graph-max-bs 16", "--disable-cuda-graph"]


def test_a_default_utilization_is_read_from_an_args_line_that_does_not_set_one() -> None:
    args = (
        "(APIServer pid=1) INFO 12-04 10:00:00 [utils.py:233] non-default args: {'model_tag': '/m'}"
    )
    assert "--gpu-memory-utilization 0.85" in _texts([args, VLLM_LOADED, VLLM_SIZED, TORCH_OOM])


@pytest.mark.parametrize(
    "hint",
    [
        # vLLM's own hint before capturing (model_runner.py): it mentions running out of memory
        "INFO 02-03 03:43:49 model_runner.py:629] CUDA graphs can take additional 1~3 GiB memory "
        "per GPU. If you are running out of memory, consider decreasing `gpu_memory_utilization`",
    ],
)
def test_the_engines_hints_are_not_the_error(hint: str) -> None:
    found = diagnose_text("\n".join([VLLM_LOADED, hint]))
    assert found.code is None


def test_without_a_phase_the_error_is_quoted_with_no_fix() -> None:
    found = diagnose_text(TORCH_OOM)
    assert found.code is None and found.fixes == ()
    assert found.error is not None and "CUDA out of memory" in found.error


def test_a_more_specific_line_later_in_the_log_answers_instead() -> None:
    # TensorRT-LLM's executor chains the CUDA error into the component it could not create
    found = diagnose_text("\n".join([VLLM_LOADED, TORCH_OOM, monitor_log("KV cache")]))
    assert found.code == "trtllm-executor-memory"


def test_vllm_out_of_memory_after_the_graphs_lowers_the_share_and_the_sequences() -> None:
    texts = _texts([VLLM_ARGS, VLLM_LOADED, VLLM_CAPTURE, VLLM_CAPTURED, TORCH_OOM])
    assert texts == ["--gpu-memory-utilization 0.9", "--max-num-seqs 64"]
    # the graphs were taken already: eager mode frees nothing the warm-up needs


def test_the_warm_up_s_sequences_are_a_quarter_of_the_default_the_log_shows() -> None:
    # on an H100 from 0.8.5 on, the server's default was 1024 (startup_memory.fewer_sequences)
    h100 = [
        "INFO 03-18 10:02:11 [api_server.py:912] vLLM API server version 0.20.1",
        "INFO 03-18 10:02:40 [cuda.py:96] GPU: NVIDIA H100 80GB HBM3",
    ]
    texts = _texts([*h100, VLLM_ARGS, VLLM_LOADED, VLLM_CAPTURE, VLLM_CAPTURED, TORCH_OOM])
    assert texts == ["--gpu-memory-utilization 0.9", "--max-num-seqs 256"]


def test_the_capture_line_is_the_one_the_read_releases_log() -> None:
    from patcher.advice.cuda_oom import phase_of

    recorded = (SNAPSHOTS / "vllm-warmup-after-graphs.txt").read_text()
    lines = [ln for ln in recorded.splitlines() if "Graph capturing finished" in ln]
    assert len(lines) == 2  # V1's gpu_model_runner (0.26.0) and V0's model_runner (0.6.3)
    for line in lines:
        said = line.split('"')[1].replace("%.0f", "9").replace("%.2f", "0.41")
        assert phase_of(f"INFO [gpu_model_runner.py:1] {said}") == "warmup"
    # and the warm-up runs after the graphs, beside the KV cache the worker allocated
    assert recorded.index("capture_model()") < recorded.index("_dummy_sampler_run(")


# One line of each alternative of cuda_oom's phase patterns, as the engines log it.
PHASE_LINES = [
    VLLM_CAPTURED,
    "(EngineCore_DP0 pid=2) Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 10%",
    "INFO 02-03 03:43:49 model_runner.py:625] Capturing the model for CUDA graphs.",
    "INFO 04-12 08:22:04 [model_runner.py:1456] Capturing cudagraphs for decoding.",
    "[2026-12-04 10:01:00 TP0] Capture cuda graph begin. This can take up to several minutes.",
    "[2026-12-04 10:01:00 TP0] Capture decode CUDA graph begin.",
    SGLANG_LOADED,
    VLLM_LOADED,
    "INFO 05-05 23:52:00 [loader.py:458] Loading weights took 22.82 seconds",
    "INFO 07-25 07:23:45 model_runner.py:732] Loading model weights took 2.3463 GB",
    "INFO 08-21 10:00:00 [gpu_worker.py:1] Memory profiling takes 4.2 seconds",
    "INFO 04-14 23:39:44 [gpu_model_runner.py:5876] Profiling CUDA graph memory: PIECEWISE=51",
    "INFO 08-21 10:00:00 [gpu_worker.py:1] Available KV cache memory: 40.1 GiB",
    "[2025-05-09 19:11:16 TP0] KV Cache is allocated. #tokens: 86461, K size: 5.11 GB",
    "[2025-05-09 19:11:16 TP0] Memory pool end. avail mem=4.38 GB",
    "INFO 05-11 04:13:59 [kv_cache_utils.py:639] GPU KV cache size: 81,936 tokens",
    "INFO 02-03 03:43:48 llm_engine.py:316] # GPU blocks: 7754, # CPU blocks: 2048",
    SGLANG_LOADING,
    "INFO 07-29 18:42:00 [gpu_model_runner.py:1843] Starting to load model /m...",
    VLLM_LOADING,
]


@pytest.mark.parametrize("line", PHASE_LINES)
def test_every_phase_line_is_seen_by_doctor_s_substring_filter(line: str) -> None:
    """doctor tests a line for cuda_oom.NOTED's words before any phase pattern: a phase line
    without one would never be read, and its out-of-memory error would go unanswered."""
    from patcher.advice.cuda_oom import NOTED, phase_of

    assert phase_of(line) is not None
    assert any(word in line for word in NOTED)
    assert diagnose_text(f"{line}\n{TORCH_OOM}").code == "cuda-oom-startup"
