"""doctor on torchvision built for another torch (patcher/advice/torchvision_ops.py), held to
torchvision's own wheels (snapshots/engines/torchvision-torch.txt)."""

from __future__ import annotations

import re

from patcher.advice.doctor import diagnose_text
from patcher.advice.torchvision_ops import READ_TORCH_MINORS, torchvision_for
from tests.conftest import SNAPSHOTS

READING = (SNAPSHOTS / "engines" / "torchvision-torch.txt").read_text()
# One line per rule (test_doctor's marker test takes them with its own cases).
TORCHVISION_LINES = ["RuntimeError: operator torchvision::nms does not exist"]


def test_the_pairing_is_each_torchvision_wheel_s_own_requirement() -> None:
    pairs = re.findall(r"^0\.(\d+)\.\d+\ttorch \(==2\.(\d+)\.\d+\)$", READING, re.MULTILINE)
    assert len(pairs) == len(READ_TORCH_MINORS)
    for vision, torch in pairs:
        assert torchvision_for(int(torch)) == f"0.{vision}"


def test_the_engine_release_s_own_pin_comes_first_where_the_log_names_the_release() -> None:
    log = (
        "INFO 01-22 09:01:11 api_server.py:1] vLLM API server version 0.6.6.post1\n"
        "RuntimeError: operator torchvision::nms does not exist\n"
    )
    found = diagnose_text(log)
    assert found.code == "torchvision-build"
    assert found.fixes[0].text == "pip install 'torchvision==0.20.1'"  # vLLM 0.6.6's wheel
    assert "torch 2.N" in found.fixes[1].text


def test_without_the_release_the_answer_is_the_pairing_alone() -> None:
    found = diagnose_text(TORCHVISION_LINES[0] + "\n")
    assert found.code == "torchvision-build"
    assert [f.kind for f in found.fixes] == ["advice"]
