"""The library's surface: results print short and give the CLI's JSON, every function takes
``revision=``, repository ids get a "did you mean", and errors carry their parts."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest

import patcher
from tests.conftest import Cli

COMMIT = "a" * 40


def _cache(root: Path, repo: str, source: Path, revision: str = "v2") -> Path:
    """A Hugging Face cache holding ``repo`` at ``revision`` (files copied from ``source``)."""
    folder = root / ("models--" + repo.replace("/", "--"))
    snapshot = folder / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    for path in source.iterdir():
        (snapshot / path.name).write_bytes(path.read_bytes())
    (folder / "refs").mkdir()
    (folder / "refs" / revision).write_text(COMMIT)
    return snapshot


def _cli_json(cli: Cli, *args: Any) -> Any:
    code, out, err = cli(*args, "--json")
    assert code in (0, 1, 4), err
    return json.loads(out)


def test_to_json_is_the_clis_json(cli: Cli, kimi: Path) -> None:
    dry = patcher.apply(kimi, "strip-fp8-kv-cache", dry_run=True)
    assert dry.to_json() == _cli_json(cli, "apply", kimi, "strip-fp8-kv-cache", "--dry-run")
    patcher.apply(kimi, "strip-fp8-kv-cache")
    assert patcher.status(kimi).to_json() == _cli_json(cli, "status", kimi)
    target = patcher.make_target(engine="vllm==0.16.0", gpu="h200")
    assert patcher.plan(kimi, target).to_json() == _cli_json(
        cli, "plan", kimi, "--engine", "vllm==0.16.0", "--gpu", "h200"
    )
    revert = patcher.revert(kimi, last=True, dry_run=True)
    assert revert.to_json() == _cli_json(cli, "revert", kimi, "--last", "--dry-run")


def test_results_print_short(kimi: Path) -> None:
    """Printing a result used to dump every file's bytes (about 40 KB for this checkpoint)."""
    patcher.apply(kimi, "strip-fp8-kv-cache")
    result = patcher.revert(kimi, last=True)
    text = repr(result)
    assert len(text) < 400 and "kv_cache_scheme" not in text
    assert text.startswith("RevertResult(outcome='reverted', checkpoint=")
    plan = patcher.apply(kimi, "strip-fp8-kv-cache", dry_run=True).files[0]
    assert repr(plan).startswith("FilePlan(path='hf_quant_config.json', kind='json', before=<")


def test_every_checkpoint_function_takes_revision(tmp_path: Path, kimi: Path) -> None:
    cache = tmp_path / "hub"
    snapshot = _cache(cache, "nvidia/Kimi-K2.5-NVFP4", kimi)
    env = pytest.MonkeyPatch()
    env.setenv("HF_HUB_CACHE", str(cache))
    try:
        repo = "nvidia/Kimi-K2.5-NVFP4"
        assert patcher.status(repo, revision="v2").checkpoint == snapshot
        assert patcher.check(repo, revision="v2").checkpoint == snapshot
        applied = patcher.apply(repo, "strip-fp8-kv-cache", revision="v2")
        assert applied.checkpoint == snapshot and applied.outcome == "applied"
        assert patcher.revert(repo, "strip-fp8-kv-cache", revision="v2").outcome == "reverted"
        with pytest.raises(patcher.CheckpointError, match="revision 'v3' of"):
            patcher.status(repo, revision="v3")
        with pytest.raises(patcher.CheckpointError, match="apply to ORG/NAME repository ids"):
            patcher.status(str(kimi), revision="v2")
    finally:
        env.undo()


