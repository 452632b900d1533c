"""FlashInfer's trtllm-gen attention kernels refusing a GPU they are not built for
(patcher/advice/trtllm_gen.py), held to the check read from FlashInfer's releases
(snapshots/engines/flashinfer-trtllm-gen-arch.txt)."""

from __future__ import annotations

import re
from pathlib import Path

from patcher.advice import catalogue
from patcher.advice.doctor import diagnose_text
from patcher.advice.trtllm_gen import FMHA_ARCH

SNAPSHOT = Path(__file__).parents[2] / "snapshots" / "engines" / "flashinfer-trtllm-gen-arch.txt"
SITE = "/usr/local/lib/python3.12/dist-packages"
# the refusal through torch's binding and through FlashInfer's TVM-FFI binding (0.6 on)
TRTLLM_GEN_LINES = [
    "RuntimeError: Error in function 'TllmGenFmhaRunner' at /workspace/include/flashinfer/"
    "trtllm/fmha/fmhaRunner.cuh:30: Unsupported architecture",
    "tvm.error.InternalError: Error in function 'TllmGenFmhaRunner' at /env/lib/python3.12/"
    "site-packages/flashinfer/data/include/flashinfer/trtllm/fmha/fmhaRunner.cuh:37: "
    "Unsupported architecture",
]


def _log(frame: str, line: str) -> str:
    return (
        "[2026-05-07 10:00:30 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        f'  File "{SITE}/{frame}", line 612, in forward_extend\n'
        "    return flashinfer.prefill.trtllm_ragged_attention_deepseek(\n"
        f"{line}\n"
    )


def test_every_release_read_checks_the_same_two_architectures() -> None:
    text = SNAPSHOT.read_text()
    sections = re.findall(r"## flashinfer-python (\S+): (\S+?):(\d+)\n((?:.+\n){3})", text)
    assert len(sections) >= 4
    for version, path, line, body in sections:
        assert "mSM == kSM_100 || mSM == kSM_103" in body, version
        message = f"Error in function 'TllmGenFmhaRunner' at /site/{path}:{line}: Unsupported "
        assert FMHA_ARCH.search(message + "architecture"), version


def test_sglang_s_trtllm_backend_is_another_attention_backend() -> None:
    # sglang#24633: SGLang 0.5.10's trtllm_mla prefill on an RTX PRO 6000 (SM120)
    found = diagnose_text(
        _log("sglang/srt/layers/attention/trtllm_mla_backend.py", TRTLLM_GEN_LINES[0])
    )
    assert found.code == "trtllm-gen-arch"
    assert found.fixes[0].text == "--attention-backend flashinfer"

    # a value of the flag in every SGLang release read that has a trtllm backend
    def having(value: str) -> set[str]:
        return set(catalogue.feature_releases("sglang", "choices:--attention-backend", value))

    trtllm = having("trtllm_mha") | having("trtllm_mla")
    assert trtllm and trtllm <= having("flashinfer")
    assert "trtllm_mla" in (found.fixes[0].note or "")
    assert "10.0 or 10.3" in found.fixes[-1].text


def test_a_path_with_no_other_backend_named_is_no_config_fix() -> None:
    # the sparse-attention backend's trtllm path (sglang#40558's dsa_backend): no flag is
    # known to take it elsewhere on this GPU
    found = diagnose_text(_log("sglang/srt/layers/attention/dsa_backend.py", TRTLLM_GEN_LINES[1]))
    assert found.code == "trtllm-gen-arch"
    assert [f.kind for f in found.fixes] == ["advice"]
    assert found.fixes[0].text.startswith("no config fix")
