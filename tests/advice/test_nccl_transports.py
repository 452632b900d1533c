"""NCCL's last warning, as torch quotes it after its own error, and a peer-access failure of the
P2P transport (patcher/advice/nccl_transports.py; snapshots/engines/nccl-last-error.txt)."""

from __future__ import annotations

import re

import pytest

from patcher.advice.doctor import diagnose_text
from tests.conftest import SNAPSHOTS

READING = (SNAPSHOTS / "engines" / "nccl-last-error.txt").read_text()
PEER = "peer access is not supported between these two devices"  # cudaGetErrorString(217)
# torch's error, as c10d words it, before NCCL's last warning
TORCH = (
    "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:3353, unhandled cuda error (run with NCCL_DEBUG=INFO for details), "
    "NCCL version 2.26.2\n"
    "ncclUnhandledCudaError: Call to CUDA function failed.\n"
)


def _warnings() -> list[str]:
    """NCCL's warnings for a peer-access failure, printed from the formats its source has."""
    cudacheck = "Cuda failure '%s'"  # checks.h
    cucheck = "Cuda failure %d '%s'"  # cudawrap.h
    peer = "failed to peer with device %d(=%lx): %d %s"  # p2p.cc
    # each is a format NCCL's source warns with (the test fails where the reading lacks it)
    assert {cudacheck, cucheck, peer} <= set(re.findall(r'WARN\("([^"]*)"', READING))
    assert '"\\nLast error:\\n"' in READING  # torch appends the last warning after this
    return [cudacheck % PEER, cucheck % (217, PEER), peer % (1, 0x1B000, 217, PEER)]


# NCCL_DEBUG=WARN's lines of them, from a file other than p2p.cc (the line filter's cases)
NCCL_LINES = [f"h:12:40 [1] misc/cudawrap.cc:188 NCCL WARN {w}" for w in _warnings()]


@pytest.mark.parametrize("warning", _warnings())
@pytest.mark.parametrize("prefix", ["", "(Worker pid=4225) ", "(RayWorkerWrapper pid=77) "])
def test_torchs_nccl_error_is_read_by_the_last_warning_it_quotes(warning: str, prefix: str) -> None:
    log = "".join(prefix + line + "\n" for line in [*TORCH.splitlines(), "Last error:", warning])
    found = diagnose_text(log)
    assert found.code == "nccl-transport"
    assert [f.text for f in found.fixes] == ["NCCL_P2P_DISABLE=1"]
    assert found.error == warning  # the root quoted is NCCL's words, not torch's wrapper
    assert "not in the log" not in found.cause


def test_the_last_warning_on_the_same_line_and_nccls_own_warning_line() -> None:
    # a log joined onto one line, and NCCL_DEBUG=WARN's line from a file other than p2p.cc
    joined = diagnose_text(
        TORCH.replace("\n", " ") + "Last error: Cuda failure 217 '" + PEER + "'\n"
    )
    assert [f.text for f in joined.fixes] == ["NCCL_P2P_DISABLE=1"]
    for own in NCCL_LINES:
        assert [f.text for f in diagnose_text(own + "\n").fixes] == ["NCCL_P2P_DISABLE=1"]


def test_a_last_warning_another_rule_knows_is_answered_by_it() -> None:
    # NCCL's segment in /dev/shm (the shared-memory answer reads NCCL's own words)
    log = (
        TORCH.replace("unhandled cuda error", "unhandled system error")
        + "Last error:\nError while creating shared memory segment /dev/shm/nccl-vzIpS6 "
        "(size 9637888)\n"
    )
    found = diagnose_text(log)
    assert found.code != "nccl-unhandled"
    assert any("shm" in f.text or "--ipc=host" in f.text for f in found.fixes)


def test_a_last_warning_nothing_knows_is_quoted_and_the_debug_run_still_asked_for() -> None:
    found = diagnose_text(TORCH + "Last error:\nsome call NCCL made failed in a new way\n")
    assert found.code == "nccl-unhandled"
    assert "some call NCCL made failed in a new way" in found.cause
    assert "not in the log" not in found.cause
    assert "NCCL_DEBUG=INFO" in found.fixes[0].text
    # torch's own words where NCCL kept none: nothing quoted
    unknown = diagnose_text(TORCH + "Last error: Unknown NCCL Error\n")
    assert "not in the log" in unknown.cause


def test_the_custom_all_reduces_and_torchs_own_peer_failures_stay_theirs() -> None:
    # the engines' custom all-reduce kernel words the same CUDA error its own way
    kernel = diagnose_text(
        "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:307 '" + PEER + "'\n"
    )
    assert kernel.code == "custom-all-reduce"
    torch_op = diagnose_text("RuntimeError: CUDA error: " + PEER + "\n")
    assert torch_op.code != "nccl-transport"


def test_an_nccl_error_the_engine_warned_of_and_went_on_from_leaves_the_lines_after_it() -> None:
    # the last warning is read only for the error that stopped the engine: a warning's lines
    # after it are the log's, and the root among them is still found
    log = (
        "WARNING 01-20 13:01:00 [parallel_state.py:1] NCCL error: unhandled cuda error, "
        "falling back\n"
        "ValueError: The model's max seq len (32768) is larger than the maximum number of "
        "tokens that can be stored in KV cache (2400).\n"
    )
    found = diagnose_text(log)
    assert found.code != "nccl-unhandled" and "max seq len" in (found.error or "")
