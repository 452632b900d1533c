"""Targets, plan and sync on the real configs in snapshots/ (the lifecycle issue)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from patcher import api
from patcher.engines.target import make_target
from tests.conftest import CONFIGS, SNAPSHOTS, Cli, tree_bytes


def _sync(cli: Cli, root: Path, *target: str) -> dict[str, object]:
    code, out, err = cli("sync", root, *target, "--json")
    assert code == 0, err
    result: dict[str, object] = json.loads(out)
    return result


def _plan(cli: Cli, root: Path, *target: str) -> tuple[int, dict[str, object]]:
    code, out, _ = cli("plan", root, *target, "--json")
    return code, json.loads(out)


def test_kimi_hardware_and_engine_changes(cli: Cli, kimi: Path) -> None:
    upstream = tree_bytes(kimi)
    sm120 = ("--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--tp", "8")
    code, plan = _plan(cli, kimi, *sm120)
    assert code == 4
    (action,) = plan["actions"]  # type: ignore[misc]
    assert action["action"] == "apply" and action["name"] == "strip-fp8-kv-cache"
    assert "No valid attention backend" in action["reason"]
    _sync(cli, kimi, *sm120)
    patched = tree_bytes(kimi)
    assert patched != upstream
    code, plan = _plan(cli, kimi, *sm120)
    assert code == 0 and plan["actions"] == [] and plan["in_sync"] is True
    status = json.loads(cli("status", kimi, "--json")[1])
    assert status["applied"][0]["target"] == {
        "engine": "vllm==0.16.0",
        "gpu": "rtx-pro-6000",
        "tensor_parallel": 8,
    }
    # Hardware change: FlashMLA takes FP8 KV on an H200.
    code, plan = _plan(cli, kimi, "--engine", "vllm==0.16.0", "--gpu", "h200", "--tp", "8")
    assert code == 4 and [a["action"] for a in plan["actions"]] == ["revert"]  # type: ignore[union-attr]
    # The revert shows what it puts back, file by file (JSON and text alike).
    undoes = plan["actions"][0]["undoes"]  # type: ignore[index]
    assert {u["path"] for u in undoes} == {"config.json", "hf_quant_config.json"}
    assert {"op": "replace", "path": "/quantization/kv_cache_quant_algo", "value": "FP8"} in [
        op for u in undoes for op in u["patch"]
    ]
    text = cli("plan", kimi, "--engine", "vllm==0.16.0", "--gpu", "h200", "--tp", "8")[1]
    assert 'hf_quant_config.json: replace /quantization/kv_cache_quant_algo = "FP8"' in text
    _sync(cli, kimi, "--engine", "vllm==0.16.0", "--gpu", "h200", "--tp", "8")
    assert tree_bytes(kimi) == upstream
    # Back to SM120 on 0.16, then an engine upgrade whose Triton MLA takes FP8 (0.18).
    _sync(cli, kimi, *sm120)
    assert tree_bytes(kimi) == patched
    _sync(cli, kimi, "--engine", "vllm==0.18.0", "--gpu", "rtx-pro-6000", "--tp", "8")
    assert tree_bytes(kimi) == upstream
    assert (
        _sync(cli, kimi, "--engine", "vllm==0.18.0", "--gpu", "rtx-pro-6000", "--tp", "8")[
            "actions"
        ]
        == []
    )


def test_profile_transforms_apply_reapply_and_revert(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "qwen"
    shutil.copytree(CONFIGS / "deepseek-r1-distill-qwen-32b", root)
    upstream = tree_bytes(root)
    profile = tmp_path / "profile.toml"
    base = 'engine = "vllm==0.16.0"\ngpu = "h100"\ntensor_parallel = 2\n'
    profile.write_text(base + "[transforms]\nset-context-length = { length = 32768 }\n")
    first = _sync(cli, root, "--profile", profile)
    assert [(a["action"], a["name"]) for a in first["actions"]] == [  # type: ignore[union-attr]
        ("apply", "set-context-length")
    ]
    assert json.loads((root / "config.json").read_text())["max_position_embeddings"] == 32768
    assert _sync(cli, root, "--profile", profile)["actions"] == []  # idempotent
    profile.write_text(base + "[transforms]\nset-context-length = { length = 16384 }\n")
    code, plan = _plan(cli, root, "--profile", profile)
    assert code == 4 and plan["actions"][0]["action"] == "reapply"  # type: ignore[index]
    _sync(cli, root, "--profile", profile)
    assert json.loads((root / "config.json").read_text())["max_position_embeddings"] == 16384
    assert len(api.status(root).applied) == 1
    profile.write_text(base)
    _sync(cli, root, "--profile", profile)
    assert tree_bytes(root) == upstream


def test_sync_dry_run_writes_nothing(cli: Cli, kimi: Path) -> None:
    before = tree_bytes(kimi)
    code, out, _ = cli("sync", kimi, "--engine", "vllm==0.16.0", "--gpu", "12.0", "--dry-run")
    assert code == 0 and "dry run: nothing was written" in out
    assert tree_bytes(kimi) == before and not (kimi / ".patcher").exists()


def test_sync_refuses_an_edit_the_engine_ignores_and_changes_nothing(
    cli: Cli, kimi: Path, tmp_path: Path
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(
        'engine = "vllm==0.16.0"\ngpu = "rtx-pro-6000"\n'
        "[transforms]\nset-context-length = { length = 131072 }\n"
    )
    before = tree_bytes(kimi)
    code, _, err = cli("sync", kimi, "--profile", profile)
    assert code == 1 and "--max-model-len 131072" in err
    assert tree_bytes(kimi) == before  # the strip it had applied first was undone
    assert api.status(kimi).applied == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('gpu = "h100"\n', "no engine"),
        ('engine = "vllm==0.16.0"\ngpu = "h100"\ncolour = 1\n', "unknown key"),
        (
            'engine = "vllm==0.16.0"\ngpu = "h100"\ntensor_parallel = 0\n',
            "an integer from 1 to 4096",
        ),
        ('engine = "vllm==0.16.0"\ngpu = "h100"\n[transforms]\nx = 1\n', "expected a table"),
        ("engine = [", "invalid TOML"),
        (
            'engine = "vllm==0.16.0"\ngpu = "h100"\n[transforms]\nnope = {}\n',
            "at /transforms/nope (JSON pointer): unknown transform 'nope'; next: patcher list",
        ),
        (
            'engine = "vllm==0.16.0"\ngpu = "h100"\n[transforms]\n'
            'set-context-length = { length = "x" }\n',
            "at /transforms/set-context-length (JSON pointer): set-context-length: parameter "
            "'length': expected an integer",
        ),
        (
            'engine = "vllm==0.16.0"\ngpu = "h100"\n[transforms]\n'
            "set-context-length = { length = 1979-05-27 }\n",
            "at /transforms/set-context-length/length (JSON pointer): TOML dates",
        ),
        (  # a quoted number in TOML is a string: refused, not read as the number
            'engine = "vllm==0.33.0"\ngpu = "h100"\n[transforms]\n'
            'set-context-length = { length = "131072" }\n',
            "at /transforms/set-context-length (JSON pointer): set-context-length: parameter "
            "'length': expected an integer, got the string '131072' (write it without quotes)",
        ),
    ],
)
def test_bad_profiles_are_refused(
    cli: Cli, kimi: Path, tmp_path: Path, text: str, message: str
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(text)
    code, _, err = cli("plan", kimi, "--profile", profile)
    assert code == 1 and message in err and str(profile) in err
    assert len(err.strip().splitlines()) == 1


def test_library_plan_and_sync_return_values(kimi: Path) -> None:
    target = make_target(engine="vllm==0.16.0", gpu="rtx-pro-6000", tensor_parallel=8)
    plan = api.plan(kimi, target)
    assert [a.name for a in plan.actions] == ["strip-fp8-kv-cache"] and not plan.in_sync
    result = api.sync(kimi, target)
    assert result.applied and api.plan(kimi, target).in_sync


def test_check_names_rebase_instead_of_the_already_applied_dead_end(cli: Cli, kimi: Path) -> None:
    cli("apply", kimi, "strip-fp8-kv-cache")
    upstream = (SNAPSHOTS / "example" / "kimi-k2.5-nvfp4" / "config.json").read_text()
    (kimi / "config.json").write_text(upstream.replace('"4.57.1"', '"4.58.0"'))
    code, out, _ = cli("check", kimi)
    assert code == 1 and f"fix: patcher rebase {kimi}" in out
    assert "patcher apply" not in out.split("fp8-kv-directive")[1].splitlines()[1]
    code, _, _ = cli("rebase", kimi)
    code, out, _ = cli("check", kimi)
    assert "fp8-kv-directive" not in out


def test_check_names_reapply_when_a_re_download_undid_the_transform(cli: Cli, kimi: Path) -> None:
    """The upstream bytes came back (not a new upstream): check named rebase and "new upstream
    files?"; the command for that is reapply."""
    cli("apply", kimi, "strip-fp8-kv-cache")
    shutil.copy(SNAPSHOTS / "example" / "kimi-k2.5-nvfp4" / "config.json", kimi / "config.json")
    code, out, _ = cli("check", kimi)
    fix = f"fix: patcher reapply {kimi}\n"  # the command alone, pasteable; the why in its note
    assert code == 1 and fix in out and "rebase" not in out
    assert "note: strip-fp8-kv-cache is applied; the files were re-downloaded" in out
    assert cli("reapply", kimi)[0] == 0
    assert cli("check", kimi)[0] == 0


