"""Which engine releases patcher has read, and what every command says about one it has not.

A release is read when ``python -m tools.read_release`` (vLLM, from the wheel's source) or
tools/record_engines.py (SGLang, in a venv) read that exact release. Any other version (newer
than the newest read, older than the oldest, a patch release between two read ones, a
pre-release) is answered with the rules of the read release before it, and every command that
answers for an engine version says which, in its first line and in ``--json``: never a plain
"starts: yes"."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from patcher.engines.engine import parse_engine
from patcher.engines.readings import assumed, newest_read, reading, releases_read
from tests.conftest import ROOT, SNAPSHOTS, Cli

RULES = json.loads((SNAPSHOTS / "engines" / "rules-vllm.json").read_text())["releases"]

NOT_READ = {
    "vllm==0.35.0": "vllm 0.35.0 was not read (newer than 0.34.0, the newest read); "
    "0.34.0's rules are assumed",
    "vllm==1.2": "vllm 1.2.0 was not read (newer than 0.34.0, the newest read); "
    "0.34.0's rules are assumed",
    "vllm==0.10.0": "vllm 0.10.0 was not read (older than 0.10.1, the oldest read); "
    "0.10.1's rules are assumed",
    "vllm==0.16.1": "vllm 0.16.1 was not read (a release between two read ones); "
    "0.16.0's rules are assumed",
    "vllm==0.34.0rc1": "vllm 0.34.0rc1 was not read (a pre-release or dev build); "
    "0.34.0's rules are assumed",
    "vllm==0.35.0.dev3": "vllm 0.35.0.dev3 was not read (newer than 0.34.0, the newest read); "
    "0.34.0's rules are assumed",
    "sglang==0.5.22": "sglang 0.5.22 was not read (older than 0.5.23, the oldest read); "
    "0.5.23's rules are assumed",
    "sglang==0.5.24": "sglang 0.5.24 was not read (newer than 0.5.23, the newest read); "
    "0.5.23's rules are assumed",
}
READ = ("vllm==0.34.0", "vllm==0.16", "vllm==0.32.0+cpu", "vllm==0.10.1", "sglang==0.5.23")


def test_the_newest_release_read_and_the_day_it_was_read() -> None:
    """vLLM 0.34.0, read from its wheel on 2026-12-04; SGLang 0.5.23, recorded in a venv.
    Reading a newer release moves this (and every 'not read' note) by itself."""
    assert newest_read("vllm") == ((0, 34, 0), "2026-12-04")
    assert newest_read("sglang") == ((0, 5, 23), "2026-11-30")
    assert {".".join(map(str, v)) for v in releases_read("vllm")} == set(RULES)
    assert (SNAPSHOTS / "engines" / "sglang-0.5.23.json").is_file()


@pytest.mark.parametrize(("spec", "note"), sorted(NOT_READ.items()))
def test_a_release_not_read_names_the_release_assumed(spec: str, note: str) -> None:
    said = assumed(parse_engine(spec))
    assert not said.read and said.note == note
    assert said.to_json()["rules_of"] == note.split("; ")[1].split("'s")[0]


@pytest.mark.parametrize("spec", READ)
def test_a_release_read_says_nothing(spec: str) -> None:
    said = assumed(parse_engine(spec))
    assert said.read and said.note is None


@pytest.mark.parametrize("spec", sorted(NOT_READ))
def test_check_says_unknown_with_its_own_exit_code(cli: Cli, kimi: Path, spec: str) -> None:
    """Never "starts: yes" with exit 0: "unknown", exit 5 (1 where the rules assumed find a
    problem), with the note first, in text and JSON."""
    if spec.startswith("vllm"):
        cli("apply", kimi, "set-architectures", "--set", "architecture=DeepseekV3ForCausalLM")
    code, out, _ = cli("check", kimi, "--engine", spec)
    assert out.splitlines()[0] == f"note: {NOT_READ[spec]}"
    assert "starts          yes" not in out and "starts          unknown" in out
    assert code in (1, 5)
    engine = json.loads(cli("check", kimi, "--engine", spec, "--json")[1])["engine"]
    assert engine["starts"] == "unknown" and engine["note"] == NOT_READ[spec]
    assert engine["reading"]["read"] is False


def test_check_on_the_newest_read_says_yes_and_a_later_one_unknown(cli: Cli, kimi: Path) -> None:
    cli("apply", kimi, "strip-fp8-kv-cache")
    code, out, _ = cli("check", kimi, "--engine", "vllm==0.34.0", "--gpu", "rtx-pro-6000")
    assert code == 0 and "starts          yes" in out and "note" not in out
    code, out, _ = cli("check", kimi, "--engine", "vllm==0.35.0", "--gpu", "rtx-pro-6000")
    assert code == 5 and "starts          unknown: this release was not read" in out


def test_a_problem_found_by_assumed_rules_says_whose_rules(cli: Cli, kimi: Path) -> None:
    code, out, _ = cli("check", kimi, "--engine", "vllm==0.16.1", "--gpu", "rtx-pro-6000")
    assert code == 1
    assert "by vllm 0.16.0's rules (assumed), vllm==0.16.1 would refuse to start" in out
    assert "unknown: this release was not read; by the rules assumed, no" in out


@pytest.mark.parametrize(
    "command",
    [
        ["plan", "{ckpt}", "--engine", "vllm==0.35.0", "--gpu", "h200", "--tp", "8"],
        ["sync", "{ckpt}", "--engine", "vllm==0.35.0", "--gpu", "h200", "--tp", "8", "--dry-run"],
        ["kv-budget", "{ckpt}", "--engine", "vllm==0.35.0", "--gpu", "h200", "--tp", "8"],
        ["overrides", "{ckpt}", "--engine", "vllm==0.35.0"],
    ],
)
def test_every_command_says_so_first_in_text_and_in_json(
    cli: Cli, kimi: Path, command: list[str]
) -> None:
    args = [str(kimi) if a == "{ckpt}" else a for a in command]
    _, out, _ = cli(*args)
    assert out.splitlines()[0] == f"note: {NOT_READ['vllm==0.35.0']}"
    found = json.loads(cli(*args, "--json")[1])
    read = (found.get("plan") or found)["reading"]
    assert read == {"read": False, "rules_of": "0.34.0", "note": NOT_READ["vllm==0.35.0"]}


def test_apply_and_show_say_so(cli: Cli, kimi: Path) -> None:
    code, _, err = cli("apply", kimi, "strip-fp8-kv-cache", "--engine", "vllm==0.35.0")
    assert code == 0 and err.splitlines()[0] == f"warning: {NOT_READ['vllm==0.35.0']}"
    _, out, _ = cli("show", "set-context-length", "--engine", "vllm==0.35.0")
    assert NOT_READ["vllm==0.35.0"] in out
    _, out, _ = cli("show", "set-context-length", "--engine", "vllm==0.34.0")
    assert "was not read" not in out


def test_doctor_says_when_the_logs_release_was_not_read(tmp_path: Path, cli: Cli) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(
        "INFO 12-03 08:00:00 [api_server.py:1] vLLM API server version 0.35.0rc2\n"
        "ValueError: To serve at least one request with the model's max seq len (262144), "
        "(16.0 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(8.0 GiB). Based on the available memory, the estimated maximum model length is "
        "131072. Try increasing `gpu_memory_utilization` when initializing the engine.\n"
    )
    _, out, _ = cli("doctor", log)
    assert (
        "engine: vLLM 0.35.0rc2 (note: vllm 0.35.0rc2 was not read (newer than 0.34.0, the "
        "newest read); 0.34.0's rules are assumed)" in out
    )
    found = json.loads(cli("doctor", log, "--json")[1])
    assert found["reading"]["rules_of"] == "0.34.0" and found["reading"]["read"] is False


def test_run_says_so_on_its_first_line(tmp_path: Path) -> None:
    """``patcher run`` against a vllm whose metadata says 0.35.0 (a release not read)."""
    from tests.cli.test_run import _checkpoint, _engine, _run

    ckpt = _checkpoint(tmp_path, "c1_base")
    env = _engine(tmp_path, "pass", version="0.35.0")
    done = _run(env, "--gpu", "h200", "--dry-run", "--", "vllm", "serve", ckpt)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"patcher: note: {NOT_READ['vllm==0.35.0']}"


def test_the_0_34_memory_defaults_are_the_releases_own(cli: Cli, model_checkpoint: object) -> None:
    """0.34.0 defaults to gpu_memory_utilization 1.0 on CUDA (the extensible KV cache) and
    64-token blocks: DeepSeek-R1-Distill-Qwen-32B's 131,072 tokens fit on one RTX PRO 6000,
    where with 0.33.0's defaults (0.92, 16) they do not."""
    root: Path = model_checkpoint("deepseek-r1-distill-qwen-32b")  # type: ignore[operator]
    new = json.loads(
        cli("kv-budget", root, "--engine", "vllm==0.34.0", "--gpu", "rtx-pro-6000", "--json")[1]
    )
    old = json.loads(
        cli("kv-budget", root, "--engine", "vllm==0.33.0", "--gpu", "rtx-pro-6000", "--json")[1]
    )
    assert (new["gpu_memory_utilization"], new["block_size"], new["fits"]) == (1.0, 64, True)
    assert (old["gpu_memory_utilization"], old["block_size"], old["fits"]) == (0.92, 16, False)
    read = reading(parse_engine("vllm==0.34.0"))
    assert read.default_utilization == 1.0 and read.gpu_memory_utilization == 0.92


