"""doctor on argparse refusing a flag's value: a dict-typed vLLM flag given in the k=v form of
older releases is told as the same value in JSON (vllm/engine/arg_utils.py reads such a flag
with json.loads from 0.8.5 on)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

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


def _json_fix(value: str) -> tuple[str, object]:
    found = diagnose_text(
        f"vllm serve: error: argument --limit-mm-per-prompt: Value {value} cannot be converted "
        "to <function loads at 0x7f00>.\n"
    )
    assert found.code == "flag-json"
    flag, given = shlex.split(found.fixes[0].text)
    assert flag == "--limit-mm-per-prompt"
    return found.cause, json.loads(given)


def test_a_colon_mapping_with_unquoted_keys_becomes_json() -> None:
    cause, value = _json_fix("image:4")
    assert value == {"image": 4} and "unquoted keys" in cause
    cause, value = _json_fix("{image: 2, video: 1}")
    assert value == {"image": 2, "video": 1} and "k=v form" not in cause


def test_json_whose_quotes_the_shell_passed_on_escaped_is_given_unescaped() -> None:
    cause, value = _json_fix('{\\"image\\":1,\\"video\\":1}')
    assert value == {"image": 1, "video": 1} and "escaped" in cause


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


def test_a_task_the_parser_dropped_becomes_the_runner_the_last_release_ran_it_on() -> None:
    """``--task embed`` refused by a vLLM without ``--task`` (0.13.0 on): ``--runner pooling``,
    what the last release read with ``--task`` ran a pooling task on (its ``_RUNNER_TASKS``);
    a generative task is only left out, and a release before ``--task`` gets neither."""
    from patcher.advice.catalogue import feature_releases, feature_span, features_of

    span = feature_span("vllm", "flags", "--task")
    assert span is not None and span[1] is not None
    last = feature_releases("vllm", "flags", "--task")[-1]
    mapped = {
        e.split("=", 1)[0]: e.split("=", 1)[1]
        for e in features_of("vllm", "task_runner")
        if last in feature_releases("vllm", "task_runner", e)
    }
    pooling = sorted(t for t, r in mapped.items() if r.startswith("pooling"))
    generative = sorted(t for t, r in mapped.items() if r == "generate")
    assert pooling and generative
    for task in pooling:
        found = diagnose_text(f"vllm: error: unrecognized arguments: --task {task}\n")
        assert (found.fixes[0].kind, found.fixes[0].text) == ("flag", "--runner pooling")
        convert = mapped[task].partition("/")[2]
        if convert and convert != "embed":
            assert f"--convert {convert}" in (found.fixes[0].note or "")
    for task in generative:
        found = diagnose_text(f"vllm: error: unrecognized arguments: --task {task}\n")
        assert all("--runner" not in f.text for f in found.fixes)
        assert found.fixes[0].text == "leave out --task"
    before = diagnose_text(
        "INFO 10-30 10:00:00 api_server.py:1 vLLM API server version 0.6.3\n"
        "api_server.py: error: unrecognized arguments: --task embedding\n"
    )
    assert all("--runner" not in f.text for f in before.fixes)
    assert any(f.text.startswith("pip install 'vllm>=") for f in before.fixes)


def test_the_task_runners_are_read_from_the_release_s_model_config(tmp_path: Path) -> None:
    import zipfile

    from tools.read_task_runners import task_runners

    source = (
        "_RUNNER_TASKS: dict = {\n"
        '    "generate": ["generate", "transcription"],\n'
        '    "pooling": ["embedding", "embed", "classify", "score"],\n'
        "}\n"
        "class ModelConfig:\n"
        "    def resolve(self):\n"
        "        def _task_to_convert(task):\n"
        '            if task == "embedding" or task == "embed":\n'
        '                return "embed"\n'
        '            if task == "classify":\n'
        '                return "classify"\n'
        '            if task == "score":\n'
        "                return self.pick()\n"
        '            return "none"\n'
    )
    wheel = tmp_path / "vllm-0.12.0-cp38-abi3-manylinux_2_31_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("vllm/config/model.py", source)
        archive.writestr("vllm/config/other.py", "X = 1\n")
    with zipfile.ZipFile(wheel) as archive:
        assert task_runners(archive, "vllm") == {
            "task_runner": [
                "classify=pooling/classify",
                "embed=pooling/embed",
                "embedding=pooling/embed",
                "generate=generate",
                "score=pooling",
                "transcription=generate",
            ]
        }
        assert task_runners(archive, "sglang") == {}


def test_vllm_reads_an_underscore_flag_as_its_dashed_one_so_that_one_is_looked_up() -> None:
    # vLLM's FlexibleArgumentParser turns --x_y into --x-y: a refused --mm_processor_cache_type
    # is --mm-processor-cache-type, which the releases from 0.11.0 define (read)
    found = diagnose_text("vllm: error: unrecognized arguments: --mm_processor_cache_type shm\n")
    assert found.code == "unrecognized-arguments"
    assert found.fixes[0].text.startswith("pip install 'vllm>=")
    assert "--mm-processor-cache-type" in found.fixes[0].note


def test_a_flag_the_log_s_own_release_defines_is_left_out_not_upgraded_for() -> None:
    """A build whose parser lacks a flag the release it names defines (as read) is not that
    release: a fork or a vendor's image of a development build. Installing the release that
    first defined it is no fix there (the log's is newer); the flag is left out. Where the
    log names no release, or an older one, the releases that define it are still named."""
    from patcher.advice.catalogue import feature_span

    flag = "--enable-prompt-tokens-details"
    span = feature_span("vllm", "flags", flag)
    assert span is not None and span[1] is None  # read: defined from its first release on
    refusal = f"vllm serve: error: unrecognized arguments: {flag}\n"
    newer = diagnose_text(
        "INFO 08-01 10:00:00 [api_server.py:1] vLLM API server version 0.25.2.dev0\n" + refusal
    )
    assert [(f.kind, f.text) for f in newer.fixes] == [("advice", f"leave out {flag}")]
    assert newer.fixes[0].note is not None and "no upgrade" in newer.fixes[0].note
    older = diagnose_text(
        "INFO 08-01 10:00:00 [api_server.py:1] vLLM API server version 0.5.4\n" + refusal
    )
    assert older.fixes[0].text == f"pip install 'vllm>={span[0]}'"
    # a release newer than those read may have dropped it: said so, not "a fork"
    unread = diagnose_text(
        "INFO 08-01 10:00:00 [api_server.py:1] vLLM API server version 9.0.0\n" + refusal
    )
    assert unread.fixes[0].text == f"leave out {flag}"
    assert unread.fixes[0].note is not None and "not read" in unread.fixes[0].note
    assert diagnose_text(refusal).fixes[0].text == f"pip install 'vllm>={span[0]}'"


def test_argparse_s_message_quoted_without_its_program_is_read() -> None:
    """argparse words the refusal "unrecognized arguments: ..." and prefixes "PROG: error: "
    when it exits; a report may quote the message alone, and it is the same refusal."""
    found = diagnose_text("unrecognized arguments: --enable-prompt-tokens-details\n")
    assert found.code == "unrecognized-arguments"
    assert [f.text for f in found.fixes] == ["leave out --enable-prompt-tokens-details"]
    # the words inside another sentence are not argparse's refusal
    assert diagnose_text("WARNING Found unrecognized arguments: --x\n").code != (
        "unrecognized-arguments"
    )
