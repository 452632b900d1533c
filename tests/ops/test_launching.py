"""The launch: plan decides the transforms and the flags that make the server start."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from patcher.advice.doctor import diagnose
from patcher.advice.kvbudget import kv_budget
from tests.conftest import ROOT, Cli, tree_bytes

EXAMPLE = ROOT / "snapshots" / "example" / "kimi-k2.5-nvfp4"
TARGET = ("--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--tp", "8")


@pytest.fixture
def kimi(tmp_path: Path) -> Path:
    copy = tmp_path / "kimi"
    shutil.copytree(EXAMPLE, copy)
    return copy


def _flag(flags: list[str], name: str) -> int:
    return int(flags[flags.index(name) + 1])


def test_the_story_from_the_shipped_example(cli: Cli, kimi: Path) -> None:
    """vLLM 0.16 on 8x RTX PRO 6000: the FP8 KV cache must go, and then 262,144 tokens of a
    BF16 cache no longer fit; plan names both, and N fits by kv-budget's figure after the strip.
    After sync, plan is in sync (exit 0) and still gives the flag."""
    code, out, err = cli("plan", kimi, *TARGET, "--json")
    assert code == 4, err
    plan = json.loads(out)
    assert [a["name"] for a in plan["actions"]] == ["strip-fp8-kv-cache"]
    cap = _flag(plan["flags"], "--max-model-len")
    bf16 = kv_budget(
        kimi, gpu="rtx-pro-6000", tensor_parallel=8, kv_dtype="bf16", engine="vllm==0.16.0"
    )
    assert not bf16.fits and 131072 <= cap <= bf16.max_tokens
    assert plan["argv"][:3] == ["vllm", "serve", str(kimi)]
    assert _flag(plan["argv"], "--tensor-parallel-size") == 8
    code, out, err = cli("sync", kimi, *TARGET)
    assert code == 0, err
    assert f"--max-model-len {cap}" in out
    code, out, err = cli("plan", kimi, *TARGET)
    assert code == 0, err
    assert (
        "in sync" in out
        and f"vllm serve {kimi} --tensor-parallel-size 8 --max-model-len {cap}" in out
    )


def test_with_the_fp8_cache_kept_the_whole_context_fits(cli: Cli, kimi: Path) -> None:
    """vLLM 0.33 runs the FP8 MLA cache on SM12x: half the bytes, 262,144 tokens fit, no cap."""
    code, out, err = cli(
        "plan", kimi, "--engine", "vllm==0.33.0", "--gpu", "rtx-pro-6000", "--tp", "8", "--json"
    )
    assert code == 0, err
    plan = json.loads(out)
    assert plan["in_sync"] and "--max-model-len" not in plan["flags"]
    assert plan["launch"]["kv_budget"]["element_bytes"] == 1


def test_one_gpu_cannot_hold_the_weights_and_plan_says_so(cli: Cli, kimi: Path) -> None:
    code, out, err = cli("plan", kimi, "--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000")
    assert code == 1, err  # no go-ahead, although the strip is pending too
    assert "does not start: no KV cache fits" in out and "--tp" in out


def test_plan_refuses_what_sync_refuses_with_the_same_message(
    cli: Cli, kimi: Path, tmp_path: Path
) -> None:
    """A profile wanting set-context-length on vLLM 0.16: the YaRN rule ignores the edit. plan
    used to approve it (exit 4) and sync refuse it; now both refuse it (exit 1), and the
    checkpoint is untouched."""
    profile = tmp_path / "p.toml"
    profile.write_text(
        'engine = "vllm==0.16.0"\ngpu = "rtx-pro-6000"\ntensor_parallel = 8\n'
        "[transforms]\nset-context-length = { length = 131072 }\n"
    )
    before = tree_bytes(kimi)
    plan_code, _, plan_err = cli("plan", kimi, "--profile", profile)
    sync_code, _, sync_err = cli("sync", kimi, "--profile", profile)
    assert plan_code == sync_code == 1
    assert plan_err == sync_err and "--max-model-len 131072" in plan_err
    assert tree_bytes(kimi) == before


def test_a_context_above_what_the_engine_derives_is_refused(cli: Cli, kimi: Path) -> None:
    code, _, err = cli("plan", kimi, *TARGET, "--max-model-len", "300000")
    assert code == 1
    assert "max_model_len 300000 is above the 262144" in err and "\n" not in err.strip()
    assert "next: ask for --max-model-len 262144 or less" in err
    # The fix printed is one plan accepts.
    assert cli("plan", kimi, *TARGET, "--max-model-len", "262144")[0] in (0, 4)


def test_a_context_asked_for_is_passed_as_the_flag(cli: Cli, kimi: Path) -> None:
    code, out, err = cli("plan", kimi, *TARGET, "--max-model-len", "65536", "--json")
    assert code == 4, err
    assert _flag(json.loads(out)["flags"], "--max-model-len") == 65536


def test_the_cpu_target_with_a_kv_space(cli: Cli, kimi: Path) -> None:
    """--gpu cpu with --kv-cache-memory: the KV space is the flag's, blocks of 16 for MLA."""
    code, out, err = cli(
        "plan",
        kimi,
        "--engine",
        "vllm==0.32.0",
        "--gpu",
        "cpu",
        "--kv-cache-memory",
        "4GiB",
        "--json",
    )
    assert code in (0, 4), err
    launch = json.loads(out)["launch"]
    assert _flag(launch["flags"], "--kv-cache-memory-bytes") == 4 * 1024**3
    assert launch["kv_budget"]["block_size"] == 16


