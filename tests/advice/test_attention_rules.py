"""A vLLM attention backend's own refusal, raised in its file ("Sinks are only supported in
FlashAttention 3", flash_attn.py): the release's other backends (its backend enum, read per
release), by the way that release takes one (patcher/advice/attention_rules.another_backend)."""

from __future__ import annotations

from pathlib import Path

import pytest

from patcher.advice.attention_rules import another_backend
from patcher.advice.catalogue import feature_releases
from patcher.advice.doctor import diagnose_text

_SINKS = "(EngineCore_0 pid=114) ERROR 08-10 12:15:20 [core.py:632] AssertionError: Sinks are only supported in FlashAttention 3\n"  # noqa: E501


@pytest.mark.parametrize(
    ("version", "fix"),
    [
        # 0.10's V1 backends carry the suffix, and only the environment variable takes them
        ("0.10.1", "VLLM_ATTENTION_BACKEND=TRITON_ATTN_VLLM_V1"),
        ("0.12.0", "VLLM_ATTENTION_BACKEND=TRITON_ATTN"),
        ("0.20.0", "--attention-backend TRITON_ATTN"),
    ],
)
def test_a_backends_own_refusal_names_another_backend_of_the_logs_release(
    version: str, fix: str
) -> None:
    banner = f"INFO 08-10 12:14:00 [api_server.py:1805] vLLM API server version {version}\n"
    found = diagnose_text(banner + _SINKS)
    assert found.code == "attention-backend"
    forced = [f.text for f in found.fixes if f.kind in ("flag", "env")]
    assert forced == [fix]
    assert "FLASH_ATTN" not in forced[0]


def test_without_a_release_each_way_names_the_releases_it_holds_for() -> None:
    found = diagnose_text(_SINKS)
    notes = {f.text: f.note for f in found.fixes if f.kind in ("flag", "env")}
    assert "VLLM_ATTENTION_BACKEND=TRITON_ATTN_VLLM_V1" in notes
    assert (notes["VLLM_ATTENTION_BACKEND=TRITON_ATTN_VLLM_V1"] or "").startswith("vLLM 0.10.1:")


@pytest.mark.parametrize(
    "file",
    [
        "vllm/v1/attention/backends/mla/common.py",  # shared by every MLA backend
        "vllm/v1/attention/backends/pallas.py",  # a TPU's
        "vllm/v1/attention/backends/cpu_attn.py",  # the CPU's
    ],
)
def test_a_file_that_is_no_cuda_backend_of_its_own_names_none(file: str) -> None:
    assert another_backend(file, ("0.12.0", "0.20.0")) == []


def test_an_mla_backend_is_answered_with_another_mla_backend() -> None:
    fixes = another_backend("vllm/v1/attention/backends/mla/cutlass_mla.py", ("0.20.0",))
    assert [f.text for f in fixes] == ["--attention-backend TRITON_MLA"]


@pytest.mark.parametrize(
    ("version", "way"),
    [
        ("0.12.0", "VLLM_ATTENTION_BACKEND="),
        ("0.14.0", "--attention-backend "),
        ("0.20.0", "--attention-backend "),
    ],
)
def test_a_backend_refused_for_a_missing_feature_names_the_releases_backend_for_it(
    version: str, way: str
) -> None:
    # vLLM 0.12.0's platforms/cuda.py forces CUTLASS_MLA on Blackwell for every MLA model
    # (envs.VLLM_ATTENTION_BACKEND = "CUTLASS_MLA"), sparse ones too: nothing of the user's to
    # drop. The release's backends made for sparse attention are read from its backend names.
    banner = f"INFO 12-07 16:59:50 [api_server.py:1351] vLLM API server version {version}\n"
    found = diagnose_text(
        banner + "(EngineCore_DP0 pid=1) ERROR 12-07 17:00:35 [core.py:867] ValueError: Selected "
        "backend AttentionBackendEnum.CUTLASS_MLA is not valid for this configuration. Reason: "
        "['sparse not supported']\n"
    )
    assert found.code == "forced-attention-backend"
    first = found.fixes[0].text
    assert first.startswith(way) and "SPARSE" in first
    named = first.removeprefix(way)
    assert version in feature_releases("vllm", "attention_backend", named)
    assert not named.startswith("ROCM")
    # the way to leave the choice to vLLM is the release's own: its flag from 0.13, the
    # variable to 0.14 (0.12.0 has no --attention-backend to drop, 0.20.0 no variable)
    texts = [f.text for f in found.fixes]
    unset = any(t.startswith("unset VLLM_ATTENTION_BACKEND") for t in texts)
    assert unset == (version != "0.20.0")
    assert any(t.startswith("drop --attention-backend") for t in texts) == (version != "0.12.0")