SM120 = ("--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--tp", "8")


def test_sync_restores_a_transform_a_re_download_undid(cli: Cli, kimi: Path) -> None:
    """A re-download put config.json's upstream bytes (and the FP8 KV-cache directive) back.
    plan and sync said "in sync: nothing to do", and the server failed on its GPU again."""
    upstream = tree_bytes(kimi)
    _sync(cli, kimi, *SM120)
    patched = tree_bytes(kimi)
    (kimi / "config.json").write_bytes(upstream["config.json"])  # type: ignore[arg-type]
    code, plan = _plan(cli, kimi, *SM120)
    assert code == 4 and plan["in_sync"] is False
    (action,) = plan["actions"]  # type: ignore[misc]
    assert action["action"] == "restore" and action["name"] == "strip-fp8-kv-cache"
    assert action["reason"] == "config.json is back to the upstream bytes (re-downloaded?)"
    code, out, err = cli("sync", kimi, *SM120)
    assert code == 0 and "restore strip-fp8-kv-cache: done" in out, err
    assert tree_bytes(kimi) == patched
    assert _plan(cli, kimi, *SM120)[0] == 0
    api.revert(kimi, every=True)
    assert tree_bytes(kimi) == upstream


def test_plan_shows_a_hand_edit_and_sync_refuses_it(cli: Cli, kimi: Path) -> None:
    _sync(cli, kimi, *SM120)
    config = kimi / "config.json"
    config.write_text(config.read_text().replace('"4.57.1"', '"4.57.2"'))
    before = tree_bytes(kimi)
    code, out, _ = cli("plan", kimi, *SM120)
    assert code == 4
    assert "config.json: changed since patched (hand edit?)" in out
    code, plan = _plan(cli, kimi, *SM120)
    assert plan["actions"] == [] and plan["drift"] == [{"path": "config.json", "state": "changed"}]
    code, _, err = cli("sync", kimi, *SM120)
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert f"{config}: changed since patched; sync rebuilds" in err
    assert tree_bytes(kimi) == before


