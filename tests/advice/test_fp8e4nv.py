"""doctor on Triton's fp8e4nv refusal (patcher/advice/fp8e4nv.py): the traceback's last engine
frame tells an FP8 KV cache from FP8 weights, and vLLM's Marlin path for FP8 weights below SM89
is held to its fp8.py (snapshots/engines/fp8-marlin-vllm.txt)."""

from __future__ import annotations

import re

from patcher.advice import fp8e4nv
from patcher.advice.doctor import diagnose_text
from tests.conftest import SNAPSHOTS

READING = (SNAPSHOTS / "engines" / "fp8-marlin-vllm.txt").read_text()
_ERROR = (
    'ValueError("type fp8e4nv not supported in this architecture. The supported fp8 dtypes '
    "are ('fp8e4b15', 'fp8e5')\")"
)
_SITE = "/usr/local/lib/python3.10/site-packages"
_WEIGHTS = (
    f'  File "{_SITE}/vllm/model_executor/layers/quantization/utils/fp8_utils.py", line 295, '
    "in per_token_group_quant_fp8\n"
    "    _per_token_group_quant_fp8[(M, )](\n"
    f'  File "{_SITE}/triton/runtime/jit.py", line 330, in <lambda>\n'
    "    return lambda *args, **kwargs: self.run(grid=grid, warmup=False, *args, **kwargs)\n"
)
_ATTENTION = (
    f'  File "{_SITE}/vllm/attention/ops/triton_decode_attention.py", line 611, in '
    "decode_attention_fwd\n"
    "    decode_attention_fwd_normal(\n"
)


def _banner(version: str) -> str:
    return f"INFO 05-02 10:00:00 api_server.py:1] vLLM API server version {version}\n"


def test_the_first_release_with_marlin_for_every_fp8_weight_is_the_one_read() -> None:
    sections = re.split(r"^# vllm ", READING, flags=re.M)[1:]
    blocked = {s.split()[0] for s in sections if "Marlin doesn't support block-wise fp8" in s}
    moe = {s.split()[0] for s in sections if s.count("self.use_marlin = (not") == 2}
    first = min(moe - blocked, key=fp8e4nv.version_key)
    assert first == fp8e4nv.FP8_MARLIN_FROM
    assert all(fp8e4nv.version_key(r) < fp8e4nv.version_key(first) for r in blocked)


def test_a_weight_kernel_is_never_told_to_strip_the_kv_cache_directive() -> None:
    old = diagnose_text(_banner("0.8.5") + _WEIGHTS + _ERROR + "\n")
    assert old.code == "fp8e4nv"
    assert "weight kernel" in old.cause
    assert not any("strip-fp8" in f.text or "kv-cache-dtype" in f.text for f in old.fixes)
    assert old.fixes[0].text == f"pip install 'vllm>={fp8e4nv.FP8_MARLIN_FROM}'"
    new = diagnose_text(_banner("0.11.0") + _WEIGHTS + _ERROR + "\n")
    assert not any(f.kind == "dependency" for f in new.fixes)  # Marlin is already there
    unknown = diagnose_text(_WEIGHTS + _ERROR + "\n")
    assert unknown.fixes[0].kind == "advice" and "before 0.9.0.1" in unknown.fixes[0].text


def test_an_attention_kernel_is_the_kv_cache_and_no_line_tells_neither() -> None:
    kv = diagnose_text(_ATTENTION + _ERROR + "\n", checkpoint="CKPT")
    assert "attention kernel" in kv.cause
    assert any("strip-fp8-kv-cache" in f.text for f in kv.fixes)
    assert not any("weights" in f.text for f in kv.fixes)
    bare = diagnose_text(_ERROR + "\n")
    assert "cannot tell" in bare.cause


def test_sglangs_weight_kernel_gets_no_vllm_release() -> None:
    found = diagnose_text(
        f'  File "{_SITE}/sglang/srt/layers/quantization/fp8_kernel.py", line 400, in '
        "per_token_group_quant_fp8\n    _per_token_group_quant_fp8[grid](\n" + _ERROR + "\n"
    )
    assert "weight kernel" in found.cause
    assert not any("vllm" in f.text for f in found.fixes)


_MOE = (
    f'  File "{_SITE}/vllm/model_executor/layers/fused_moe/fused_moe.py", line 1120, in '
    "invoke_fused_moe_kernel\n"
    "    fused_moe_kernel[grid](\n"
)


def test_a_fused_moe_kernel_gets_the_marlin_moe_backend_where_the_release_has_it() -> None:
    # 0.34.0's oracle: Triton's experts take FP8 only on SM89+, Marlin's from SM75
    assert "return cls.has_device_capability(89)" in READING
    assert "kFp8Static128BlockSym," in READING.split("MarlinExperts")[-1]
    found = diagnose_text(_banner("0.30.0") + _MOE + _ERROR + "\n")
    assert found.fixes[0].text == "--moe-backend marlin"
    assert not any("strip-fp8" in f.text for f in found.fixes)
    before = diagnose_text(_banner("0.10.1") + _MOE + _ERROR + "\n")  # no --moe-backend yet
    assert not any("moe-backend" in f.text for f in before.fixes)
    dense = diagnose_text(_banner("0.30.0") + _WEIGHTS + _ERROR + "\n")
    assert not any("moe-backend" in f.text for f in dense.fixes)


def test_neither_frame_gives_each_weights_way_under_its_condition() -> None:
    found = diagnose_text(_ERROR + "\n")
    weights = [f for f in found.fixes if "weights are FP8" in f.text]
    assert weights and all(f.kind == "advice" for f in weights)
    assert any("--moe-backend marlin" in f.text and "MoE model" in f.text for f in weights)
    assert found.fixes[0].kind == "transform"  # the KV cache's cause first, as before


def test_without_the_release_the_moe_backend_is_advice_naming_the_release_that_has_it() -> None:
    found = diagnose_text(_MOE + _ERROR + "\n")
    assert found.fixes[0].kind == "advice"
    assert found.fixes[0].text == "with vLLM 0.17.0 on: --moe-backend marlin"
