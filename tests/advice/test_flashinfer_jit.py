"""doctor on FlashInfer's JIT finding no architecture to compile for (flashinfer/jit/core.py):
the toolkit for an SM 12.x GPU, the architecture list, the sampler switch under vLLM only."""

from __future__ import annotations

from patcher.advice.doctor import diagnose_text

REFUSAL = "RuntimeError: FlashInfer requires GPUs with sm75 or higher\n"
RAISE = '    raise RuntimeError("FlashInfer requires GPUs with sm75 or higher")\n'


def test_on_an_sm120_gpu_the_toolkit_and_the_architecture_are_named() -> None:
    found = diagnose_text("GPU 0: NVIDIA GeForce RTX 5090\n" + RAISE + REFUSAL)
    assert found.code == "flashinfer-arch"
    assert found.error == REFUSAL.strip()  # the message, not the raise echoed above it
    texts = [f.text for f in found.fixes]
    assert found.fixes[0].kind == "advice"  # the toolkit's folder is the user's to name
    assert texts[0].startswith("CUDA_HOME set to a CUDA toolkit of 12.8")
    assert "FLASHINFER_CUDA_ARCH_LIST=12.0a" in texts
    assert "VLLM_USE_FLASHINFER_SAMPLER=0" in texts


def test_an_older_gpu_is_no_config_fix_and_a_hopper_one_no_toolkit() -> None:
    volta = diagnose_text("Tesla V100-SXM2-32GB compute capability 7.0\n" + REFUSAL)
    assert "older than FlashInfer compiles for" in volta.cause
    assert all("CUDA_HOME" not in f.text for f in volta.fixes)
    hopper = diagnose_text("GPU 0: NVIDIA H100 80GB HBM3\n" + REFUSAL)
    assert "torch saw no GPU" in hopper.cause
    assert [f.text for f in hopper.fixes][0] == "FLASHINFER_CUDA_ARCH_LIST=9.0a"
    assert all("CUDA_HOME" not in f.text for f in hopper.fixes)


def test_under_sglang_no_vllm_switch_and_any_process_prefix_is_read() -> None:
    sglang = diagnose_text(
        "[2025-01-01 00:00:00] server_args=ServerArgs(model_path='m')\n" + REFUSAL
    )
    assert sglang.code == "flashinfer-arch"
    assert all("VLLM_" not in f.text for f in sglang.fixes)
    prefixed = diagnose_text("(StageEngineCoreProc pid=8146) " + REFUSAL)
    assert prefixed.code == "flashinfer-arch"


def test_the_rule_holds_to_flashinfer_s_own_words_as_recorded() -> None:
    from pathlib import Path

    from patcher.advice.flashinfer_jit import REFUSED

    recorded = (
        Path(__file__).parents[2] / "snapshots" / "engines" / "flashinfer-jit-arch.txt"
    ).read_text()
    raises = [line for line in recorded.splitlines() if "sm75 or higher" in line]
    assert len(raises) == 3 and all(
        "FlashInfer requires GPUs with sm75 or higher" in r for r in raises
    )
    assert REFUSED.search("RuntimeError: FlashInfer requires GPUs with sm75 or higher")
    # the CUDA each SM 12.x needs, which the answer states: 12.9 in 0.6, 12.8 for SM 120 in 0.7
    assert 'raise RuntimeError("SM 12.x requires CUDA >= 12.9")' in recorded
    assert 'raise RuntimeError("SM 120 requires CUDA >= 12.8")' in recorded
    assert recorded.count('os.environ.get("CUDA_HOME")') == 3  # the nvcc it compiles with


def _ninja(uri: str) -> str:
    jit = "/root/.cache/flashinfer/90/cached_ops"
    return (
        f"(EngineCore_DP0 pid=7) ERROR 10-27 20:12:32 [core.py:708] subprocess.CalledProcessError: "
        f"Command '['ninja', '-v', '-C', '{jit}', '-f', '{jit}/{uri}/build.ninja']' returned "
        "non-zero exit status 1.\n"
    )


_URI = (
    "batch_prefill_with_kv_cache_dtype_q_bf16_dtype_kv_{kv}_dtype_o_bf16_dtype_idx_i32_head_dim_"
    "qk_128_head_dim_vo_128_posenc_0_use_swa_False_use_logits_cap_False_f16qk_False_sm90"
)


def test_a_kernel_for_an_fp8_kv_cache_that_did_not_compile_is_answered_with_the_kv_dtype() -> None:
    # the kernel's folder names what it was built for (jit/attention/modules.py's URIs)
    banner = "INFO 10-27 20:11:24 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config\n"
    found = diagnose_text(banner + _ninja(_URI.format(kv="e4m3")))
    assert found.code == "flashinfer-build"
    assert "FP8 (e4m3) KV cache" in found.cause and "Hopper" in found.cause
    assert found.fixes[0].text == "--kv-cache-dtype auto"
    # 0.11.0 takes a forced backend from VLLM_ATTENTION_BACKEND only (read)
    texts = [f.text for f in found.fixes]
    assert "unset VLLM_ATTENTION_BACKEND if it was set" in texts
    assert all("--attention-backend" not in t for t in texts)


def test_another_kernel_that_did_not_compile_is_the_toolkits() -> None:
    found = diagnose_text(_ninja(_URI.format(kv="bf16")))
    assert found.code == "flashinfer-build"
    assert "CUDA toolkit" in found.cause
    assert all(f.text != "--kv-cache-dtype auto" for f in found.fixes)
    older = diagnose_text(f"RuntimeError: Error building extension '{_URI.format(kv='e5m2')}'\n")
    assert older.code == "flashinfer-build" and "FP8 (e5m2)" in older.cause
