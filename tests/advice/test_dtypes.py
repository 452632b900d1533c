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
        # a report quoting the command, vLLM 0.8's args, vLLM's cast warning, SGLang's args
        "python -m vllm.entrypoints.openai.api_server --model m --tensor-parallel-size 8 \\\n"
        "    --dtype half",
        "INFO 04-14 10:00:00 [api_server.py:1035] args: Namespace(model='m', dtype='half', "
        "kv_cache_dtype='auto')",
        "WARNING 04-14 10:00:05 [config.py:2614] Casting torch.bfloat16 to torch.float16.",
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


def test_without_a_forced_dtype_the_refusal_is_not_answered_with_one() -> None:
    # kv_cache_dtype and an explicit auto are not a forced model dtype
    found = diagnose_text(
        "INFO 04-14 10:00:00 [api_server.py:1035] args: Namespace(model='m', dtype='auto', "
        f"kv_cache_dtype='fp8')\n{DTYPE_LINES[0]}\n"
    )
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
