"""doctor on Triton's ptxas not knowing the GPU (patcher/advice/ptxas_archs.py), against the
ptxas of each Triton release, run by tools/read_triton_ptxas.py (triton-ptxas.json, and the
same reading by hand in snapshots/engines/triton-ptxas-archs.txt)."""

from __future__ import annotations

import pytest

from patcher.advice.doctor import diagnose_text
from patcher.advice.ptxas_archs import reading, runs
from tests.conftest import SNAPSHOTS

# One line per rule (test_doctor's marker test takes them with its own cases).
PTXAS_LINES = ["ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'"]
PREFIX = "(EngineCore_DP0 pid=73) ERROR 01-28 17:37:45 [core.py:866] "


def test_the_package_s_reading_is_the_recorded_one() -> None:
    rows = [
        line.split("\t")
        for line in (SNAPSHOTS / "engines" / "triton-ptxas-archs.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    read = reading()
    for release, binary, cuda, accepted in rows:
        assert read[release][binary]["cuda"] == cuda
        assert read[release][binary]["accepts"] == accepted.split()


@pytest.mark.parametrize("value", ["sm_121a", "sm_120a", "sm_110a"])
def test_an_arch_the_ptxas_lacks_is_a_newer_ptxas_by_path_or_a_triton_whose_ptxas_has_it(
    value: str,
) -> None:
    log = (
        f"{PREFIX}torch._inductor.exc.InductorError: PTXASError: PTXAS error: Internal Triton "
        "PTX codegen error\n"
        f"{PREFIX}`ptxas` stderr:\n"
        f"{PREFIX}ptxas fatal   : Value '{value}' is not defined for option 'gpu-name'\n"
    )
    found = diagnose_text(log)
    assert found.code == "ptxas-arch"  # not torch.compile's: the engine's kernels run it too
    assert found.fixes[0].kind == "env" and "TRITON_PTXAS_PATH=" in found.fixes[0].text
    arch = int(value[3:6])
    first = found.fixes[1].text.removeprefix("pip install 'triton>=").rstrip("'")
    read = reading()
    assert value in runs(read[first], arch)["accepts"]  # the release named takes it
    earlier = [r for r in read if r != first and list(read).index(r) < list(read).index(first)]
    assert not any(value in runs(read[r], arch)["accepts"] for r in earlier)


def test_an_arch_no_ptxas_read_knows_gets_no_release() -> None:
    found = diagnose_text("ptxas fatal : Value 'sm_999a' is not defined for option 'gpu-name'\n")
    assert found.code != "ptxas-arch" or not found.fixes


def test_ptxas_s_words_quoted_without_its_prefix_are_still_its() -> None:
    found = diagnose_text("Value 'sm_121a' is not defined for option 'gpu-name'\n")
    assert found.code == "ptxas-arch"
    assert "TRITON_PTXAS_PATH=" in found.fixes[0].text