def test_a_mistyped_repo_id_gets_did_you_mean(
    cli: Cli, tmp_path: Path, kimi: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "hub"
    _cache(cache, "nvidia/Kimi-K2.5-NVFP4", kimi, revision="main")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    for typed in ("nvidia/kimi-k2.5-nvfp4", "nvidia/Kimi-K2.5-NVFP5"):
        code, _, err = cli("status", typed)
        assert code == 1 and "did you mean nvidia/Kimi-K2.5-NVFP4?" in err
        # The hint leads to the cached id first, not to a download of the typo.
        assert "next: use nvidia/Kimi-K2.5-NVFP4, which is in the cache" in err
    code, _, err = cli("status", "someone/else")
    assert code == 1 and "did you mean" not in err and "hf download someone/else" in err


def test_errors_carry_their_parts(kimi: Path) -> None:
    (kimi / "config.json").write_text('{"a": [1, 2,, 3]}')
    with pytest.raises(patcher.PatcherError) as caught:
        patcher.apply(kimi, "strip-fp8-kv-cache")
    error = caught.value
    assert isinstance(error, patcher.InputFileError) and error.exit_code == 1
    assert error.file == str(kimi / "config.json") and error.hint is not None
    assert str(error) == f"{error.file}: {error.problem}; next: {error.hint}"


def test_revert_dry_run_shows_the_diff(cli: Cli, kimi: Path) -> None:
    patcher.apply(kimi, "strip-fp8-kv-cache")
    before = (kimi / "config.json").read_bytes()
    code, out, _ = cli("revert", kimi, "strip-fp8-kv-cache", "--dry-run")
    assert code == 0
    assert "--- a/config.json\n+++ b/config.json\n" in out
    assert '+        "kv_cache_scheme": {' in out and "nothing was written" in out
    assert (kimi / "config.json").read_bytes() == before


def test_suggested_commands_echo_what_the_user_typed(
    cli: Cli, tmp_path: Path, kimi: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not the long snapshot path a repository id resolves to, nor an absolute path."""
    cache = tmp_path / "hub"
    snapshot = _cache(cache, "nvidia/Kimi-K2.5-NVFP4", kimi)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    repo = "nvidia/Kimi-K2.5-NVFP4"
    code, out, _ = cli("apply", repo, "strip-fp8-kv-cache", "--revision", "v2")
    assert code == 0
    assert "undo with: patcher revert nvidia/Kimi-K2.5-NVFP4@v2 strip-fp8-kv-cache" in out
    code, _, err = cli("revert", repo, "set-context-length", "--revision", "v2")
    assert code == 1 and err.rstrip().endswith("next: patcher status nvidia/Kimi-K2.5-NVFP4@v2")
    assert str(snapshot) not in err.split("next:")[1]
    monkeypatch.chdir(kimi.parent)
    code, out, _ = cli("apply", kimi.name, "set-context-length", "--set", "length=32768")
    assert code == 0 and f"undo with: patcher revert {kimi.name} set-context-length" in out


def test_the_library_leaves_the_garbage_collector_alone(kimi: Path) -> None:
    """Only the ``patcher`` command pauses and freezes the collector (start-up); a program
    that calls the library keeps its own settings."""
    frozen = gc.get_freeze_count()
    patcher.apply(kimi, "strip-fp8-kv-cache")
    patcher.status(kimi)
    patcher.revert(kimi, every=True)
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_one_target_is_passed_whole_to_check_kv_budget_plan_and_sync(kimi: Path) -> None:
    """A provisioning script builds one Target and hands it to every command that judges a
    launch: check and kv_budget answer as with the same settings given one by one, and a
    keyword that says something else than the target is refused, never silently dropped."""
    target = patcher.make_target(engine="vllm==0.16.0", gpu="rtx-pro-6000", tensor_parallel=8)
    whole = patcher.check(kimi, target=target)
    apart = patcher.check(kimi, engine="vllm==0.16.0", gpu="rtx-pro-6000", tensor_parallel=8)
    assert whole.to_json() == apart.to_json() and whole.findings
    budget = patcher.kv_budget(kimi, target=target)
    by_hand = patcher.kv_budget(kimi, engine="vllm==0.16.0", gpu="rtx-pro-6000", tensor_parallel=8)
    assert budget.to_json() == by_hand.to_json() and budget.tp == 8
    assert not patcher.plan(kimi, target).in_sync
    with pytest.raises(patcher.TargetError, match="tensor_parallel is given twice"):
        patcher.check(kimi, target=target, tensor_parallel=4)
    # the same value twice is no contradiction
    assert patcher.kv_budget(kimi, target=target, tensor_parallel=8).to_json() == budget.to_json()
