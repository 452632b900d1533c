"""doctor on argparse refusing a flag's value: a dict-typed vLLM flag given in the k=v form of
older releases is told as the same value in JSON (vllm/engine/arg_utils.py reads such a flag
with json.loads from 0.8.5 on)."""

from __future__ import annotations

import json
import shlex

from patcher.advice.doctor import diagnose_text
from tests.conftest import SNAPSHOTS


def test_k_v_pairs_become_the_same_json_object() -> None:
    found = diagnose_text(
        "vllm serve: error: argument --limit-mm-per-prompt: Value image=4,audio=1 cannot be "
        "converted to <function loads at 0x7f00>.\n"
    )
    assert found.code == "flag-json"
    (fix,) = found.fixes
    flag, value = shlex.split(fix.text)
    assert flag == "--limit-mm-per-prompt" and json.loads(value) == {"image": 4, "audio": 1}


def test_a_title_cut_at_the_function_still_reads() -> None:
    found = diagnose_text(
        "vllm serve: error: argument --limit-mm-per-prompt: Value image=2 cannot be converted to "
        "<function"
    )
    assert found.code == "flag-json" and json.loads(shlex.split(found.fixes[0].text)[1]) == {
        "image": 2
    }


def test_another_shape_gets_the_form_not_a_guess() -> None:
    found = diagnose_text(
        "vllm serve: error: argument --hf-overrides: Value rope_scaling cannot be converted to "
        "<function loads at 0x7f00>.\n"
    )
    assert found.code == "flag-json" and found.fixes[0].kind == "advice"


def test_a_model_given_positionally_to_the_api_server_module_goes_after_model() -> None:
    found = diagnose_text("api_server.py: error: unrecognized arguments: /root/models/Qwen3-8B\n")
    assert found.code == "unrecognized-arguments"
    assert [f.text for f in found.fixes] == ["--model /root/models/Qwen3-8B"]
    sglang = diagnose_text("launch_server.py: error: unrecognized arguments: /models/Qwen3-8B\n")
    assert [f.text for f in sglang.fixes] == ["--model-path /models/Qwen3-8B"]


def test_vllm_serve_given_after_an_entrypoint_that_runs_it_is_left_out() -> None:
    found = diagnose_text(
        "usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...\n"
        "vllm: error: unrecognized arguments: serve /models/GLM-4.7-Flash-AWQ-4bit\n"
    )
    assert found.code == "unrecognized-arguments"
    assert "given twice" in found.cause
    assert found.fixes[0].kind == "advice" and "leave 'vllm serve' out" in found.fixes[0].text


def test_the_json_form_s_release_is_the_recording_s() -> None:
    from patcher.advice.flag_choices import JSON_ONLY_SINCE

    kinds = [
        line.split()
        for line in (SNAPSHOTS / "engines" / "json-flags-vllm.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    first_json = next(i for i, (_, kind) in enumerate(kinds) if kind == "json")
    assert kinds[first_json][0] == JSON_ONLY_SINCE
    assert all(kind == "json" for _, kind in kinds[first_json:])  # no release went back
    assert any(kind == "kvs" for _, kind in kinds[:first_json])


def test_both_entrypoints_the_answers_name_are_the_dockerfile_s() -> None:
    text = (SNAPSHOTS / "engines" / "docker-entrypoints-vllm.txt").read_text()
    assert 'ENTRYPOINT ["python3", "-m", "vllm.entrypoints.openai.api_server"]' in text
    assert 'ENTRYPOINT ["vllm", "serve"]' in text


# One line per rule (test_doctor's marker test takes them with its own cases).
PARSER_LINES = [
    "KeyError: 'invalid tool call parser: openai (chose from { hermes, mistral })'",
]


def _first_taking(flag: str, value: str) -> str:
    """The first release of the last run the reading records taking ``value`` for ``flag``."""
    from patcher.advice.catalogue import feature_releases, releases

    having = set(feature_releases("vllm", f"choices:{flag}", value))
    run: list[str] = []
    for release in releases("vllm"):
        run = run + [release] if release in having else []
    return run[0]


def test_vllm_s_own_parser_refusal_names_the_releases_that_register_it() -> None:
    # raised after argparse (the parser's registry), in vLLM's words, as a KeyError
    prefix = "(APIServer pid=966592) "
    log = (
        f'{prefix}    raise KeyError(f"invalid tool call parser: {{args.tool_call_parser}} "\n'
        f"{prefix}KeyError: 'invalid tool call parser: openai (chose from {{ hermes, mistral, "
        "xlam })'\n"
    )
    found = diagnose_text(log)
    assert found.code == "invalid-choice"
    assert (
        found.fixes[0].text
        == f"pip install 'vllm>={_first_taking('--tool-call-parser', 'openai')}'"
    )
    assert all("chat-template" not in f.text for f in found.fixes)


def test_a_reasoning_parser_no_release_registers_is_a_misspelling() -> None:
    found = diagnose_text(
        "ValueError: invalid reasoning parser: deepseek-r2 (chose from { deepseek_r1, qwen3 })\n"
    )
    assert found.code == "invalid-choice"
    assert "--reasoning-parser" in found.cause and "no vllm release read" in found.cause
    assert [f.kind for f in found.fixes] == ["advice"]