@pytest.mark.parametrize(
    ("model_type", "first"),
    [("deepseek_v3", "0.10.1"), ("glm4_moe_lite", "0.15.0"), ("mistral_large_4", "0.34.0")],
)
def test_mla_model_types_are_each_releases_own(
    cli: Cli, tmp_path: Path, model_type: str, first: str
) -> None:
    """A model type is run as DeepSeek MLA from the release whose is_deepseek_mla lists it."""
    config = {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": model_type,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    for version in RULES:
        engine = json.loads(cli("check", tmp_path, "--engine", f"vllm=={version}", "--json")[1])
        listed = tuple(map(int, version.split("."))) >= tuple(map(int, first.split(".")))
        assert engine["engine"]["mla"] is listed, version


@pytest.mark.skipif(
    os.environ.get("PATCHER_CHECK_INDEX") != "1",
    reason="asks the package index (PATCHER_CHECK_INDEX=1): not offline, not in CI",
)
def test_no_release_on_the_index_is_newer_than_the_newest_read() -> None:
    """Opt-in: lists the vLLM releases on the index that patcher has not read yet."""
    done = subprocess.run(
        [sys.executable, "-m", "tools.read_release", "--newer"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "every release on the index was read", (
        f"read them: python -m tools.read_release vllm {done.stdout.split()}; "
        f"today is {datetime.date.today()}"
    )


def test_modelopt_quantizes_the_lm_head_from_the_release_its_source_says() -> None:
    """tools/read_source.py reads modelopt.py's get_quant_method: ParallelLMHead is given a
    quantized method from 0.23.0 on, never before."""
    from patcher.engines.readings import vllm_readings

    read = vllm_readings()
    assert [v for v, r in read.items() if r.modelopt_quantized_lm_head][0] == (0, 23, 0)
    assert all(r.modelopt_quantized_lm_head == (v >= (0, 23, 0)) for v, r in read.items())


def test_the_parser_names_are_read_from_the_registries_not_their_docstrings() -> None:
    """tools/read_source.py ``parsers``: every release read registers tool and reasoning
    parsers; the registries' docstring examples ("my_parser") are not registrations."""
    from patcher.engines.readings import vllm_readings

    read = vllm_readings()
    assert all(r.tool_parsers and r.reasoning_parsers for r in read.values())
    assert not any("my_parser" in r.tool_parsers | r.reasoning_parsers for r in read.values())
    first, last = next(iter(read.values())), list(read.values())[-1]
    assert len(last.tool_parsers) > len(first.tool_parsers)  # parsers are added over releases