def test_an_overlay_whose_source_has_a_new_upstream(cli: Cli, kimi: Path, tmp_path: Path) -> None:
    """The read-only store got a new revision of config.json under the overlay's patched copy:
    status said "patched as recorded" and sync "in sync", serving the old revision's config."""
    out = tmp_path / "overlay"
    code, _, err = cli("sync", kimi, *SM120, "--overlay", out)
    assert code == 0, err
    config = kimi / "config.json"
    config.write_text(config.read_text().replace('"4.57.1"', '"4.58.0"'))
    new_upstream = config.read_bytes()
    code, text, _ = cli("status", out, "--check")
    assert code == 1 and "config.json           new upstream version" in text
    code, _, err = cli("sync", kimi, *SM120, "--overlay", out)
    assert code == 1 and f"next: patcher rebase {out}, then run it again" in err
    code, text, err = cli("rebase", out)
    assert code == 0 and "strip-fp8-kv-cache: re-applied" in text, err
    patched = json.loads((out / "config.json").read_text())
    assert patched["transformers_version"] == "4.58.0"
    assert "kv_cache_scheme" not in patched["quantization_config"]
    code, text, _ = cli("sync", kimi, *SM120, "--overlay", out)
    assert code == 0 and "in sync" in text
    assert cli("revert", out, "--all")[0] == 0
    assert (out / "config.json").is_symlink() and (out / "config.json").read_bytes() == new_upstream