def test_without_a_kv_space_the_cpu_memory_is_unknown(cli: Cli, kimi: Path) -> None:
    code, out, err = cli("plan", kimi, "--engine", "vllm==0.32.0", "--gpu", "cpu", "--json")
    launch = json.loads(out)["launch"]
    assert launch["kv_budget"] is None and "memory unknown" in launch["memory_note"]
    assert "--max-model-len" not in launch["flags"]


@pytest.mark.parametrize(
    ("line", "pointer"),
    [
        ("tensor_parallel = 0", "/tensor_parallel"),
        ('kv_cache_memory = "lots"', "/kv_cache_memory"),
        ("gpu_memory_utilization = 1.5", "/gpu_memory_utilization"),
        ("max_model_len = true", "/max_model_len"),
        ("weights = [1]", "/weights"),
    ],
)
def test_a_bad_launch_field_in_a_profile_names_its_pointer(
    cli: Cli, kimi: Path, tmp_path: Path, line: str, pointer: str
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(f'engine = "vllm==0.16.0"\ngpu = "rtx-pro-6000"\n{line}\n')
    code, _, err = cli("plan", kimi, "--profile", profile)
    assert code == 1
    assert str(profile) in err and pointer in err and "Traceback" not in err


def test_profile_launch_fields_reach_the_flags(cli: Cli, kimi: Path, tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(
        'engine = "vllm==0.16.0"\ngpu = "rtx-pro-6000"\ntensor_parallel = 8\n'
        "pipeline_parallel = 2\ngpu_memory_utilization = 0.95\n"
    )
    code, out, err = cli("plan", kimi, "--profile", profile, "--json")
    assert code == 4, err
    flags = json.loads(out)["flags"]
    assert _flag(flags, "--pipeline-parallel-size") == 2
    assert flags[flags.index("--gpu-memory-utilization") + 1] == "0.95"


def test_doctor_leaves_out_a_context_edit_the_logs_version_ignores(
    kimi: Path, tmp_path: Path
) -> None:
    """The seed's KV-memory log from vLLM 0.16 with the Kimi checkpoint: the YaRN rule of 0.16
    ignores max_position_embeddings, so set-context-length is not offered; the flag is."""
    log = tmp_path / "vllm.log"
    log.write_text(
        "INFO 01-20 13:00:00 [api_server.py:1] vLLM API server version 0.16.0\n"
        "ValueError: To serve at least one request with the model's max seq len (262144), "
        "(17.16 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(11.73 GiB). Based on the available memory, the estimated maximum model length is "
        "179296. Try increasing `gpu_memory_utilization` or decreasing `max_model_len`\n"
    )
    found = diagnose(log, checkpoint=kimi)
    texts = [f.text for f in found.fixes]
    assert "--max-model-len 179200" in texts
    assert not any("set-context-length" in t for t in texts)
    unjudged = diagnose(log)
    assert any("set-context-length" in f.text for f in unjudged.fixes)


def test_sync_keeps_what_was_applied_by_hand_unless_prune(cli: Cli, kimi: Path) -> None:
    """sync owns what a target brought in: a transform applied by hand that the target does
    not need stays (plan lists it as kept), and --prune reverts it."""
    code, _, err = cli("apply", kimi, "set-context-length", "--set", "length=65536")
    assert code == 0, err
    patched = tree_bytes(kimi)
    h200 = ("--engine", "vllm==0.33.0", "--gpu", "h200", "--tp", "8")
    code, out, err = cli("plan", kimi, *h200)
    assert code == 0, err
    assert "kept: set-context-length (entry 1), applied by hand" in out
    code, out, err = cli("sync", kimi, *h200)
    assert code == 0 and tree_bytes(kimi) == patched
    code, out, err = cli("plan", kimi, *h200, "--prune", "--json")
    assert code == 4 and json.loads(out)["actions"][0]["action"] == "revert"
    code, _, err = cli("sync", kimi, *h200, "--prune")
    assert code == 0, err
    assert tree_bytes(kimi) == tree_bytes(EXAMPLE)


def test_check_with_tp_judges_memory_and_its_fix_is_what_run_accepts(cli: Cli, kimi: Path) -> None:
    """check --tp: after strip-fp8-kv-cache the context does not fit; the printed fix is a
    server command line that plan and run agree with (run adds nothing and refuses nothing)."""
    code, _, err = cli("apply", kimi, "strip-fp8-kv-cache")
    assert code == 0, err
    code, out, err = cli("check", kimi, *TARGET, "--json")
    assert code == 1, err
    finding = next(f for f in json.loads(out)["findings"] if f["code"] == "kv-memory")
    argv = finding["command"].split()
    assert argv[:3] == ["vllm", "serve", str(kimi)]
    code, out, err = cli(
        "run",
        "--engine",
        "vllm==0.16.0",
        "--gpu",
        "rtx-pro-6000",
        "--dry-run",
        "--json",
        "--",
        *argv,
    )
    assert code == 0, err
    assert json.loads(out)["added_flags"] == []
    code, out, _ = cli("check", kimi, "--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000")
    assert "kv-memory" not in out  # without --tp the memory is not judged


def test_a_flag_given_with_a_profile_says_what_it_overrides(
    cli: Cli, kimi: Path, tmp_path: Path
) -> None:
    """Issue 32 item 11: --tp with --profile wins, and plan says so (never silently)."""
    profile = tmp_path / "p.toml"
    profile.write_text('engine = "vllm==0.16.0"\ngpu = "rtx-pro-6000"\ntensor_parallel = 8\n')
    code, out, _ = cli("plan", kimi, "--profile", profile, "--tp", "4")
    assert "note: a flag overrides the profile: tensor_parallel 4 (the profile says 8)" in out
    said = json.loads(cli("plan", kimi, "--profile", profile, "--tp", "4", "--json")[1])
    assert said["overridden"] == [{"key": "tensor_parallel", "given": 4, "profile": 8}]
    code, out, _ = cli("plan", kimi, "--profile", profile, "--tp", "8", "--json")
    assert json.loads(out)["overridden"] == []


def test_a_bf16_kv_cache_chosen_keeps_the_files_as_shipped(cli: Cli, kimi: Path) -> None:
    """The other fix for the first failure: --kv-cache-dtype bfloat16 instead of the strip.
    plan edits nothing, judges the memory in bf16 (the same cap as after the strip) and puts
    the flag in the command line; a checkpoint synced with the strip gets it reverted."""
    code, out, err = cli("plan", kimi, *TARGET, "--json")
    stripped = json.loads(out)
    assert code == 4, err
    assert "plan with --kv-cache-dtype bfloat16" in stripped["actions"][0]["reason"]
    before = tree_bytes(kimi)
    code, out, err = cli("plan", kimi, *TARGET, "--kv-cache-dtype", "bfloat16", "--json")
    assert code == 0, err
    chosen = json.loads(out)
    assert chosen["in_sync"] and chosen["actions"] == []
    assert chosen["argv"][-2:] == ["--kv-cache-dtype", "bfloat16"]
    assert _flag(chosen["flags"], "--max-model-len") == _flag(stripped["flags"], "--max-model-len")
    assert chosen["launch"]["kv_budget"]["element_bytes"] == 2
    assert tree_bytes(kimi) == before
    assert cli("sync", kimi, *TARGET)[0] == 0
    code, out, err = cli("sync", kimi, *TARGET, "--kv-cache-dtype", "bfloat16")
    assert code == 0, err
    assert "revert strip-fp8-kv-cache" in out and tree_bytes(kimi) == before


def test_an_fp8_kv_cache_chosen_where_no_backend_takes_it_is_refused(
    cli: Cli, kimi: Path, tmp_path: Path
) -> None:
    """vLLM 0.16 on SM120 runs no FP8 MLA: the strip cannot help a cache the flag forces to
    fp8, so plan and sync refuse the choice (exit 1, the profile's line named, nothing
    written). vLLM 0.33 takes it, in half the bytes."""
    profile = tmp_path / "p.toml"
    profile.write_text(
        'engine = "vllm==0.16.0"\ngpu = "rtx-pro-6000"\ntensor_parallel = 8\n'
        'kv_cache_dtype = "fp8"\n'
    )
    before = tree_bytes(kimi)
    plan_code, _, plan_err = cli("plan", kimi, "--profile", profile)
    sync_code, _, sync_err = cli("sync", kimi, "--profile", profile)
    assert plan_code == sync_code == 1 and plan_err == sync_err
    assert "/kv_cache_dtype" in plan_err and "choose bfloat16" in plan_err
    assert tree_bytes(kimi) == before and not (kimi / ".patcher").exists()
    code, out, err = cli(
        "plan", kimi, "--engine", "vllm==0.33.0", "--gpu", "rtx-pro-6000", "--tp", "8",
        "--kv-cache-dtype", "fp8", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["launch"]["kv_budget"]["element_bytes"] == 1


def test_the_flags_always_passed_end_the_command_line(cli: Cli, kimi: Path, tmp_path: Path) -> None:
    """A profile's flags (and the CLI's after --) are passed as given, after the planned ones;
    a launch setting among them is planned like the field."""
    profile = tmp_path / "p.toml"
    profile.write_text(
        'engine = "vllm==0.16.0"\ngpu = "rtx-pro-6000"\n'
        'flags = ["-tp", "8", "--served-model-name", "kimi", "--enable-prefix-caching"]\n'
    )
    code, out, err = cli("plan", kimi, "--profile", profile, "--json")
    assert code == 4, err
    plan = json.loads(out)
    assert _flag(plan["flags"], "--tensor-parallel-size") == 8
    assert plan["flags"][-3:] == ["--served-model-name", "kimi", "--enable-prefix-caching"]
    assert plan["launch"]["passed_flags"] == plan["flags"][-3:]
    code, out, err = cli("plan", kimi, *TARGET, "--", "--enforce-eager")
    assert code == 4, err
    assert "your flags, passed as given (not judged): --enforce-eager" in out
    assert out.rstrip().endswith("--enforce-eager")


def test_sync_rebuilds_once_and_refuses_before_it_writes(
    cli: Cli, kimi: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the first sync, a sync plans under its lock only (no proof of the plan
    first), and a launch it refuses (a context above what the engine derives) is refused
    with the checkpoint and its journal as they were."""
    from patcher.ops import sync as planning

    assert cli("apply", kimi, "drop-auto-map")[0] in (0, 3)
    proofs: list[object] = []
    real = planning._proven_plan
    monkeypatch.setattr(planning, "_proven_plan", lambda *a, **k: proofs.append(a) or real(*a, **k))
    journal = (kimi / ".patcher" / "journal.json").read_bytes()
    before = tree_bytes(kimi)
    code, _, err = cli("sync", kimi, *TARGET, "--max-model-len", "300000")
    assert code == 1 and "max_model_len 300000 is above the 262144" in err
    assert tree_bytes(kimi) == before
    assert (kimi / ".patcher" / "journal.json").read_bytes() == journal
    code, out, err = cli("sync", kimi, *TARGET)
    assert code == 0 and "apply strip-fp8-kv-cache: done" in out, err
    assert "--max-model-len" in out and proofs == []


def test_a_secret_among_the_flags_never_reaches_the_journal(cli: Cli, kimi: Path) -> None:
    code, out, err = cli("sync", kimi, *TARGET, "--", "--api-key", "sk-secret")
    assert code == 0, err
    assert out.rstrip().endswith("--api-key ***") and "sk-secret" not in out + err
    kept = [f for f in (kimi / ".patcher").rglob("*") if f.is_file()]
    assert kept and all(b"sk-secret" not in f.read_bytes() for f in kept)


def test_a_start_the_model_cannot_judge_says_unknown_not_in_sync_alone(
    cli: Cli, kimi: Path
) -> None:
    """SGLang's attention backends on a GPU are not modelled: plan (and run) print the command
    line with "starts: unknown", as check does, never only "in sync". vLLM's are modelled."""
    sglang = ("--engine", "sglang==0.5.23", "--tp", "8")
    code, out, _ = cli("plan", kimi, *sglang, "--gpu", "rtx-pro-6000")
    assert code == 0
    assert "starts: unknown: which SGLang attention backend" in out
    launch = json.loads(cli("plan", kimi, *sglang, "--gpu", "h200", "--json")[1])["launch"]
    assert launch["unknowns"] and "SGLang attention backend" in launch["unknowns"][0]
    code, out, _ = cli("plan", kimi, *TARGET, "--kv-cache-dtype", "bfloat16")
    assert code == 0 and "starts:" not in out
    assert json.loads(cli("plan", kimi, *TARGET, "--json")[1])["launch"]["unknowns"] == []


def test_an_auto_context_is_the_engines_to_fit_and_plan_caps_nothing(
    cli: Cli, kimi: Path, tmp_path: Path
) -> None:
    """--max-model-len auto (doctor's fix for a context that does not fit, vLLM 0.14 and
    later): plan passes it, adds no cap of its own, and says what the engine's fit will find
    by patcher's estimate. In a profile's flags it is kept in the command line, not dropped."""
    code, out, err = cli("plan", kimi, *TARGET, "--max-model-len", "auto", "--json")
    assert code == 4, err
    plan = json.loads(out)
    assert plan["flags"] == ["--tensor-parallel-size", "8", "--max-model-len", "auto"]
    assert plan["launch"]["max_model_len"] is None
    assert "about 183,808 tokens fit" in plan["launch"]["context_note"]
    profile = tmp_path / "p.toml"
    profile.write_text(
        'engine = "vllm==0.16.0"\ngpu = "rtx-pro-6000"\ntensor_parallel = 8\n'
        'flags = ["--max-model-len=-1", "--enforce-eager"]\n'
    )
    code, out, _ = cli("plan", kimi, "--profile", profile)
    assert code == 4
    assert out.rstrip().endswith("--max-model-len auto --enforce-eager")
    # Given twice, differently, it is refused naming both.
    code, _, err = cli("plan", kimi, "--profile", profile, "--max-model-len", "131072")
    assert code == 1 and "--max-model-len -1" in err and "131072" in err


def test_an_auto_context_is_refused_where_the_release_has_none(cli: Cli, kimi: Path) -> None:
    code, _, err = cli(
        "plan", kimi, "--engine", "vllm==0.13.0", "--gpu", "h200", "--max-model-len", "auto"
    )
    assert code == 1 and "vllm==0.13.0 has no --max-model-len auto" in err
    code, _, err = cli(
        "plan", kimi, "--engine", "sglang==0.5.23", "--gpu", "h200", "--max-model-len", "auto"
    )
    assert code == 1 and "sglang==0.5.23 has no --max-model-len auto" in err


def test_a_context_in_thousands_reads_as_vllm_reads_it(cli: Cli, kimi: Path) -> None:
    """128K is 131,072 tokens and 128k 128,000 (vLLM's human_readable_int)."""
    for word, tokens in (("128K", "131072"), ("128k", "128000")):
        code, out, _ = cli("plan", kimi, *TARGET, "--max-model-len", word, "--json")
        assert code == 4 and json.loads(out)["flags"][-1] == tokens
    code, _, err = cli("plan", kimi, *TARGET, "--max-model-len", "1.5K")
    assert code == 2 and "give N, 128k, 128K or auto" in err


def test_a_kv_space_in_bytes_is_refused_where_the_server_cannot_be_given_it(
    cli: Cli, kimi: Path
) -> None:
    """SGLang has no --kv-cache-memory-bytes: judging memory by it would be judging a cache the
    server never gets. plan, check and kv-budget refuse it alike, and write nothing."""
    before = tree_bytes(kimi)
    sglang = ("--engine", "sglang==0.5.23", "--gpu", "h200", "--kv-cache-memory", "1GiB")
    for command in ("plan", "check", "kv-budget"):
        code, _, err = cli(command, kimi, *sglang)
        assert code == 1, (command, err)
        assert "sglang==0.5.23 has no --kv-cache-memory-bytes" in err, command
    assert tree_bytes(kimi) == before


@pytest.mark.parametrize(
    ("model", "gpu"),
    [("devstral-small-2507", "l4"), ("kimi", "h100")],  # 43.9 and 584 GiB of weights per GPU
)
def test_no_go_ahead_where_no_kv_cache_fits(
    cli: Cli, kimi: Path, model_checkpoint: object, model: str, gpu: str
) -> None:
    """A launch that cannot start at any context gets no start command and no exit 0: plan
    says "does not start" and exits 1; sync and run refuse before anything is written or
    started, naming the plan that shows why; check says "starts: no" alike."""
    root = kimi if model == "kimi" else model_checkpoint(model)  # type: ignore[operator]
    before = tree_bytes(root)
    target = ["--engine", "vllm==0.16.0", "--gpu", gpu]
    code, out, _ = cli("plan", root, *target)
    assert code == 1 and "start the server with" not in out
    assert out.splitlines()[-1].startswith(
        f"does not start: no KV cache fits on vllm==0.16.0 on {gpu}"
    )
    assert json.loads(cli("plan", root, *target, "--json")[1])["launch"]["problem"]
    code, _, err = cli("sync", root, *target)
    assert code == 1 and err.startswith("error: the server cannot start: no KV cache fits")
    assert f"next: patcher plan {root} --engine vllm==0.16.0 --gpu {gpu} shows why" in err
    assert cli("sync", root, *target, "--dry-run")[0] == 1
    code, _, err = cli("run", *target, "--dry-run", "--", "vllm", "serve", root)
    assert code == 1 and "the server cannot start" in err
    assert tree_bytes(root) == before
    code, out, _ = cli("check", root, *target, "--tp", "1")
    assert code == 1 and "starts          no" in out


def test_a_tensor_parallel_size_that_does_not_divide_the_heads_does_not_start(
    cli: Cli, model_checkpoint: object
) -> None:
    """vLLM refuses --tensor-parallel-size 3 for 40 attention heads before loading a weight
    (ModelConfig.verify_with_parallel_config, every release read): check says "starts: no"
    with the sizes that divide, plan gives no start command, sync refuses; 4 starts."""
    root: Path = model_checkpoint("deepseek-r1-distill-qwen-32b")  # type: ignore[operator]
    target = ["--engine", "vllm==0.16.0", "--gpu", "h100"]
    code, out, _ = cli("check", root, *target, "--tp", "3")
    assert code == 1 and "starts          no" in out
    assert (
        "Total number of attention heads (40) must be divisible by tensor parallel size (3)" in out
    )
    assert "--tensor-parallel-size 1 or 2 or 4 or 8 divides 40 heads" in out
    code, out, _ = cli("plan", root, *target, "--tp", "3")
    assert code == 1 and "start the server with" not in out
    assert "does not start: vllm==0.16.0 refuses the parallel size" in out
    assert cli("sync", root, *target, "--tp", "3")[0] == 1
    code, out, _ = cli("plan", root, *target, "--tp", "4")
    assert code == 0 and "vllm serve" in out and "--tensor-parallel-size 4" in out


def test_check_reports_the_failure_its_fix_leads_to(cli: Cli, tmp_path: Path) -> None:
    """The README's story at once: the FP8 KV directive, and the BF16 context that then does
    not fit. Each printed command keeps the 8 GPUs, runs as pasted (a path with a space is
    quoted once), and run takes the last one as it is; the plan it names gives both fixes."""
    import shlex

    ckpt = tmp_path / "my models" / "kimi"
    shutil.copytree(EXAMPLE, ckpt)
    code, out, err = cli("check", ckpt, *TARGET, "--json")
    assert code == 1, err
    found = json.loads(out)["findings"]
    assert [f["code"] for f in found[:2]] == ["engine-startup-error", "kv-memory"]
    assert "leads to the next problem" in found[0]["note"]
    assert found[1]["message"].startswith("after the fix above (a bfloat16 KV cache)")
    assert shlex.split(found[0]["command"])[2] == str(ckpt)
    for command in (found[0]["alternatives"][0], found[1]["command"]):
        words = shlex.split(command)
        assert words[2] == str(ckpt) and words[3:5] == ["--tensor-parallel-size", "8"]
    last = shlex.split(found[1]["command"])
    assert last[-2] == "--max-model-len"
    code, out, err = cli("run", *TARGET[:4], "--dry-run", "--json", "--", *last)
    assert code == 0, err
    assert json.loads(out)["added_flags"] == [] and json.loads(out)["plan"]["in_sync"]
    plan = shlex.split(found[1]["note"].split(" gives both")[0])
    code, out, err = cli(*plan[1:])
    assert code == 4, err
    assert "apply strip-fp8-kv-cache" in out and f"--max-model-len {last[-1]}" in out


def test_a_parser_the_release_does_not_register_gets_no_go_ahead(
    cli: Cli, model_checkpoint: object
) -> None:
    """vLLM's argparse refuses a --tool-call-parser its registry lacks before the server
    starts; the registries are read per release (vllm_releases.json): run gives no go-ahead
    for a name the release does not register, names the release that does, and starts one
    it does."""
    from patcher.engines.readings import vllm_readings

    root: Path = model_checkpoint("deepseek-r1-distill-qwen-32b")  # type: ignore[operator]
    read = vllm_readings()
    at = read[(0, 16, 0)]
    later = sorted(set().union(*(r.tool_parsers for r in read.values())) - at.tool_parsers)[0]
    since = ".".join(map(str, next(v for v, r in read.items() if later in r.tool_parsers)))
    target = ["--engine", "vllm==0.16.0", "--gpu", "h100", "--dry-run"]
    serve = ["--", "vllm", "serve", str(root), "--tensor-parallel-size", "2"]
    code, _, err = cli("run", *target, *serve, "--tool-call-parser", later)
    assert code == 1 and "the server cannot start" in err
    assert f"invalid choice: '{later}'" in err and f"vLLM {since} and later" in err
    assert f"-- --tool-call-parser {later} shows why" in err  # the plan that shows it
    code, out, _ = cli(
        "plan",
        root,
        "--engine",
        "vllm==0.16.0",
        "--gpu",
        "h100",
        "--tp",
        "2",
        "--",
        "--tool-call-parser",
        later,
    )
    assert code == 1 and "does not start" in out and "start the server with" not in out
    known = sorted(at.tool_parsers)[0]
    assert cli("run", *target, *serve, "--tool-call-parser", known)[0] == 0
