"""doctor on /dev/shm too small for the engine's processes (patcher/advice/shared_memory.py):
NCCL's own warnings, read from its source (snapshots/engines/nccl-shm.txt), and SIGBUS."""

from __future__ import annotations

import re

import pytest

from patcher.advice.doctor import diagnose_text
from patcher.advice.shared_memory import NCCL_SHM
from tests.conftest import SNAPSHOTS

READING = (SNAPSHOTS / "engines" / "nccl-shm.txt").read_text()


def _warnings() -> list[str]:
    """NCCL's WARN format strings of its shared-memory segment, as its source has them."""
    return re.findall(r'WARN\("(Error[^"]*)"', READING)


def _filled(text: str) -> str:
    """A format string as NCCL prints it: the verb ("creating"), the segment's path, numbers."""
    values = ["creating"] if text.startswith("Error while") else []
    values += ["/dev/shm/nccl-abc123", "9637892", "No space left on device", "28"]
    return re.sub(r"%(?:ld|zu|d|s)", lambda _: values.pop(0), text)


def test_each_warning_of_nccl_s_segment_is_read_as_the_rule_reads_it() -> None:
    made = [w for w in _warnings() if "segment" in w or "create" in w or "extend" in w]
    assert len(made) >= 3  # mkstemp's, fallocate's, and the failure's own
    for text in made:
        assert NCCL_SHM.search("NCCL WARN " + _filled(text)), text


@pytest.mark.parametrize(
    "prefix",
    ["", "(RayWorker pid=1203) ", "(EngineCore_DP0 pid=88) ERROR 12-04 10:00:00 [x.py:1] "],
)
def test_nccl_s_segment_failing_is_more_shared_memory_or_its_shm_transport_off(
    prefix: str,
) -> None:
    log = (
        f"{prefix}node1:1203:1203 [0] os/linux.cc:795 NCCL WARN Error: failed to extend "
        "/dev/shm/nccl-vzIpS6 to 9637892 bytes, error: No space left on device (28)\n"
        f"{prefix}RuntimeError: NCCL Error 2: unhandled system error (run with NCCL_DEBUG=INFO)\n"
    )
    found = diagnose_text(log)
    assert found.code == "shared-memory"
    assert "--ipc=host" in found.fixes[0].text
    assert 'NCCL_PARAM(ShmDisable, "SHM_DISABLE"' in READING  # NCCL's own switch
    assert found.fixes[1].text == "NCCL_SHM_DISABLE=1"


def test_a_bus_error_is_shared_memory_first_and_a_mapped_file_second() -> None:
    found = diagnose_text("Fatal Python error: Bus error\n\nBus error (core dumped)\n")
    assert found.code == "shared-memory"
    assert [f.kind for f in found.fixes] == ["advice", "advice"]
