"""doctor's answer when speculative decoding's draft model is not one its method runs
(patcher/advice/speculative.py): the draft to give, or no speculative decoding."""

from __future__ import annotations

from patcher.advice import catalogue
from patcher.advice.doctor import diagnose_text


def test_a_target_loaded_as_its_own_draft_is_the_draft_path_to_give() -> None:
    # SGLang's EAGLE3 worker without --speculative-draft-model-path loads the target as the
    # draft, which lacks the draft's own methods: no words of the engine's, read by its file
    found = diagnose_text(
        "$ python -m sglang.launch_server --model-path /m --speculative-algorithm EAGLE3\n"
        "[2026-08-26 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call "
        "last):\n"
        '  File "/env/lib/python3.12/site-packages/sglang/srt/speculative/eagle_worker.py", '
        "line 150, in __init__\n"
        "    self.draft_model_runner.model.set_embed(embed)\n"
        "AttributeError: 'Qwen2ForCausalLM' object has no attribute 'set_embed'\n"
    )
    assert found.code == "speculative-draft"
    assert found.fixes[0].text == "--speculative-draft-model-path DRAFT"


def test_a_draft_workers_own_refusal_of_the_draft_is_read_from_its_source() -> None:
    template = next(
        t
        for t in catalogue.templates("sglang")
        if t.text.startswith("STANDALONE speculative decoding requires the draft model")
    )
    assert template.file.startswith("sglang/srt/speculative/")
    found = diagnose_text(
        "[2026-08-26 10:00:00 TP0] ValueError: STANDALONE speculative decoding requires the "
        "draft model to share the same vocabulary as the target model.\n"
    )
    assert found.code == "speculative-draft"
    assert any("--speculative-draft-model-path" in f.text for f in found.fixes)
