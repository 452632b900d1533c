"""doctor on a compiled function called with another number of arguments than it takes
(patcher/advice/flashinfer_release.py), held to tvm-ffi's and torch's own words and to the
engines' pins (snapshots/engines/flashinfer-call-arguments.txt)."""

from __future__ import annotations

import re

from patcher.advice import flashinfer_release as release
from patcher.advice.doctor import diagnose_text
from tests.conftest import SNAPSHOTS

READING = (SNAPSHOTS / "engines" / "flashinfer-call-arguments.txt").read_text()
_SIGNATURE = ", ".join(f"{i}: int" for i in range(18))
# tvm-ffi: "Mismatched number of arguments when calling: `" name signature "`. Expected " ...
_TVM = (
    "TypeError: Mismatched number of arguments when calling: `plan({0}) -> Array<int>`. "
    "Expected {1} but got {2} arguments"
)
_MODULE = (
    "batch_prefill_with_kv_cache_dtype_q_bf16_dtype_kv_bf16_dtype_o_bf16_dtype_idx_i32_head_dim_"
    "qk_128_head_dim_vo_128_posenc_0_use_swa_False_use_logits_cap_False_f16qk_False"
)
# torch: schema.name() "() expected at most " n " argument(s) but received " m " argument(s)..."
_TORCH = (
    "RuntimeError: {0}::plan() expected at most 16 argument(s) but received 17 argument(s). "
    "Declaration: {0}::plan(Tensor _0) -> Tensor _0"
)
_MISSING = "RuntimeError: {0}::plan() is missing value for argument '_15'. Declaration: x"
_FRAME = (
    '(Worker pid=2952) ERROR 09-30 13:16:20 [multiproc_executor.py:671]   File "/home/u/.venv/'
    'lib/python3.12/site-packages/vllm/v1/attention/backends/flashinfer.py", line 1132, in '
    "fast_plan_decode\n"
    "(Worker pid=2952) ERROR 09-30 13:16:20 [multiproc_executor.py:671]     self._plan_info = "
    "self._cached_module.plan(\n"
)
# One line per rule (test_doctor's marker test takes them with its own cases).
FLASHINFER_RELEASE_LINES = [_TVM.format(_SIGNATURE, 18, 15), _TORCH.format(_MODULE)]


def _literals(after: str) -> list[str]:
    """The string literals of the snapshot's lines from the one holding ``after`` on, in the
    order the C++ streams or concatenates them."""
    at = READING.index(after)
    statement = READING[READING.rfind("\n", 0, at) + 1 :].split(";", 1)[0]
    return re.findall(r'"((?:[^"\\]|\\.)*)"', statement)


def test_the_rules_read_the_messages_the_bindings_compose() -> None:
    # tvm-ffi: literal, the name and signature, literal, the count, literal, the count, literal
    tvm = _literals("Mismatched number of arguments")
    composed = f"{tvm[0]}plan(0: int){tvm[3]}18{tvm[4]}15{tvm[5]}"
    assert release.TVM_FFI.search(composed).groups() == ("plan", "18", "15")  # type: ignore[union-attr]
    # torch: the schema name, literal, the count, literal, the count, literal
    most = _literals("() expected at most")
    composed = f"{_MODULE}::plan{most[0]}16{most[1]}17{most[2]}"
    assert release.TORCH_OP.search(composed) is not None
    missing = _literals("() is missing value")
    composed = f"{_MODULE}::plan{missing[0]}_15{missing[1]}"
    assert release.TORCH_OP.search(composed).group(4) == "_15"  # type: ignore[union-attr]


def test_the_module_names_are_flashinfers() -> None:
    read = re.findall(r'f"((?:batch|single)_\w*?dtype_q_)\{', READING)
    assert set(read) == set(release.MODULE_NAMES)


def test_a_vllm_release_gets_the_flashinfer_it_pins() -> None:
    pinned = re.search(r"flashinfer-python==([\w.]+)", READING)
    assert pinned is not None
    log = (
        "INFO 09-30 13:10:00 [api_server.py:1] vLLM API server version 0.11.0\n"
        + _FRAME
        + "(Worker pid=2952) ERROR 09-30 13:16:20 [multiproc_executor.py:671] "
        + FLASHINFER_RELEASE_LINES[0]
        + "\n"
    )
    found = diagnose_text(log)
    assert found.code == "library-release"
    assert "takes 18 arguments, the call passed 15" in found.cause
    assert [f.text for f in found.fixes] == [f"pip install flashinfer-python=={pinned.group(1)}"]


def test_without_a_release_the_pin_is_advice_not_a_command() -> None:
    found = diagnose_text(_FRAME + FLASHINFER_RELEASE_LINES[0] + "\n")
    assert found.code == "library-release"
    assert [f.kind for f in found.fixes] == ["advice"]
    assert "flashinfer-python" in found.fixes[0].text and "pip show vllm" in found.fixes[0].text


def test_torchs_words_for_a_flashinfer_module_name_it() -> None:
    for line in (_TORCH.format(_MODULE), _MISSING.format(_MODULE)):
        found = diagnose_text(line + "\n")
        assert found.code == "library-release"
        assert "FlashInfer" in found.cause


def test_a_vllm_release_is_not_taken_for_sglangs() -> None:
    log = (
        "INFO 09-30 13:10:00 [api_server.py:1] vLLM API server version 0.11.0\n"
        '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/layers/attention/'
        'flashinfer_backend.py", line 1394, in fast_decode_plan\n'
        "    self._plan_info = self._cached_module.plan(\n" + FLASHINFER_RELEASE_LINES[0] + "\n"
    )
    found = diagnose_text(log)
    assert "SGLang" in found.cause
    assert not any(f.kind == "dependency" for f in found.fixes)


def test_another_kernels_count_names_no_flashinfer() -> None:
    line = (
        "TypeError: Mismatched number of arguments when calling: `trtllm_fp8_block_scale_moe"
        "(0: DLTensor*)`. Expected 26 but got 25 arguments"
    )
    found = diagnose_text(line + "\n")
    assert found.code == "library-release"
    assert "FlashInfer" not in found.cause
    assert not any("flashinfer-python" in f.text for f in found.fixes)
