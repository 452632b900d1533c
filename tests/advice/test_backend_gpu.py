"""SGLang refusing an attention backend the GPU has no kernels for (patcher/advice/backend_gpu.py):
logs written from every wording of the check the catalogue read from SGLang's releases
(patcher/advice/errors-sglang.json), each answered with the same flag and another of the
release's choices."""

from __future__ import annotations

import pytest

from patcher.advice import catalogue
from patcher.advice.backend_gpu import REFUSED
from patcher.advice.doctor import diagnose_text

# every SGLang message that asks for another backend, as read, with its releases
WORDINGS = [
    (t.parts[0], list(t.releases))
    for t in catalogue.templates("sglang")
    if len(t.parts) == 1 and "Please use a different" in t.parts[0]
]
# the wordings alone, for test_doctor's marker test
BACKEND_GPU_LINES = [f"ValueError: {wording}" for wording, _ in WORDINGS]


def test_the_wordings_read_are_the_ones_the_rule_takes() -> None:
    assert len(WORDINGS) >= 7
    for wording, _ in WORDINGS:
        assert REFUSED.fullmatch(wording), wording


@pytest.mark.parametrize(("wording", "releases"), WORDINGS)
def test_each_wording_is_answered_with_a_choice_of_its_releases(
    wording: str, releases: list[str]
) -> None:
    log = (
        f"[2026-03-02 10:00:01] server_args=ServerArgs(model_path='/models/m', tp_size=1)\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/server_args.py", line 501, '
        "in __post_init__\n    raise ValueError(\n"
        f"ValueError: {wording}\n"
    )
    found = diagnose_text(log)
    assert found.code == "sglang-backend-gpu"
    flag = found.fixes[0]
    assert flag.kind == "flag"
    name, value = flag.text.split()
    phase = "prefill" if "for prefill" in wording else "decode" if "for decode" in wording else ""
    assert name == (f"--{phase}-attention-backend" if phase else "--attention-backend")
    # the value offered is a choice of every release that raises the wording
    having = catalogue.feature_releases("sglang", f"choices:{name}", value)
    assert set(releases) <= set(having)
    assert value not in wording.lower().replace(" ", "_")


def test_a_backend_no_release_lists_gets_only_the_gpus() -> None:
    found = diagnose_text(
        "ValueError: Foo Bar backend is only supported on Blackwell GPUs (SM100). "
        "Please use a different backend.\n"
    )
    assert found.code == "sglang-backend-gpu"
    assert [f.kind for f in found.fixes] == ["advice"]
    assert "Blackwell GPUs (SM100)" in found.fixes[0].text
