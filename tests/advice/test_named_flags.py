"""A flag, or a combination of flags, the engine refuses (patcher/advice/named_flags.py): the
flags the message tells in words, and the refusals whose way out the engines' source shows
elsewhere. Every log here is written from a template read from a release's source
(tools/read_errors.py), with the prefix its engine prints; none copies a report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patcher.advice import catalogue
from patcher.advice.doctor import diagnose, diagnose_text
from patcher.engines.registries import architectures
from tools.audit_answers import log_line


def _raised(phrase: str, engine: str = "vllm", seed: int = 0) -> tuple[str, tuple[str, ...]]:
    """A log line of the read template holding ``phrase``, and the releases that raise it."""
    template = next(t for t in catalogue.templates(engine) if phrase in t.text)  # type: ignore[arg-type]
    return log_line(template, seed), template.releases


def test_two_features_told_in_words_are_the_two_flags_to_choose_between() -> None:
    # vLLM 0.4 and 0.5 (worker/model_runner.py): "chunked prefill cannot be used with prefix
    # caching now." The flags are the engine's own: --enable-prefix-caching is named by its
    # messages, --enable-chunked-prefill is argparse's other half of --no-enable-chunked-prefill.
    line, releases = _raised("chunked prefill cannot be used with prefix caching")
    assert "0.4.3" in releases
    found = diagnose_text(line)
    assert found.code == "engine-flags"
    # and no message of 0.6.6 or later refuses the two together: V1 runs both
    assert [f.text for f in found.fixes] == [
        "leave out one of --enable-chunked-prefill / --enable-prefix-caching",
        "pip install 'vllm>=0.6.0'",
    ]


def test_words_no_flag_holds_are_not_made_a_flag() -> None:
    # "Fast prefill optimization for KV sharing is not compatible with EAGLE ...": neither
    # side is the words of a flag the engine's messages name, so no pair of flags is offered
    line, _ = _raised("Fast prefill optimization for KV sharing is not compatible with EAGLE")
    found = diagnose_text(line)
    assert found.recognised
    assert not any(f.text.startswith("leave out one of") for f in found.fixes)


@pytest.mark.parametrize(
    "phrase", ["Model Runner V2 does not yet support: ", "VLLM_USE_V2_MODEL_RUNNER does not yet"]
)
def test_what_the_v2_model_runner_lacks_is_run_by_the_v1_runner(phrase: str) -> None:
    # vLLM 0.20 to 0.33 (config/vllm.py) refuse only where VLLM_USE_V2_MODEL_RUNNER=1 forces
    # the V2 runner; 0.20 names the variable, 0.23 on do not.
    line, _ = _raised(phrase)
    fixes = [f.text for f in diagnose_text(line).fixes]
    assert fixes[0] in ("VLLM_USE_V2_MODEL_RUNNER=0", "unset VLLM_USE_V2_MODEL_RUNNER")
    assert "change the setting the message names" not in fixes


def test_a_multimodal_setting_on_a_model_the_release_takes_as_text() -> None:
    # vLLM 0.6 to 0.9 (ModelConfig): the release's registry does not list the architecture as
    # multimodal. A release that lists it first; leaving the flag out only serves text.
    line, releases = _raised("`limit_mm_per_prompt` is only supported for multimodal models")
    assert "0.9.2" in releases
    fixes = diagnose_text(line).fixes
    assert "registry lists the checkpoint's architecture" in fixes[0].text
    assert fixes[1].text == "leave out --limit-mm-per-prompt"
    assert "text" in (fixes[1].note or "")


def test_the_checkpoint_names_the_release_that_takes_its_architecture_as_multimodal(
    tmp_path: Path,
) -> None:
    # The log of vLLM 0.8.5 does not print the architecture; the checkpoint's config.json does.
    # The first release whose registry (read) lists it is named, not a search left to the user.
    ckpt = tmp_path / "glm-4.1v"
    ckpt.mkdir()
    (ckpt / "config.json").write_text(
        json.dumps({"architectures": ["Glm4vForConditionalGeneration"], "model_type": "glm4v"})
    )
    line, _ = _raised("`limit_mm_per_prompt` is only supported for multimodal models")
    log = tmp_path / "server.log"
    log.write_text(
        "INFO 07-04 15:24:30 [api_server.py:1043] vLLM API server version 0.8.5.post1\n" + line
    )
    first = min(
        v for v, names in architectures().items() if "Glm4vForConditionalGeneration" in names
    )
    told = diagnose(log).fixes[0]
    assert told.kind == "advice" and "--checkpoint" in (told.note or "")
    named = diagnose(log, checkpoint=ckpt).fixes[0]
    assert named.kind == "dependency"
    assert named.text == f"pip install 'vllm>={'.'.join(map(str, first))}'"
    # a release that already lists it: the refusal has another cause, so no upgrade is named
    log.write_text(f"INFO 07-04 [api_server.py:1043] vLLM API server version 0.20.0\n{line}")
    assert not any(f.kind == "dependency" for f in diagnose(log, checkpoint=ckpt).fixes)


def test_the_architecture_the_log_resolved_names_the_release() -> None:
    # vLLM 0.10 on prints "Resolved architecture: X" before the refusal
    line, _ = _raised("`limit_mm_per_prompt` is only supported for multimodal models")
    found = diagnose_text(
        "INFO 07-04 [api_server.py:1] vLLM API server version 0.9.1\n"
        "INFO 07-04 [model.py:1] Resolved architecture: Glm4vForConditionalGeneration\n" + line
    )
    assert found.fixes[0].kind == "dependency"
    assert found.fixes[0].text.startswith("pip install 'vllm>=")


def test_a_setting_a_message_names_is_a_flag_only_where_a_parser_defines_it() -> None:
    # vLLM 0.12's config/vllm.py names disable_padded_drafter_batch, a --speculative-config
    # field: no read release's parser defines --disable-padded-drafter-batch, so no such flag
    # is offered (its messages elsewhere name the flag, which no parser has)
    found = diagnose_text(
        "ValueError: async scheduling for EAGLE/MTP kind of speculative decoding is enabled, but "
        "disable_padded_drafter_batch=True disable_padded_drafter_batch=True is not supported for "
        "this situation now. please set disable_padded_drafter_batch=Fasle\n"
    )
    assert not any("--disable-padded-drafter-batch" in f.text for f in found.fixes)
    assert not any("drafter-batch" in f.text and f.kind == "flag" for f in found.fixes)


def test_two_flags_refused_together_name_the_release_that_takes_both() -> None:
    # vLLM 0.7.3's cli_args.py (validate_parsed_serve_args); no message of 0.8.5 or later
    # refuses the two together
    found = diagnose_text(
        '  File "/env/vllm/entrypoints/openai/cli_args.py", line 285, in '
        "validate_parsed_serve_args\n"
        "TypeError: Error: --enable-auto-tool-choice and --enable-reasoning cannot be enabled "
        "at the same time\n"
    )
    texts = [f.text for f in found.fixes]
    assert texts[0] == "leave out one of --enable-auto-tool-choice / --enable-reasoning"
    assert texts[1] == "pip install 'vllm>=0.8.2'"


def _batched_tokens_reading() -> dict[str, dict[str, bool]]:
    """vLLM's SchedulerConfig and LoRAConfig per release read
    (snapshots/engines/batched-tokens-default-vllm.txt)."""
    path = Path(__file__).resolve().parents[2] / "snapshots/engines/batched-tokens-default-vllm.txt"
    found: dict[str, dict[str, bool]] = {}
    for row in path.read_text().splitlines():
        if row and not row.startswith("#"):
            release, *fields = row.split("\t")
            found[release] = {k: v == "yes" for k, v in (f.rsplit(":", 1) for f in fields)}
    return found


def test_a_setting_above_its_stated_bound_is_the_setting_at_the_bound() -> None:
    # vLLM 0.4's LoRAConfig: the custom LoRA kernel bounds max_num_batched_tokens, which
    # defaults to the context length; "kernel" in its words is no hardware gap
    line, releases = _raised("max_num_batched_tokens must be <= 65528")
    reading = _batched_tokens_reading()
    assert set(releases) <= set(reading)
    for release in releases:  # where the bound is, the default is the context length
        assert reading[release]["lora-bound-65528"]
        assert reading[release]["default=max(max_model_len, 2048)"]
    found = diagnose_text(line)
    assert found.code == "engine-flags"
    assert [f.text for f in found.fixes] == [
        "--max-model-len 65528",
        "--max-num-batched-tokens 65528",
    ]


def test_a_boolean_setting_refused_at_its_value_is_the_flag_that_switches_it() -> None:
    # vLLM 0.5.4's config.py: "BitAndBytes with enforce_eager = False is not supported yet."
    # (read from its wheel); False refused: --enforce-eager sets it True
    line, raising = _raised("with enforce_eager = False is not supported")
    assert raising == ("0.5.4",)
    found = diagnose_text(
        "INFO 08-08 10:00:00 api_server.py:339] vLLM API server version 0.5.4\n" + line + "\n"
    )
    assert [(f.kind, f.text) for f in found.fixes] == [("flag", "--enforce-eager")]
    # a value the message asks for, not one it refuses: vLLM's "Elastic EP is only supported
    # with enable_eplb=True." is --enable-eplb; "NUMA binding lists cannot be combined with
    # numa_bind=False." refuses False, so --numa-bind too
    for phrase, flag in (
        ("is only supported with enable_eplb=True", "--enable-eplb"),
        ("cannot be combined with numa_bind=False", "--numa-bind"),
    ):
        line, _ = _raised(phrase)
        assert [f.text for f in diagnose_text(line + "\n").fixes] == [flag], phrase
