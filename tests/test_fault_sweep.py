"""Promise 3 under every fault: a kill (before or after the call) or a Ctrl-C at every write,
fsync, rename and unlink of apply, revert under a later transform, reapply, sync, rebase and
restore, in a folder and in a Hugging Face cache snapshot (links into shared blobs). After the
next command the files are wholly before or wholly after, status agrees, no temp file is left,
an applied transform is never lost, the cache's blobs are never written, and revert --all gives
back the original bytes (or links)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from patcher import api
from patcher.store import fsio
from tests.conftest import ROOT, SNAPSHOTS, tree_bytes

MODES = ("kill-before", "kill-after", "interrupt", "eio", "enospc")
FAULTS = ROOT / "tests" / "faults.py"


LAST_STDERR = [""]  # what the last faulty run printed (its message is checked)


def _run_faulty(mode: str, point: int, *args: str | Path, scope: str = "") -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    env["PATCHER_FAULT_SCOPE"] = scope
    done = subprocess.run(
        [sys.executable, str(FAULTS), mode, str(point), *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    LAST_STDERR[0] = done.stderr
    return done.returncode


def _temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(".patcher-tmp")]


def _applied(root: Path) -> list[str]:
    return [e.transform for e in api.status(root).applied]


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True)
    return target


def _kimi(tmp_path: Path) -> Path:
    return _copy(SNAPSHOTS / "example" / "kimi-k2.5-nvfp4", tmp_path / "prepared")


APPLY = ["apply", "{root}", "strip-fp8-kv-cache"]


def _two_applied(root: Path) -> Path:
    """``root`` with strip-fp8-kv-cache applied, and set-context-length on top of it."""
    api.apply(root, "strip-fp8-kv-cache")
    api.apply(root, "set-context-length", {"length": 131072})
    return root


def _prepare_apply(tmp_path: Path) -> tuple[Path, list[str]]:
    return _kimi(tmp_path), APPLY


def _prepare_revert_under_later(tmp_path: Path) -> tuple[Path, list[str]]:
    return _two_applied(_kimi(tmp_path)), ["revert", "{root}", "strip-fp8-kv-cache"]


def _prepare_reapply(tmp_path: Path) -> tuple[Path, list[str]]:
    root = _kimi(tmp_path)
    pristine = tree_bytes(root)
    api.apply(root, "strip-fp8-kv-cache")
    for name, data in pristine.items():  # a re-download puts the upstream bytes back
        assert isinstance(data, bytes)
        (root / name).write_bytes(data)
    return root, ["reapply", "{root}"]


def _prepare_sync_apply(tmp_path: Path) -> tuple[Path, list[str]]:
    root = _kimi(tmp_path)
    api.apply(root, "set-architectures", {"architecture": "DeepseekV3ForCausalLM"})
    profile = tmp_path / "profile.toml"
    profile.write_text(
        'engine = "vllm==0.16.0"\ngpu = "rtx-pro-6000"\ntensor_parallel = 8\n'
        '[transforms]\nset-torch-dtype = { dtype = "float16" }\n'
    )
    # strip-fp8-kv-cache and set-torch-dtype applied, set-architectures reverted: one step.
    return root, ["sync", "{root}", "--profile", str(profile)]


def _prepare_sync_first(tmp_path: Path) -> tuple[Path, list[str]]:
    # A checkpoint patcher never wrote to: sync proves its plan in memory first, then
    # applies strip-fp8-kv-cache and plans the launch (the 8-GPU context cap).
    root = _kimi(tmp_path)
    return root, [
        "sync",
        "{root}",
        "--engine",
        "vllm==0.16.0",
        "--gpu",
        "rtx-pro-6000",
        "--tp",
        "8",
    ]


def _prepare_sync_revert(tmp_path: Path) -> tuple[Path, list[str]]:
    root = _kimi(tmp_path)
    api.sync(root, api.make_target(engine="vllm==0.16.0", gpu="rtx-pro-6000", tensor_parallel=8))
    return root, ["sync", "{root}", "--engine", "vllm==0.16.0", "--gpu", "h200", "--tp", "8"]


def _prepare_replace(tmp_path: Path) -> tuple[Path, list[str]]:
    root = _two_applied(_kimi(tmp_path))
    # New parameters: the set-context-length entry is replaced (a rebuild), in one step.
    return root, ["apply", "{root}", "set-context-length", "--set", "length=65536"]


def _prepare_rebase(tmp_path: Path) -> tuple[Path, list[str]]:
    root = _two_applied(_kimi(tmp_path))
    config = root / "config.json"  # a new upstream revision lands over the patched file
    config.write_bytes(NEW_UPSTREAM)
    return root, ["rebase", "{root}"]


# The example's config.json as a new upstream revision would have it.
NEW_UPSTREAM = (
    (SNAPSHOTS / "example" / "kimi-k2.5-nvfp4" / "config.json")
    .read_bytes()
    .replace(b'"transformers_version": "4.57.1"', b'"transformers_version": "4.58.0"')
)


# ... and one whose config.json already says float16 (set-torch-dtype's edit, made upstream).
NEW_UPSTREAM_FLOAT16 = NEW_UPSTREAM.replace(b'"dtype": "bfloat16"', b'"dtype": "float16"')
assert NEW_UPSTREAM_FLOAT16.count(b'"dtype": "float16"') == 2  # both of set-torch-dtype's edits


def _cache_snapshot(tmp_path: Path) -> Path:
    """The example checkpoint as the Hugging Face cache holds it: links into ``blobs/``."""
    folder = tmp_path / "prepared" / "models--nvidia--Kimi-K2.5-NVFP4"
    snapshot = folder / "snapshots" / ("c" * 40)
    (folder / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for path in sorted((SNAPSHOTS / "example" / "kimi-k2.5-nvfp4").iterdir()):
        blob = folder / "blobs" / fsio.sha256(path.read_bytes())
        blob.write_bytes(path.read_bytes())
        (snapshot / path.name).symlink_to(Path("..", "..", "blobs", blob.name))
    return snapshot


def _prepare_apply_in_cache(tmp_path: Path) -> tuple[Path, list[str]]:
    return _cache_snapshot(tmp_path), APPLY


def _prepare_revert_in_cache(tmp_path: Path) -> tuple[Path, list[str]]:
    return _two_applied(_cache_snapshot(tmp_path)), ["revert", "{root}", "strip-fp8-kv-cache"]


def _prepare_rebase_dropping(tmp_path: Path) -> tuple[Path, list[str]]:
    root = _kimi(tmp_path)
    api.apply(root, "strip-fp8-kv-cache")
    api.apply(root, "set-torch-dtype", {"dtype": "float16"})
    # The new upstream ships float16 itself: set-torch-dtype is no longer needed and leaves.
    (root / "config.json").write_bytes(NEW_UPSTREAM_FLOAT16)
    return root, ["rebase", "{root}"]


def _prepare_sync_new_params(tmp_path: Path) -> tuple[Path, list[str]]:
    root = _kimi(tmp_path)
    profile = tmp_path / "profile.toml"
    profile.write_text(
        'engine = "vllm==0.33.0"\ngpu = "rtx-pro-6000"\ntensor_parallel = 8\n'
        "[transforms]\nset-context-length = { length = 131072 }\n"
    )
    api.sync(root, api.make_target(profile=profile))
    profile.write_text(profile.read_text().replace("131072", "65536"))
    # The same transform again with new parameters: re-applied, in one step.
    return root, ["sync", "{root}", "--profile", str(profile)]


def _prepare_revert_last_in_cache(tmp_path: Path) -> tuple[Path, list[str]]:
    # The top entry: config.json goes back to its original, the link into blobs/.
    return _two_applied(_cache_snapshot(tmp_path)), ["revert", "{root}", "--last"]


SCENARIOS: dict[str, Callable[[Path], tuple[Path, list[str]]]] = {
    "rebase-dropping": _prepare_rebase_dropping,
    "sync-new-params": _prepare_sync_new_params,
    "revert-last-in-cache": _prepare_revert_last_in_cache,
    "apply": _prepare_apply,
    "apply-replacing": _prepare_replace,
    "sync-apply": _prepare_sync_apply,
    "sync-first": _prepare_sync_first,
    "sync-revert": _prepare_sync_revert,
    "revert-under-later": _prepare_revert_under_later,
    "reapply": _prepare_reapply,
    "rebase": _prepare_rebase,
    "apply-in-cache": _prepare_apply_in_cache,
    "revert-in-cache": _prepare_revert_in_cache,
}


def _sandbox(prepared: Path) -> Path:
    """The folder copied for each run: the checkpoint, or for a cache snapshot its whole
    repository folder (the links lead into its blobs)."""
    return prepared.parents[2] if prepared.parent.name == "snapshots" else prepared


def _run_copy(prepared: Path, target: Path) -> Path:
    """A copy of the prepared checkpoint (with its cache around it); its checkpoint folder."""
    sandbox = _sandbox(prepared)
    _copy(sandbox, target)
    return target / prepared.relative_to(sandbox)


def _end_state(prepared: Path, scenario: str) -> dict[str, bytes | str]:
    """What ``revert --all`` must give back: the upstream bytes (or cache links) the files
    held before any transform; for rebase, the new upstream."""
    if prepared.parent.name == "snapshots":
        fresh = _cache_snapshot(prepared.parents[3] / "fresh")
        return tree_bytes(fresh)
    pristine = tree_bytes(SNAPSHOTS / "example" / "kimi-k2.5-nvfp4")
    if scenario == "rebase":
        return {**pristine, "config.json": NEW_UPSTREAM}
    if scenario == "rebase-dropping":
        return {**pristine, "config.json": NEW_UPSTREAM_FLOAT16}
    return pristine


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_fault_point_leaves_before_or_after(scenario: str, mode: str, tmp_path: Path) -> None:
    _sweep(scenario, mode, tmp_path)


# The shapes of change commit() writes: one file, several, a link put back into a Hugging
# Face cache snapshot. (An overlay's links are made outside commit; its own sweeps follow.)
COMMIT_SHAPES = {"apply": "one file", "sync-first": "several", "revert-last-in-cache": "a link"}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scenario", sorted(COMMIT_SHAPES))
def test_every_fault_inside_commit_leaves_before_or_after(
    scenario: str, mode: str, tmp_path: Path
) -> None:
    """The direct sweep of the one write path: only the calls inside commit() are faulted, so
    each of its points is met in every shape of change it writes."""
    _sweep(scenario, mode, tmp_path, scope="commit")


def _sweep(scenario: str, mode: str, tmp_path: Path, scope: str = "") -> None:
    prepared, command = SCENARIOS[scenario](tmp_path)
    end = _end_state(prepared, scenario)
    blobs = tree_bytes(_sandbox(prepared) / "blobs") if prepared.parent.name == "snapshots" else {}
    before, before_applied = tree_bytes(prepared), _applied(prepared)
    reference = _run_copy(prepared, tmp_path / "reference")
    assert _run_faulty(mode, 10**6, *[a.format(root=reference) for a in command], scope=scope) == 99
    after, after_applied = tree_bytes(reference), _applied(reference)
    assert after != before
    point = 0
    while True:
        point += 1
        root = _run_copy(prepared, tmp_path / f"{mode}-{point}")
        code = _run_faulty(mode, point, *[a.format(root=root) for a in command], scope=scope)
        if code == 99:
            break  # the command finished before this point: every point was swept
        where = f"{scenario} {mode} at call #{point} (exit {code})"
        message = LAST_STDERR[0]
        applied = _applied(root)  # the next command settles what the fault left
        state = tree_bytes(root)
        assert state in (before, after), where
        assert applied == (after_applied if state == after else before_applied), where
        if mode in ("eio", "enospc") and code != 0:
            # One line, no traceback; and never "nothing was changed" over a change that was
            # kept (the next command settled it forward).
            assert "Traceback" not in message and code == 1, (where, message)
            if state == after:
                assert "nothing was changed" not in message, (where, message)
            for gone in set(before_applied) - set(after_applied):
                if state == after and scenario.startswith("rebase"):
                    # A transform the rebase drops is named, not dropped without a word.
                    assert f"{gone} is no longer applied" in message, (where, message)
        assert not _temp_files(_sandbox(root)), (where, _temp_files(_sandbox(root)))
        if blobs:  # the cache's blobs are shared with other revisions: never written
            assert tree_bytes(_sandbox(root) / "blobs") == blobs, where
        if scenario.startswith("rebase") and state == before:
            api.rebase(root)  # the interrupted rebase can be run again
        api.revert(root, every=True)
        assert tree_bytes(root) == end, where
        shutil.rmtree(_sandbox(root))
    assert point > (3 if scope else 5)  # the sweep really went through the command's writes


def _overlay_finished(command: list[str], out: Path, reference: Path, where: str) -> None:
    """The same command run again, unfaulted, leaves ``out`` as the unfaulted run left
    ``reference``: strip-fp8-kv-cache applied, no temp file."""
    done = subprocess.run(
        [sys.executable, "-m", "patcher", *command, str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 0, (where, done.stderr)
    assert tree_bytes(out) == tree_bytes(reference), where
    assert _applied(out) == ["strip-fp8-kv-cache"], where
    assert not _temp_files(out), where


def _half_made_is_named(out: Path, where: str) -> None:
    """``status`` on what a fault left never passes a half-made overlay off as a checkpoint
    with nothing applied: it is refused (half-made, or not a checkpoint yet), unless the
    overlay's record says it was finished."""
    if not out.exists():
        return
    done = subprocess.run(
        [sys.executable, "-m", "patcher", "status", str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    record = out / ".patcher" / "overlay.json"
    finished = record.is_file() and "creating" not in json.loads(record.read_text() or "{}")
    if done.returncode == 0:
        assert finished, (where, done.stdout)
    else:
        assert "half-made overlay" in done.stderr or "no config files" in done.stderr, (
            where,
            done.stderr,
        )


@pytest.mark.parametrize("mode", MODES)
def test_an_interrupted_overlay_is_completed_by_the_next_run(mode: str, tmp_path: Path) -> None:
    """A Kubernetes init container killed while it builds the overlay in an emptyDir that
    survives the restart: the overlay folder held some links and no record, and every later
    run refused it ("exists and is not an empty folder"), so the pod never started."""
    source = _kimi(tmp_path)
    for path in [*source.iterdir(), source]:  # a read-only model store
        path.chmod(0o555 if path.is_dir() else 0o444)
    store = tree_bytes(source)
    command = ["apply", str(source), "strip-fp8-kv-cache", "--overlay"]
    reference = tmp_path / "reference"
    assert _run_faulty(mode, 10**6, *command, reference) == 99
    point = 0
    while True:
        point += 1
        out = tmp_path / f"{mode}-{point}"
        if _run_faulty(mode, point, *command, out) == 99:
            break
        where = f"apply --overlay {mode} at call #{point}"
        _half_made_is_named(out, where)
        _overlay_finished(command, out, reference, where)
        assert tree_bytes(source) == store, where
    assert point > 5


@pytest.mark.parametrize("mode", MODES)
def test_an_overlay_re_pointed_at_its_moved_store_survives_any_fault(
    mode: str, tmp_path: Path
) -> None:
    """The store moved; naming it where it is now re-points the overlay's links and record.
    Killed at any of those writes, the next run finishes it: every link leads into the new
    place, the patched copies stay, and a revert puts back links into the new place."""
    store = _kimi(tmp_path)
    prepared = tmp_path / "prepared-overlay"
    api.apply(store, "strip-fp8-kv-cache", overlay=prepared)
    moved = store.rename(tmp_path / "moved")
    command = ["apply", str(moved), "strip-fp8-kv-cache", "--overlay"]
    reference = _copy(prepared, tmp_path / "reference")
    assert _run_faulty(mode, 10**6, *command, reference) == 99
    assert all(
        str(link.readlink()).startswith(f"{moved}/")
        for link in reference.iterdir()
        if link.is_symlink()
    )
    point = 0
    while True:
        point += 1
        out = _copy(prepared, tmp_path / f"{mode}-{point}")
        if _run_faulty(mode, point, *command, out) == 99:
            break
        where = f"re-point {mode} at call #{point}"
        _overlay_finished(command, out, reference, where)
        api.revert(out, every=True)
        assert tree_bytes(out) == {name: f"-> {moved / name}" for name in tree_bytes(reference)}, (
            where
        )
    assert point > 3


RESTORES = {
    "restore": ["restore", "{root}"],
    "restore-upstream": ["restore", "{root}", "--upstream"],
    "revert-all": ["revert", "{root}", "--all", "--force"],
}


def _hand_edit(path: Path) -> None:
    path.write_bytes(path.read_bytes().replace(b"NVFP4", b"HAND", 1))


# What is applied and edited by hand before the multi-entry command runs: one entry over a
# hand edit; two files edited; two entries on one file under a hand edit.
SETUPS = {
    "one": (("strip-fp8-kv-cache", {}),),
    "two-files": (("strip-fp8-kv-cache", {}),),
    "two-entries": (("strip-fp8-kv-cache", {}), ("set-torch-dtype", {"dtype": "float16"})),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("setup", sorted(SETUPS))
@pytest.mark.parametrize("name", sorted(RESTORES))
def test_a_restore_under_every_fault_leaves_before_or_after(
    name: str, setup: str, mode: str, tmp_path: Path
) -> None:
    """restore (the patched bytes back over a hand edit), restore --upstream (the entries
    reverted, the hand edit discarded) and revert --all --force, each one step for all its
    entries and files, at every fault point: the files are the hand-edited ones or the
    restored ones, status agrees, no temp file, and the command run again ends where the
    unfaulted run did."""
    prepared = _kimi(tmp_path)
    for transform, params in SETUPS[setup]:
        api.apply(prepared, transform, params)
    _hand_edit(prepared / "config.json")
    if setup == "two-files":
        _hand_edit(prepared / "hf_quant_config.json")
    command = RESTORES[name]
    before, before_applied = tree_bytes(prepared), _applied(prepared)
    reference = _run_copy(prepared, tmp_path / "reference")
    assert _run_faulty(mode, 10**6, *[a.format(root=reference) for a in command]) == 99
    after, after_applied = tree_bytes(reference), _applied(reference)
    assert after != before
    point = 0
    while True:
        point += 1
        root = _run_copy(prepared, tmp_path / f"{mode}-{point}")
        code = _run_faulty(mode, point, *[a.format(root=root) for a in command])
        if code == 99:
            break
        where = f"{name} {mode} at call #{point} (exit {code})"
        applied = _applied(root)
        state = tree_bytes(root)
        assert state in (before, after), where
        assert applied == (after_applied if state == after else before_applied), where
        if mode in ("eio", "enospc") and code != 0:
            assert "Traceback" not in LAST_STDERR[0] and code == 1, (where, LAST_STDERR[0])
        assert not _temp_files(root), where
        assert _run_faulty(mode, 10**6, *[a.format(root=root) for a in command]) == 99, where
        assert tree_bytes(root) == after, where
        shutil.rmtree(root)
    assert point > 3


@pytest.mark.parametrize("mode", MODES)
def test_forget_under_every_fault_leaves_the_journal_whole_or_gone(
    mode: str, tmp_path: Path
) -> None:
    """forget at every fault point: .patcher/ is whole (status reads it, every kept original
    is there) or gone, never a journal without its objects; forget run again finishes, and
    leaves nothing of it behind."""
    prepared = _kimi(tmp_path)
    api.apply(prepared, "strip-fp8-kv-cache")
    api.revert(prepared, every=True)
    files = {k: v for k, v in tree_bytes(prepared).items() if not k.startswith(".patcher")}
    kept = sorted(p.name for p in (prepared / ".patcher" / "objects").iterdir())
    point = 0
    while True:
        point += 1
        root = _copy(prepared, tmp_path / f"{mode}-{point}")
        if _run_faulty(mode, point, "forget", str(root)) == 99:
            break
        where = f"forget {mode} at call #{point}"
        if (root / ".patcher").exists():
            assert [e.transform for e in api.status(root).reverted] == ["strip-fp8-kv-cache"]
            assert sorted(p.name for p in (root / ".patcher" / "objects").iterdir()) == kept, where
        assert _run_faulty(mode, 10**6, "forget", str(root)) == 99, where
        assert not (root / ".patcher").exists(), where
        assert not list(root.glob(".patcher-forgotten-*")), where
        now = {k: v for k, v in tree_bytes(root).items() if not k.startswith(".patcher")}
        assert now == files, where
        shutil.rmtree(root)
    assert point > 1
