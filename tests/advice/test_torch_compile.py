"""doctor on torch.compile failing as the engine starts: eager mode, which vLLM's VllmConfig
leaves uncompiled (read per release, snapshots/engines/torch-compile-eager.txt), and SGLang's
own switch, never a checkpoint edit."""

from __future__ import annotations

import re

from patcher.advice.doctor import diagnose_text
from patcher.advice.torch_compile import EAGER_SINCE, RECORDING
from tests.conftest import SNAPSHOTS

INDUCTOR = (
    '(EngineCore_DP0 pid=73386)   File "/venv/lib/python3.12/site-packages/torch/_inductor/'
    'scheduler.py", line 5440, in _codegen\n'
    '(EngineCore_DP0 pid=73386)     raise AssertionError(f"{type(self)=}")\n'
    "(EngineCore_DP0 pid=73386) torch._inductor.exc.InductorError: AssertionError: "
    "type(self)=<class 'torch._inductor.scheduler.Scheduler'>\n"
)
DYNAMO = (
    "(EngineCore pid=11) ERROR 04-03 06:14:31 [core.py:1108] torch._dynamo.exc.TorchRuntimeError: "
    "Dynamo failed to run FX node with fake tensors: call_method split(*(FakeTensor(..., "
    "device='cuda:0', size=(8, 4096)),), **{}): got RuntimeError('split_with_sizes expects "
    "split_sizes to sum exactly to 4096')\n"
)


def test_the_recording_shows_each_release_leaving_the_model_uncompiled_under_enforce_eager() -> (
    None
):
    text = (SNAPSHOTS / RECORDING.removeprefix("snapshots/")).read_text()
    blocks = re.findall(r"^(\d[\w.]*) (vllm/\S+):\d+\n((?:    .*\n?)+)", text, re.M)
    releases = [b[0] for b in blocks]
    assert releases[0] == EAGER_SINCE and releases[-1] == "0.34.0"
    for release, _file, body in blocks:
        uncompiled = re.search(r"NO_COMPILATION|CompilationMode\.NONE|OptimizationLevel\.O0", body)
        assert uncompiled or "enforce_eager" in body, release
    assert all("enforce_eager" in b[2] or "optimization_level" in b[2] for b in blocks)


def test_an_inductor_error_in_a_vllm_log_gets_eager_mode_first() -> None:
    found = diagnose_text(INDUCTOR)
    assert found.code == "torch-compile"
    assert [f.text for f in found.fixes][:1] == ["--enforce-eager"]
    assert "Inductor" in found.cause
    assert not any(f.kind == "transform" for f in found.fixes)


def test_a_dynamo_error_is_the_same_family() -> None:
    found = diagnose_text(DYNAMO)
    assert found.code == "torch-compile" and "Dynamo" in found.cause
    assert found.fixes[0].text == "--enforce-eager"


def test_under_sglang_the_answer_is_its_own_switch() -> None:
    log = (
        "[2025-07-01 10:00:00] server_args=ServerArgs(model_path='/m', enable_torch_compile=True)\n"
        "[2025-07-01 10:00:09 TP0] torch._inductor.exc.InductorError: LoweringException: "
        "AssertionError: target: aten.index_put_.default\n"
    )
    found = diagnose_text(log)
    assert found.code == "torch-compile"
    assert [f.text for f in found.fixes] == ["leave out --enable-torch-compile"]


def _cached_frame(kind_and_message: str, root: str = "/root/.cache/vllm") -> str:
    return (
        "ERROR 03-27 16:00:23 [core.py:340] EngineCore hit an exception: Traceback (most recent "
        "call last):\n"
        f'ERROR 03-27 16:00:23 [core.py:340]   File "{root}/torch_compile_cache/'
        '3b8e2a7c1d/rank_0_0/inductor_cache/k5/ck5qz3nq.py", line 412, in call\n'
        "ERROR 03-27 16:00:23 [core.py:340]     arg0_1, arg1_1, arg2_1 = args\n"
        f"ERROR 03-27 16:00:23 [core.py:340] {kind_and_message}\n"
    )


def test_a_shape_error_in_vllm_s_compile_cache_is_the_cache() -> None:
    # the code that raised is the cached artifact, not the engine's: the directory it was
    # loaded from goes, or the cache is skipped (VLLM_DISABLE_COMPILE_CACHE, in the envs read)
    found = diagnose_text(
        _cached_frame("ValueError: not enough values to unpack (expected 13, got 12)")
    )
    assert found.code == "compile-cache"
    texts = [f.text for f in found.fixes]
    assert "rm -rf /root/.cache/vllm/torch_compile_cache/3b8e2a7c1d" in texts
    assert "VLLM_DISABLE_COMPILE_CACHE=1" in texts


def test_the_cache_directory_is_quoted_to_run_as_pasted() -> None:
    # $VLLM_CACHE_ROOT may hold a space: the printed rm removes that one directory
    found = diagnose_text(
        _cached_frame("ValueError: not enough values to unpack", root="/data/my models/vllm")
    )
    assert "rm -rf '/data/my models/vllm/torch_compile_cache/3b8e2a7c1d'" in [
        f.text for f in found.fixes
    ]


def test_a_gpu_error_in_compiled_code_is_not_the_cache() -> None:
    # a CUDA error or an out-of-memory raised in compiled code is the GPU's
    found = diagnose_text(
        _cached_frame("RuntimeError: CUDA error: an illegal memory access was encountered")
    )
    assert found.code != "compile-cache"