def test_a_refused_dtype_names_no_backend_by_its_word() -> None:
    found = diagnose_text(
        "INFO 12-07 [api_server.py:1] vLLM API server version 0.14.0\n"
        "ValueError: Selected backend AttentionBackendEnum.FLASHMLA is not valid for this "
        "configuration. Reason: ['kv_cache_dtype not supported']\n"
    )
    assert not any("KV_CACHE_DTYPE" in f.text for f in found.fixes)


# A line of the page rule's for tests/advice/test_doctor.py's every-rule check.
PAGE_LINES = [
    "RuntimeError: Expect (32 <= headDim <= 2048) && (numTokensPerPage <= 128), got "
    "headDimPerCtaV=128, headDimQk=128, headDimV=128, numTokensPerPage=544",
]


def _page_wordings() -> list[str]:
    """The TRT-LLM-gen kernels' page check in its wordings
    (snapshots/engines/trtllm-gen-page.txt)."""
    text = (
        Path(__file__).resolve().parents[2] / "snapshots/engines/trtllm-gen-page.txt"
    ).read_text()
    return [line for line in text.splitlines() if line.startswith("Expect (")]


@pytest.mark.parametrize("wording", _page_wordings())
def test_a_kv_page_the_trtllm_gen_kernels_refuse_is_another_backend_on_vllm(wording: str) -> None:
    # vLLM 0.11's FlashInfer backend on a B200 with a hybrid model's 544-token attention block
    found = diagnose_text(
        "INFO 10-01 [api_server.py:1] vLLM API server version 0.11.0\n"
        f"(EngineCore_DP0 pid=1) ERROR 10-01 10:00:05 [core.py:718] RuntimeError: {wording}\n"
    )
    assert found.code == "trtllm-gen-page-size"
    assert "at most 128 tokens" in found.cause
    texts = [f.text for f in found.fixes]
    assert texts[0].startswith("VLLM_ATTENTION_BACKEND=") and "FLASHINFER" not in texts[0]
    assert "VLLM_USE_TRTLLM_ATTENTION=0" in texts


def test_the_same_check_from_tensorrt_llm_is_its_tokens_per_block() -> None:
    wording = _page_wordings()[1]
    found = diagnose_text(f"RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: {wording}\n")
    assert [f.text for f in found.fixes] == [
        "TensorRT-LLM: kv_cache_config: {tokens_per_block: 128} or less"
    ]
    assert "this one has 256" in found.cause


@pytest.mark.parametrize(("version", "has_flag"), [("0.7.3", False), ("0.13.0", True)])
def test_a_forced_backend_is_undone_the_way_the_logs_release_takes_it(
    version: str, has_flag: bool
) -> None:
    # vLLM before 0.13 has no --attention-backend: a backend is forced by the variable alone
    found = diagnose_text(
        f"INFO 03-06 10:00:01 api_server.py:912] vLLM API server version {version}\n"
        '  File "/venv/lib/python3.12/site-packages/vllm/platforms/cuda.py", line 171, in '
        "get_attn_backend_cls\n"
        "ValueError: Invalid attention backend for cuda, with use_v1: False use_mla: False\n"
    )
    texts = [f.text for f in found.fixes]
    assert "unset VLLM_ATTENTION_BACKEND if it was set" in texts
    assert any("--attention-backend" in t for t in texts) == has_flag
