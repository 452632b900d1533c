"""Fleets: the Ansible collection (through ansible-playbook -c local, as a user runs it) and the
Kubernetes init-container recipe (its exact command, against a read-only model store)."""

from __future__ import annotations

import difflib
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT, SNAPSHOTS, tree_bytes

BIN = Path(sys.executable).parent
KIMI = SNAPSHOTS / "example" / "kimi-k2.5-nvfp4"


@pytest.fixture(scope="module")
def collections(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The collection installed the way the README says: ansible-galaxy from ./ansible."""
    where = tmp_path_factory.mktemp("collections")
    subprocess.run(
        [BIN / "ansible-galaxy", "collection", "install", str(ROOT / "ansible"), "-p", where],
        check=True,
        capture_output=True,
    )
    return where


def playbook(
    collections: Path, tmp: Path, task: dict[str, Any], *flags: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run one task in a playbook against localhost; its registered result, and the output."""
    result = tmp / "result.json"
    result.unlink(missing_ok=True)
    play = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [
                {**task, "register": "out", "ignore_errors": True},
                {
                    "ansible.builtin.copy": {"content": "{{ out | to_json }}", "dest": str(result)},
                    "check_mode": False,
                    "diff": False,
                },
            ],
        }
    ]
    book = tmp / "play.yml"
    book.write_text(yaml.safe_dump(play))
    env = {
        **os.environ,
        "ANSIBLE_COLLECTIONS_PATH": str(collections),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_LOCAL_TEMP": str(tmp / "ansible-tmp"),
        "ANSIBLE_DEPRECATION_WARNINGS": "0",
    }
    done = subprocess.run(
        [
            BIN / "ansible-playbook",
            "-i",
            "localhost,",
            "-c",
            "local",
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            *flags,
            str(book),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.exists(), done.stdout + done.stderr
    return done, json.loads(result.read_text())


def unified(path: str, before: bytes, after: bytes) -> str:
    header = f"{path} (content)"
    return "".join(
        difflib.unified_diff(
            before.decode().splitlines(True),
            after.decode().splitlines(True),
            fromfile=f"before: {header}",
            tofile=f"after: {header}",
        )
    )


@pytest.fixture
def kimi_copy(tmp_path: Path) -> Path:
    return Path(shutil.copytree(KIMI, tmp_path / "kimi"))


def test_check_diff_shows_the_exact_diff_and_writes_nothing(
    collections: Path, tmp_path: Path, kimi_copy: Path
) -> None:
    before = tree_bytes(kimi_copy)
    task = {"patcher.patcher.transform": {"path": str(kimi_copy), "name": "strip-fp8-kv-cache"}}
    done, out = playbook(collections, tmp_path, task, "--check", "--diff")
    assert out["changed"] is True
    assert [a["action"] for a in out["actions"]] == ["apply"]
    assert out["applied"] == ["strip-fp8-kv-cache"]
    assert tree_bytes(kimi_copy) == before and not (kimi_copy / ".patcher").exists()
    # What --diff shows is the diff of the bytes a real run writes.
    real = tmp_path / "real"
    shutil.copytree(KIMI, real)
    subprocess.run([BIN / "patcher", "apply", real, "strip-fp8-kv-cache"], check=True)
    for name in ("config.json", "hf_quant_config.json"):
        expected = unified(name, (KIMI / name).read_bytes(), (real / name).read_bytes())
        assert expected in done.stdout


def test_a_real_run_is_idempotent_and_absent_gives_back_the_upstream_bytes(
    collections: Path, tmp_path: Path, kimi_copy: Path
) -> None:
    upstream = tree_bytes(kimi_copy)
    task = {"patcher.patcher.transform": {"path": str(kimi_copy), "name": "strip-fp8-kv-cache"}}
    _, first = playbook(collections, tmp_path, task)
    assert first["changed"] is True and first["entries"] == [1]
    assert (
        "kv_cache_scheme"
        not in json.loads((kimi_copy / "config.json").read_bytes())["quantization_config"]
    )
    _, second = playbook(collections, tmp_path, task)
    assert second["changed"] is False and second["entries"] == []
    absent = {"patcher.patcher.transform": {**task["patcher.patcher.transform"], "state": "absent"}}
    _, gone = playbook(collections, tmp_path, absent, "--diff")
    assert gone["changed"] is True and gone["applied"] == []
    assert [a["action"] for a in gone["actions"]] == ["revert"]
    assert tree_bytes(kimi_copy) == upstream
    _, again = playbook(collections, tmp_path, absent)
    assert again["changed"] is False


def test_a_bad_transform_name_fails_with_patchers_one_line_message(
    collections: Path, tmp_path: Path, kimi_copy: Path
) -> None:
    task = {"patcher.patcher.transform": {"path": str(kimi_copy), "name": "strip-fp9"}}
    done, out = playbook(collections, tmp_path, task)
    assert out["failed"] is True and out["changed"] is False
    cli = subprocess.run(
        [BIN / "patcher", "apply", kimi_copy, "strip-fp9"], capture_output=True, text=True
    )
    assert out["msg"] == cli.stderr.strip().removeprefix("error: ")
    assert "\n" not in out["msg"] and "Traceback" not in done.stdout + done.stderr
    assert out["hint"] == "patcher show strip-fp8-kv-cache"  # the nearest name


def test_sync_for_the_gpu_applies_strip_fp8_kv_cache_to_kimi(
    collections: Path, tmp_path: Path, kimi_copy: Path
) -> None:
    before = tree_bytes(kimi_copy)
    args = {
        "path": str(kimi_copy),
        "engine": "vllm==0.16.0",
        "gpu": "rtx-pro-6000",
        "tensor_parallel": 8,
    }
    task = {"patcher.patcher.sync": args}
    done, predicted = playbook(collections, tmp_path, task, "--check", "--diff")
    assert predicted["changed"] is True
    assert [(a["action"], a["name"]) for a in predicted["actions"]] == [
        ("apply", "strip-fp8-kv-cache")
    ]
    assert tree_bytes(kimi_copy) == before
    _, real = playbook(collections, tmp_path, task)
    assert real["changed"] is True and real["applied"] == ["strip-fp8-kv-cache"]
    assert (
        sorted(real["files"])
        == sorted(predicted["files"])
        == [
            "config.json",
            "hf_quant_config.json",
        ]
    )
    for name in real["files"]:
        expected = unified(name, before[name], (kimi_copy / name).read_bytes())  # type: ignore[arg-type]
        assert expected in done.stdout
    _, again = playbook(collections, tmp_path, task)
    assert again["changed"] is False and again["actions"] == []
    # Another GPU where the FP8 KV cache runs: the transform is no longer needed.
    _, moved = playbook(collections, tmp_path, {"patcher.patcher.sync": {**args, "gpu": "h200"}})
    assert [(a["action"], a["name"]) for a in moved["actions"]] == [
        ("revert", "strip-fp8-kv-cache")
    ]
    assert tree_bytes(kimi_copy) == before


def test_sync_returns_the_servers_flags_for_the_launch(
    collections: Path, tmp_path: Path, kimi_copy: Path
) -> None:
    """The module takes the launch fields by their profile names and returns the flags and
    the command line plan prints: a playbook can write them into a service unit."""
    args = {
        "path": str(kimi_copy),
        "engine": "vllm==0.16.0",
        "gpu": "rtx-pro-6000",
        "tensor_parallel": 8,
        "gpu_memory_utilization": 0.9,
    }
    _, real = playbook(collections, tmp_path, {"patcher.patcher.sync": args})
    plan = subprocess.run(
        [BIN / "patcher", "plan", kimi_copy, *TARGET_FLAGS, "--json"],
        capture_output=True,
        text=True,
    )
    assert real["flags"] == json.loads(plan.stdout)["flags"]
    assert "--max-model-len" in real["flags"] and real["argv"][:2] == ["vllm", "serve"]
    assert real["starts_unknown"] == []  # vLLM 0.16's backends on SM120 are modelled


def test_sync_says_what_it_cannot_tell_of_the_start(
    collections: Path, tmp_path: Path, kimi_copy: Path
) -> None:
    """SGLang's attention backends on a GPU are not modelled: the task returns why, beside the
    command line, so a play can stop before it starts a server patcher cannot vouch for."""
    args = {"path": str(kimi_copy), "engine": "sglang==0.5.23", "gpu": "h200", "tensor_parallel": 8}
    _, real = playbook(collections, tmp_path, {"patcher.patcher.sync": args})
    assert real["argv"][:3] == ["python", "-m", "sglang.launch_server"]
    assert "SGLang attention backend" in real["starts_unknown"][0]


def _bf16_story(kimi_copy: Path, flags: list[str]) -> dict[str, Any]:
    """The sync task's arguments for the story's 8 GPUs with a BF16 KV cache, and ``flags``."""
    return {
        "path": str(kimi_copy),
        "engine": "vllm==0.16.0",
        "gpu": "rtx-pro-6000",
        "tensor_parallel": 8,
        "kv_cache_dtype": "bfloat16",
        "flags": flags,
    }


def test_sync_takes_the_kv_dtype_and_the_flags_always_passed(
    collections: Path, tmp_path: Path, kimi_copy: Path
) -> None:
    """kv_cache_dtype bfloat16 keeps the files as shipped (no strip: changed false) and the
    flags end the command line, as plan gives them."""
    before = tree_bytes(kimi_copy)
    args = _bf16_story(kimi_copy, ["--served-model-name", "kimi"])
    _, real = playbook(collections, tmp_path, {"patcher.patcher.sync": args})
    assert real["changed"] is False and tree_bytes(kimi_copy) == before
    assert real["argv"][-4:] == ["--kv-cache-dtype", "bfloat16", "--served-model-name", "kimi"]


def test_sync_never_returns_a_secret_flags_value(
    collections: Path, tmp_path: Path, kimi_copy: Path
) -> None:
    """An --api-key among the flags is the server's: neither the registered result nor -vvv
    output holds it (no_log), and the rest of the command line is as plan gives it."""
    secret = "sk-live-4f2b9c"
    args = _bf16_story(kimi_copy, ["--api-key", secret])
    done, real = playbook(collections, tmp_path, {"patcher.patcher.sync": args}, "-vvv")
    assert secret not in json.dumps(real) and secret not in done.stdout + done.stderr
    assert real["argv"][:2] == ["vllm", "serve"] and "--api-key" in real["argv"]


def test_sync_puts_back_what_a_re_download_undid(
    collections: Path, tmp_path: Path, kimi_copy: Path
) -> None:
    """A provisioning run re-downloaded config.json (upstream bytes, FP8 KV-cache directive
    back) before the sync task, which then reported "ok" and the server failed again."""
    upstream = tree_bytes(kimi_copy)
    task = {
        "patcher.patcher.sync": {
            "path": str(kimi_copy),
            "engine": "vllm==0.16.0",
            "gpu": "rtx-pro-6000",
            "tensor_parallel": 8,
        }
    }
    playbook(collections, tmp_path, task)
    patched = tree_bytes(kimi_copy)
    (kimi_copy / "config.json").write_bytes(upstream["config.json"])  # type: ignore[arg-type]
    _, predicted = playbook(collections, tmp_path, task, "--check")
    assert predicted["changed"] is True and predicted["files"] == ["config.json"]
    assert [(a["action"], a["name"]) for a in predicted["actions"]] == [
        ("restore", "strip-fp8-kv-cache")
    ]
    _, real = playbook(collections, tmp_path, task)
    assert real["changed"] is True and real["applied"] == ["strip-fp8-kv-cache"]
    assert tree_bytes(kimi_copy) == patched


def test_sync_from_a_profile_fails_in_one_line_on_a_bad_profile(
    collections: Path, tmp_path: Path, kimi_copy: Path
) -> None:
    profile = tmp_path / "profile.toml"
    profile.write_text('engine = "vllm==0.16.0"\ngpu = "rtx-pro-6000"\ncolour = "blue"\n')
    task = {"patcher.patcher.sync": {"path": str(kimi_copy), "profile": str(profile)}}
    _, out = playbook(collections, tmp_path, task)
    assert out["failed"] is True
    assert out["msg"].startswith(f"{profile} at /colour (JSON pointer): unknown key")


def test_the_collection_compiles_under_ansible_test(tmp_path: Path) -> None:
    tree = tmp_path / "ansible_collections" / "patcher" / "patcher"
    shutil.copytree(ROOT / "ansible", tree)
    done = subprocess.run(
        [BIN / "ansible-test", "sanity", "--test", "compile", "--python", "3.11"],
        cwd=tree,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


TARGET_FLAGS = (
    "--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--tp", "8", "--gpu-utilization", "0.9"
)  # fmt: skip


def _init_command() -> list[str]:
    manifest = list(yaml.safe_load_all((ROOT / "deploy" / "vllm-with-patcher.yaml").read_text()))
    pod = next(d for d in manifest if d["kind"] == "Pod")
    script = pod["spec"]["initContainers"][0]["command"][-1]
    return shlex.split(script.split("&&")[-1])


def test_the_kubernetes_init_container_patches_an_overlay_of_a_read_only_store(
    tmp_path: Path,
) -> None:
    """The manifest's own command, with its mount points under tmp_path."""
    manifest = list(yaml.safe_load_all((ROOT / "deploy" / "vllm-with-patcher.yaml").read_text()))
    profile_text = next(d for d in manifest if d["kind"] == "ConfigMap")["data"]["profile.toml"]
    store = tmp_path / "models" / "Kimi-K2.5-NVFP4"
    shutil.copytree(KIMI, store)
    (tmp_path / "etc-patcher").mkdir()
    (tmp_path / "etc-patcher" / "profile.toml").write_text(profile_text)
    for path in [store, *store.iterdir()]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    upstream = tree_bytes(store)
    mounts = {
        "/models": str(tmp_path / "models"),
        "/overlay": str(tmp_path / "overlay"),
        "/etc/patcher": str(tmp_path / "etc-patcher"),
    }
    command = _init_command()
    assert command[:2] == ["patcher", "sync"]
    for prefix, real in mounts.items():
        command = [real + a[len(prefix) :] if a.startswith(prefix + "/") else a for a in command]
    try:
        for _ in (1, 2):
            done = subprocess.run([BIN / "patcher", *command[1:]], capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
        assert "in sync" in done.stdout  # a restarted pod does nothing
        overlay = tmp_path / "overlay" / "Kimi-K2.5-NVFP4"
        config = json.loads((overlay / "config.json").read_bytes())
        assert "kv_cache_scheme" not in config["quantization_config"]
        assert (overlay / "model-00001-of-00001.safetensors").is_symlink()
        assert tree_bytes(store) == upstream and not (store / ".patcher").exists()
        pod = next(d for d in manifest if d["kind"] == "Pod")
        assert pod["spec"]["containers"][0]["args"][1] == "/overlay/Kimi-K2.5-NVFP4"
    finally:
        for path in [store, *store.iterdir()]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)


def test_the_kubernetes_servers_flags_are_the_plans(tmp_path: Path) -> None:
    """The vLLM container starts with the flags plan prints for the manifest's own profile
    (with the example's weights): the context cap included, so the pod passes the KV check."""
    manifest = list(yaml.safe_load_all((ROOT / "deploy" / "vllm-with-patcher.yaml").read_text()))
    profile = tmp_path / "profile.toml"
    profile.write_text(
        next(d for d in manifest if d["kind"] == "ConfigMap")["data"]["profile.toml"]
    )
    done = subprocess.run(
        [BIN / "patcher", "plan", KIMI, "--profile", profile, "--json"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 4, done.stderr
    flags = json.loads(done.stdout)["flags"]
    pod = next(d for d in manifest if d["kind"] == "Pod")
    assert "--max-model-len" in flags
    assert pod["spec"]["containers"][0]["args"][2:] == flags
    mounts = {m["mountPath"] for m in pod["spec"]["containers"][0]["volumeMounts"]}
    assert "/dev/shm" in mounts and "readinessProbe" in pod["spec"]["containers"][0]


@pytest.mark.parametrize("module", ["transform", "sync"])
def test_ansible_doc_shows_each_module(collections: Path, module: str) -> None:
    done = subprocess.run(
        [BIN / "ansible-doc", f"patcher.patcher.{module}"],
        capture_output=True,
        text=True,
        env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(collections), "PAGER": "cat"},
    )
    assert done.returncode == 0, done.stderr
    assert "check_mode" in done.stdout and "diff_mode" in done.stdout
