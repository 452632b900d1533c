"""doctor on torch's dtype refusals: answered with --dtype auto only where the log shows the
command forced the model's dtype."""

from __future__ import annotations

import pytest

from patcher.advice.doctor import diagnose_text

DTYPE_LINES = [
    "RuntimeError: expected scalar type Half but found BFloat16",
    "RuntimeError: expected mat1 and mat2 to have the same dtype, but got: c10::Half != "
    "c10::BFloat16",
]


@pytest.mark.parametrize(
    "forced",
    [
        # a report quoting the command, vLLM 0.8's args, vLLM 0.10's non-default args,
        # SGLang's args
        "python -m vllm.entrypoints.openai.api_server --model m --tensor-parallel-size 8 \\\n"
        "    --dtype half",
        "INFO 04-14 10:00:00 [api_server.py:1035] args: Namespace(model='m', dtype='half', "
        "kv_cache_dtype='auto')",
        "(APIServer pid=1) INFO 10-13 17:38:38 [utils.py:233] non-default args: {'model': 'm', "
        "'dtype': 'float16'}",
        "[2025-01-01 00:00:00] server_args=ServerArgs(model_path='m', dtype='float16', "
        "kv_cache_dtype='auto')",
    ],
)
@pytest.mark.parametrize("refusal", DTYPE_LINES)
def test_a_dtype_refusal_after_a_forced_dtype_gives_the_checkpoint_s_own(
    forced: str, refusal: str
) -> None:
    found = diagnose_text(f"{forced}\n[core.py:393] {refusal}\n")
    assert found.code == "dtype-forced"
    assert found.fixes[0].text == "--dtype auto"


@pytest.mark.parametrize(
    "unforced",
    [
        # kv_cache_dtype and an explicit auto are not a forced model dtype
        "INFO 04-14 10:00:00 [api_server.py:1035] args: Namespace(model='m', dtype='auto', "
        "kv_cache_dtype='fp8')",
        # vLLM's engine line names the dtype it resolved; its cast warning comes with its own
        # fallback on a GPU without bfloat16 too
        "(EngineCore_DP0 pid=1) INFO 08-27 10:00:00 [core.py:74] Initializing a V1 LLM engine "
        "(v0.10.1) with config: model='m', dtype=torch.bfloat16, max_seq_len=4096",
        "WARNING 10-07 13:51:42 [model.py:1679] Your device 'Radeon Instinct MI50 32GB' doesn't "
        "support torch.bfloat16. Falling back to torch.float16 for compatibility.\n"
        "WARNING 10-07 13:51:42 [model.py:1730] Casting torch.bfloat16 to torch.float16.",
    ],
)
def test_without_a_forced_dtype_the_refusal_is_not_answered_with_one(unforced: str) -> None:
    found = diagnose_text(f"{unforced}\n{DTYPE_LINES[0]}\n")
    assert found.code != "dtype-forced"
    assert all("--dtype" not in f.text for f in found.fixes)


def test_the_engine_core_s_whole_traceback_is_a_wrapper_not_the_error() -> None:
    # vLLM 0.7-0.8 log "EngineCore hit an exception: Traceback ..." and then the frames: the
    # error is the traceback's last line, not the engine's own message around it
    found = diagnose_text(
        "ERROR 04-14 10:01:00 [core.py:386] EngineCore hit an exception: Traceback (most "
        "recent call last):\n"
        'ERROR 04-14 10:01:00 [core.py:386]   File "/x/vllm/v1/engine/core.py", line 377, in f\n'
        "ERROR 04-14 10:01:00 [core.py:386] RuntimeError: an error no engine raises\n"
    )
    assert found.code is None
    assert found.error == "RuntimeError: an error no engine raises"
