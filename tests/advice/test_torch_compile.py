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
