"""Hub and cache: repo ids, cache-safe patching, diff --upstream, offline, local_dir, overlays.

A real HTTP server on 127.0.0.1 (tests/hubserver.py) speaks the Hub's file and API endpoints;
``huggingface_hub`` fills real caches from it, and the CLI runs in subprocesses with
``HF_ENDPOINT`` pointing at it. Nothing reaches the internet.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from huggingface_hub import hf_hub_download, scan_cache_dir, snapshot_download

from tests.conftest import ROOT, SNAPSHOTS, tree_bytes
from tests.hubserver import TOKEN, Hub, serve

REPO = "nvidia/Kimi-K2.5-NVFP4"
EXAMPLE = SNAPSHOTS / "example" / "kimi-k2.5-nvfp4"
SHARD = "model-00001-of-00001.safetensors"


@pytest.fixture
def hub() -> Iterator[tuple[Hub, str]]:
    server = Hub()
    files = {p.name: p.read_bytes() for p in EXAMPLE.iterdir()}
    server.add_repo(REPO, files)
    older = dict(files, **{"README.md": b"old card\n"})  # same config.json blob, other commit
    server.add_repo(REPO, older, ref="v1")
    server.add_repo("org/no-config", {"generation_config.json": b"{}"})
    server.add_repo("org/gated", {"config.json": b'{"a": 1}\n'}, gated=True)
    server.add_repo("org/deep", {"config.json": b"[" * 100_000 + b"]" * 100_000})
    # Parsed by Python 3.13's json, then too deep for the comparison's own recursion.
    server.add_repo("org/deep5k", {"config.json": b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}"})
    marked = dict(files, **{"config.json": b"\xef\xbb\xbf" + files["config.json"]})
    server.add_repo("org/marked", marked)
    with serve(server) as url:
        yield server, url


def run(*args: str | Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "PATCHER_"))}
    environment.update({"PYTHONPATH": str(ROOT), **(env or {})})
    done = subprocess.run(
        [sys.executable, "-m", "patcher", *map(str, args)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stdout, done.stderr


def fill_cache(url: str, cache: Path, revision: str = "main") -> Path:
    return Path(
        snapshot_download(
            REPO, revision=revision, cache_dir=cache, endpoint=url, allow_patterns=["*.json"]
        )
    )


def blobs(cache: Path) -> dict[str, str]:
    folder = cache / ("models--" + REPO.replace("/", "--")) / "blobs"
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


def refused(code: int, err: str, *needles: str) -> None:
    assert code == 1, err
    assert "Traceback" not in err and err.startswith("error: ") and "next: " in err
    assert len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err, err


def test_repo_id_apply_diff_upstream_hand_edit_revert(hub: tuple[Hub, str], tmp_path: Path) -> None:
    server, url = hub
    cache = tmp_path / "cache"
    snapshot = fill_cache(url, cache)
    links = {p.name: str(p.readlink()) for p in snapshot.iterdir()}
    before_blobs = blobs(cache)
    env = {"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": url}

    code, out, err = run("apply", REPO, "strip-fp8-kv-cache", env=env)
    assert code == 0, err
    assert f"applied strip-fp8-kv-cache (entry 1) to {snapshot}" in out
    assert not (snapshot / "config.json").is_symlink()
    assert '"kv_cache_quant_algo": null' in (snapshot / "hf_quant_config.json").read_text()
    assert blobs(cache) == before_blobs
    assert [r.repo_id for r in scan_cache_dir(cache).repos] == [REPO]

    server.requests.clear()
    code, out, err = run("diff", REPO, "--upstream", "--json", env=env)
    assert code == 0, err
    result = json.loads(out)
    found = {
        (f["path"], d["pointer"], d["transform"]) for f in result["files"] for d in f["differences"]
    }
    assert found == {
        ("config.json", "/quantization_config/kv_cache_scheme", "strip-fp8-kv-cache"),
        ("hf_quant_config.json", "/quantization/kv_cache_quant_algo", "strip-fp8-kv-cache"),
    }
    assert result["unexplained"] == 0 and result["commit"] == snapshot.name
    assert server.requests and not any(SHARD in r for r in server.requests)

    config = snapshot / "config.json"
    before_hand_edits = config.read_text()
    kernel = '"merge_kernel_size": [\n            2,'
    assert kernel in before_hand_edits
    config.write_text(
        before_hand_edits.replace('"model_type": "kimi_k25"', '"model_type": "mine"').replace(
            kernel, kernel.replace("2,", "2.0,")
        )
    )
    code, out, _ = run("diff", REPO, "--upstream", env=env)
    assert code == 1
    assert 'changed /model_type: "kimi_k25" -> "mine"  [UNEXPLAINED' in out
    # A list item of another type is a difference too (deepdiff alone called 2 and 2.0 equal).
    assert "changed /vision_config/merge_kernel_size/0: 2 -> 2.0  [UNEXPLAINED" in out
    assert "by strip-fp8-kv-cache (#1)" in out and "2 unexplained" in out

    config.write_text(before_hand_edits)
    code, _, err = run("revert", REPO, "--all", env=env)
    assert code == 0, err
    assert {p.name: str(p.readlink()) for p in snapshot.iterdir() if p.name != ".patcher"} == links
    assert blobs(cache) == before_blobs


def test_two_revisions_sharing_a_blob(hub: tuple[Hub, str], tmp_path: Path) -> None:
    _, url = hub
    cache = tmp_path / "cache"
    main = fill_cache(url, cache)
    old = fill_cache(url, cache, revision="v1")
    assert main != old and (main / "config.json").readlink() == (old / "config.json").readlink()
    old_before = tree_bytes(old)
    code, _, err = run("apply", REPO, "strip-fp8-kv-cache", env={"HF_HUB_CACHE": str(cache)})
    assert code == 0, err
    assert tree_bytes(old) == old_before and (old / "config.json").is_symlink()
    assert "kv_cache_scheme" in (old / "config.json").read_text()
    code, out, _ = run(
        "status", REPO, "--revision", "v1", "--json", env={"HF_HUB_CACHE": str(cache)}
    )
    assert code == 0 and json.loads(out)["applied"] == []


def test_repo_not_in_cache(tmp_path: Path) -> None:
    code, _, err = run("status", REPO, env={"HF_HUB_CACHE": str(tmp_path)})
    refused(code, err, f"{REPO} is not in the Hugging Face cache", f"hf download {REPO}")
    code, _, err = run("status", REPO, "--revision", "v9", env={"HF_HUB_CACHE": str(tmp_path)})
    refused(code, err, "--revision v9")


def test_offline_compares_with_the_cache(hub: tuple[Hub, str], tmp_path: Path) -> None:
    _, url = hub
    cache = tmp_path / "cache"
    fill_cache(url, cache)
    env = {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    assert run("apply", REPO, "strip-fp8-kv-cache", env=env)[0] == 0
    code, out, err = run("diff", REPO, "--upstream", "--json", env=env)
    assert code == 0, err
    result = json.loads(out)
    assert result["offline"] and result["unexplained"] == 0
    assert len([d for f in result["files"] for d in f["differences"]]) == 2

    folder = tmp_path / "local"
    shutil.copytree(EXAMPLE, folder)
    code, _, err = run(
        "diff",
        folder,
        "--upstream",
        "org/never-downloaded",
        env={"HF_HUB_CACHE": str(tmp_path / "empty"), "HF_HUB_OFFLINE": "1"},
    )
    refused(code, err, "not in the local cache and HF_HUB_OFFLINE=1", "unset HF_HUB_OFFLINE")
    assert tree_bytes(folder) == tree_bytes(EXAMPLE)


def _local_dir_download(url: str, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """``hf download --local-dir`` of the example from the tests' Hub (its cache under
    tmp_path, never the user's), and the env that points patcher at that Hub and cache."""
    folder, cache = tmp_path / "kimi", tmp_path / "cache"
    snapshot_download(
        REPO, local_dir=folder, cache_dir=cache, endpoint=url, allow_patterns=["*.json"]
    )
    return folder, {"HF_ENDPOINT": url, "HF_HUB_CACHE": str(cache)}


def test_local_dir_redownload_and_reapply(hub: tuple[Hub, str], tmp_path: Path) -> None:
    _, url = hub
    folder, env = _local_dir_download(url, tmp_path)
    assert run("apply", folder, "strip-fp8-kv-cache", env=env)[0] == 0
    assert run("apply", folder, "set-context-length", "--set", "length=131072", env=env)[0] == 0

    code, _, err = run("diff", folder, "--upstream", env=env)
    refused(code, err, "upstream repository is not known", "--upstream ORG/NAME")
    code, _, err = run("diff", folder, "--upstream", REPO, env=env)
    assert code == 0, err
    journal = json.loads((folder / ".patcher" / "journal.json").read_text())
    assert journal["upstream"]["repo"] == REPO
    code, out, err = run("diff", folder, "--upstream", env=env)
    assert code == 0 and "0 unexplained" in out, err

    patched = (folder / "config.json").read_bytes()
    (folder / "config.json").unlink()  # as a re-sync does for a changed git file
    hf_hub_download(REPO, "config.json", local_dir=folder, endpoint=url)
    assert (folder / "config.json").read_bytes() == (EXAMPLE / "config.json").read_bytes()
    code, out, _ = run("status", folder, "--json", env=env)
    states = {f["path"]: f["state"] for f in json.loads(out)["files"]}
    assert states == {"config.json": "original", "hf_quant_config.json": "patched"}
    code, out, err = run("reapply", folder, env=env)
    assert code == 0, err
    assert "reapplied strip-fp8-kv-cache" in out and "reapplied set-context-length" in out
    assert (folder / "config.json").read_bytes() == patched
    code, out, _ = run("status", folder, "--json", env=env)
    assert {f["state"] for f in json.loads(out)["files"]} == {"patched"}
    assert [a["name"] for a in json.loads(out)["applied"]] == [
        "strip-fp8-kv-cache",
        "set-context-length",
    ]
    assert run("revert", folder, "--all", env=env)[0] == 0
    assert (folder / "config.json").read_bytes() == (EXAMPLE / "config.json").read_bytes()


@pytest.mark.parametrize(
    ("upstream", "env_extra", "needles"),
    [
        ("org/missing", {}, ["repository org/missing not found", "HF_TOKEN"]),
        (f"{REPO}@v9", {}, ["revision 'v9' not found in " + REPO]),
        ("org/no-config", {}, ["config.json not found in org/no-config@main"]),
        ("org/gated", {}, ["org/gated is gated", "hf auth login"]),
        (
            REPO,
            {"HF_ENDPOINT": "http://127.0.0.1:9"},
            ["cannot connect to the Hub", "HF_HUB_OFFLINE=1"],
        ),
    ],
    ids=["repo", "revision", "file", "gated", "refused"],
)
def test_upstream_errors(
    hub: tuple[Hub, str],
    tmp_path: Path,
    upstream: str,
    env_extra: dict[str, str],
    needles: list[str],
) -> None:
    _, url = hub
    folder = tmp_path / "kimi"
    shutil.copytree(EXAMPLE, folder)
    before = tree_bytes(folder)
    env = {"HF_ENDPOINT": url, "HF_HUB_CACHE": str(tmp_path / "cache"), **env_extra}
    code, _, err = run("diff", folder, "--upstream", upstream, env=env)
    refused(code, err, *needles)
    assert tree_bytes(folder) == before and not (folder / ".patcher").exists()


def test_gated_repo_with_a_token(hub: tuple[Hub, str], tmp_path: Path) -> None:
    _, url = hub
    folder = tmp_path / "gated"
    folder.mkdir()
    (folder / "config.json").write_text('{"a": 1}\n')
    env = {"HF_ENDPOINT": url, "HF_TOKEN": TOKEN, "HF_HUB_CACHE": str(tmp_path / "cache")}
    code, out, err = run("diff", folder, "--upstream", "org/gated", env=env)
    assert code == 0 and out.strip().endswith("identical"), err


def test_timeout(hub: tuple[Hub, str], tmp_path: Path) -> None:
    server, url = hub
    folder = tmp_path / "kimi"
    shutil.copytree(EXAMPLE, folder)
    server.delay = 3
    env = {"HF_ENDPOINT": url, "HF_HUB_ETAG_TIMEOUT": "1", "HF_HUB_CACHE": str(tmp_path / "c")}
    code, _, err = run("diff", folder, "--upstream", REPO, env=env)
    refused(code, err, "the Hub did not answer in time")


def test_overlay_leaves_a_read_only_source_untouched(tmp_path: Path) -> None:
    source = tmp_path / "store" / "kimi"
    shutil.copytree(EXAMPLE, source)
    for path in [*source.iterdir(), source]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    before = tree_bytes(source)
    stamps = {p.name: p.stat().st_mtime_ns for p in source.iterdir()}
    out = tmp_path / "overlay"
    code, stdout, err = run("apply", source, "strip-fp8-kv-cache", "--overlay", out)
    assert code == 0, err
    assert f"to {out}" in stdout
    assert f"undo with: patcher revert {out} strip-fp8-kv-cache" in stdout  # not the source
    assert (
        not (out / "config.json").is_symlink()
        and "kv_cache_scheme" not in (out / "config.json").read_text()
    )
    assert (out / SHARD).is_symlink() and (out / SHARD).resolve() == source / SHARD
    assert run("apply", out, "set-context-length", "--set", "length=131072")[0] == 0
    code, stdout, _ = run("status", out, "--json")
    assert [a["name"] for a in json.loads(stdout)["applied"]] == [
        "strip-fp8-kv-cache",
        "set-context-length",
    ]
    assert run("diff", out)[0] == 0
    assert run("revert", out, "--all")[0] == 0
    assert all((out / p.name).is_symlink() for p in source.iterdir())
    assert tree_bytes(source) == before and not (source / ".patcher").exists()
    assert {p.name: p.stat().st_mtime_ns for p in source.iterdir()} == stamps
    code, _, err = run("apply", EXAMPLE, "strip-fp8-kv-cache", "--overlay", out)
    refused(code, err, "already an overlay of")


def test_rebase_a_patched_snapshot_onto_a_new_revision(
    hub: tuple[Hub, str], tmp_path: Path
) -> None:
    """hf download moved refs/main to a new snapshot: status says where the transforms are,
    rebase carries them over, the new snapshot's blobs stay untouched, the old one as chosen."""
    server, url = hub
    cache = tmp_path / "cache"
    env = {"HF_HUB_CACHE": str(cache)}
    old = fill_cache(url, cache)
    code, _, err = run("apply", REPO, "strip-fp8-kv-cache", env=env)
    assert code == 0, err
    old_bytes = tree_bytes(old)
    files = {p.name: p.read_bytes() for p in EXAMPLE.iterdir()}
    newer = files["config.json"].replace(b'"4.57.1"', b'"4.58.0"')
    assert newer != files["config.json"]
    server.add_repo(REPO, {**files, "config.json": newer})  # a new commit on main
    new = fill_cache(url, cache)
    assert new != old
    before_blobs = blobs(cache)
    code, out, _ = run("status", REPO, env=env)
    assert code == 0 and "applied: none" in out
    assert f"has transforms applied; carry them to this revision: patcher rebase {REPO}" in out
    code, out, err = run("rebase", REPO, env=env)
    assert code == 0, err
    assert "strip-fp8-kv-cache: re-applied" in out and "left as it is" in out
    config = json.loads((new / "config.json").read_text())
    assert config["transformers_version"] == "4.58.0"
    assert "kv_cache_scheme" not in config["quantization_config"]
    assert not (new / "config.json").is_symlink()  # de-linked, never written through
    assert blobs(cache) == before_blobs  # no blob written through a link
    assert tree_bytes(old) == old_bytes  # the old revision as the user chose: untouched
    code, out, _ = run("status", REPO, "--json", env=env)
    assert [e["name"] for e in json.loads(out)["applied"]] == ["strip-fp8-kv-cache"]
    # Carrying again with --revert-old from a second new revision puts the old one back.
    server.add_repo(REPO, {**files, "config.json": newer.replace(b'"4.58.0"', b'"4.59.0"')})
    third = fill_cache(url, cache)
    code, out, err = run("rebase", REPO, "--revert-old", env=env)
    assert code == 0, err
    assert out.splitlines()[-1] == f"old revision {new.name}: reverted"
    assert (new / "config.json").is_symlink()  # the link restored on revert
    code, out, _ = run("status", REPO, "--revision", new.name, "--json", env=env)
    assert json.loads(out)["applied"] == []
    assert (
        "kv_cache_scheme"
        not in json.loads((third / "config.json").read_text())["quantization_config"]
    )


def test_an_overlay_follows_entries_its_source_gains_or_loses(tmp_path: Path) -> None:
    """A pod restarted with its overlay surviving, after the store gained a
    generation_config.json: the overlay had no link to it, so the engine never saw it."""
    source = tmp_path / "store" / "kimi"
    shutil.copytree(EXAMPLE, source)
    out = tmp_path / "overlay"
    target = ("--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--tp", "8", "--overlay", out)
    assert run("sync", source, *target)[0] == 0
    (source / "generation_config.json").write_text('{"eos_token_id": 163586}\n')
    (source / "model.safetensors.index.json").unlink()
    code, stdout, err = run("sync", source, *target)
    assert code == 0 and "in sync" in stdout, err
    assert (out / "generation_config.json").resolve() == source / "generation_config.json"
    assert not (out / "model.safetensors.index.json").is_symlink()
    assert not (out / "config.json").is_symlink()  # the patched copy stays
    assert run("status", out, "--check")[0] == 0


def test_an_overlay_follows_its_store_when_the_store_moves(tmp_path: Path) -> None:
    """A restarted pod with a surviving overlay, its store now mounted elsewhere: the overlay's
    links led nowhere, and every command called its record damaged. Naming the store where it
    is now re-points the overlay (patched copies and journal kept); a revert then puts back
    links into the new place."""
    source = tmp_path / "store" / "kimi"
    shutil.copytree(EXAMPLE, source)
    out = tmp_path / "overlay"
    target = ("--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--tp", "8", "--overlay", out)
    assert run("sync", source, *target)[0] == 0
    patched = (out / "config.json").read_bytes()
    moved = tmp_path / "mnt" / "kimi"
    moved.parent.mkdir()
    source.rename(moved)

    code, _, err = run("status", out)
    refused(code, err, f"the overlay's source {source} is gone (moved or deleted)")
    assert f"patcher sync NEW_SOURCE --profile P --overlay {out}" in err
    code, stdout, err = run("sync", moved, *target)
    assert code == 0 and "in sync" in stdout, err
    assert json.loads((out / ".patcher" / "overlay.json").read_text())["source"] == str(moved)
    assert (
        out / "model.safetensors.index.json"
    ).readlink() == moved / "model.safetensors.index.json"
    assert (out / "config.json").read_bytes() == patched
    assert run("status", out, "--check")[0] == 0

    code, _, err = run("revert", out, "--all")
    assert code == 0, err
    for name in ("config.json", "hf_quant_config.json"):
        assert (out / name).readlink() == moved / name

    # Another store still there is another overlay's source: refused, as before.
    code, _, err = run("sync", EXAMPLE, *target)
    refused(code, err, f"already an overlay of {moved}")


def test_an_overlay_whose_store_moved_with_a_new_revision_asks_for_a_rebase(
    tmp_path: Path,
) -> None:
    source = tmp_path / "store" / "kimi"
    shutil.copytree(EXAMPLE, source)
    out = tmp_path / "overlay"
    target = ("--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--tp", "8", "--overlay", out)
    assert run("sync", source, *target)[0] == 0
    moved = tmp_path / "mnt" / "kimi"
    moved.parent.mkdir()
    source.rename(moved)
    config = moved / "config.json"
    config.write_bytes(config.read_bytes().replace(b'"4.57.1"', b'"4.58.0"'))
    code, _, err = run("sync", moved, *target)
    refused(code, err, "patcher rebase")
    code, stdout, err = run("rebase", out)
    assert code == 0 and "strip-fp8-kv-cache: re-applied" in stdout, err
    assert b'"4.58.0"' in (out / "config.json").read_bytes()


def test_local_dir_new_upstream_is_not_a_hand_edit(hub: tuple[Hub, str], tmp_path: Path) -> None:
    server, url = hub
    folder, env = _local_dir_download(url, tmp_path)
    assert run("apply", folder, "strip-fp8-kv-cache", env=env)[0] == 0
    files = {p.name: p.read_bytes() for p in EXAMPLE.iterdir()}
    server.add_repo(
        REPO, {**files, "config.json": files["config.json"].replace(b'"4.57.1"', b'"4.58.0"')}
    )
    hf_hub_download(REPO, "config.json", local_dir=folder, endpoint=url, force_download=True)
    code, out, _ = run("status", folder, env=env)
    assert (
        "new upstream version (re-downloaded, or in an overlay's source): run patcher rebase" in out
    )
    code, _, err = run("reapply", folder, env=env)
    refused(code, err, "new upstream version", f"patcher rebase {folder}")
    code, out, err = run("rebase", folder, env=env)
    assert code == 0 and "strip-fp8-kv-cache: re-applied" in out, err


def test_sync_in_the_cache_restores_the_links(hub: tuple[Hub, str], tmp_path: Path) -> None:
    """sync rebuilds in memory, from plain bytes: its entries must still remember the blob
    links, so a later sync that no longer needs the transform puts the symlinks back."""
    _, url = hub
    cache = tmp_path / "cache"
    env = {"HF_HUB_CACHE": str(cache)}
    snapshot = fill_cache(url, cache)
    before = tree_bytes(snapshot)
    code, _, err = run(
        "sync", REPO, "--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--tp", "8", env=env
    )
    assert code == 0, err
    assert not (snapshot / "config.json").is_symlink()
    code, _, err = run(
        "sync", REPO, "--engine", "vllm==0.16.0", "--gpu", "h200", "--tp", "8", env=env
    )
    assert code == 0, err
    assert (snapshot / "config.json").is_symlink() and tree_bytes(snapshot) == before


def test_upstream_fetches_report_progress(
    hub: tuple[Hub, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library reports each fetch through a hook (never prints); the CLI draws it as one
    line on a terminal's stderr and erases it, and draws nothing into a pipe or --json."""
    import io

    from patcher.cli import output as cli

    _, url = hub
    cache = tmp_path / "cache"
    snapshot = fill_cache(url, cache)
    script = (
        "import json\nfrom patcher import api, progress\nseen = []\n"
        "progress.fetch_reporter = lambda *a: seen.append(a)\n"
        f"api.diff_upstream({REPO!r})\nprint(json.dumps(seen))\n"
    )
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "PATCHER_"))}
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={
            **environment,
            "PYTHONPATH": str(ROOT),
            "HF_HUB_CACHE": str(cache),
            "HF_ENDPOINT": url,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = [tuple(s) for s in json.loads(done.stdout)]
    names = sorted(p.name for p in snapshot.iterdir() if p.name.endswith((".json", ".jinja")))
    assert seen[0][2] == 0 and seen[-1] == (REPO, "", 0, 0)
    assert sorted(s[1] for s in seen[1:-1]) == names
    assert [s[2:] for s in seen[1:-1]] == [(i, len(names)) for i in range(1, len(names) + 1)]

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for stream, drawn in ((Terminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr(sys, "stderr", stream)
        cli.report_fetch(REPO, "config.json", 1, 3)
        cli.report_fetch(REPO, "", 0, 0)
        text = stream.getvalue()
        assert (f"fetching config.json from {REPO} (1/3)..." in text) is drawn
        assert text.endswith("\r\x1b[K") is drawn


def test_an_upstream_file_nested_too_deeply(hub: tuple[Hub, str], tmp_path: Path) -> None:
    """It used to stop diff with exit 3 ('a bug in patcher') on a RecursionError."""
    _, url = hub
    folder = tmp_path / "kimi"
    shutil.copytree(EXAMPLE, folder)
    env = {"HF_ENDPOINT": url, "HF_HUB_CACHE": str(tmp_path / "cache")}
    code, out, err = run("diff", folder, "--upstream", "org/deep", env=env)
    assert code == 1 and "Traceback" not in out + err
    assert "[UNEXPLAINED: nested too deeply to compare on one side]" in out
    # 5,000 levels on both sides, differing at the bottom: Python 3.13 parses them, and the
    # comparison's own recursion is what stops (it used to be a traceback there).
    (folder / "config.json").write_bytes(b'{"a": ' + b"[" * 5000 + b"1" + b"]" * 5000 + b"}")
    code, out, err = run("diff", folder, "--upstream", "org/deep5k", env=env)
    assert code == 1 and "Traceback" not in out + err
    assert "[UNEXPLAINED: nested too deeply to compare on one side]" in out


class _NotAHub(BaseHTTPRequestHandler):
    """What a captive portal or a proxy login page answers: 200 and a page, no Hub headers."""

    def log_message(self, *_: object) -> None:
        pass

    def _page(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(b"<html>sign in to the network</html>")

    do_GET = _page
    do_HEAD = _page


def test_an_endpoint_that_is_not_a_hub(tmp_path: Path) -> None:
    """It used to stop diff with exit 3 ('a bug in patcher') on LocalEntryNotFoundError."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotAHub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        folder = tmp_path / "kimi"
        shutil.copytree(EXAMPLE, folder)
        url = f"http://127.0.0.1:{server.server_port}"
        env = {"HF_ENDPOINT": url, "HF_HUB_CACHE": str(tmp_path / "cache")}
        code, out, err = run("diff", folder, "--upstream", "org/x", env=env)
    finally:
        server.shutdown()
        server.server_close()
    assert code == 1 and "Traceback" not in out + err and len(err.splitlines()) == 1
    assert err.startswith(f"error: org/x: {url} did not answer config.json of org/x@main as a ")
    assert "next: check HF_ENDPOINT and any proxy" in err


def test_a_pipe_among_the_compared_files_is_refused_not_waited_on(
    hub: tuple[Hub, str], tmp_path: Path
) -> None:
    """A named pipe called ``generation_config.json`` used to hang diff --upstream for ever."""
    _, url = hub
    folder = tmp_path / "kimi"
    shutil.copytree(EXAMPLE, folder)
    os.mkfifo(folder / "generation_config.json")
    env = {"HF_ENDPOINT": url, "HF_HUB_CACHE": str(tmp_path / "cache")}
    code, _, err = run("diff", folder, "--upstream", REPO, env=env)
    refused(code, err, "generation_config.json: is not a regular file", f"patcher status {folder}")


def test_a_stripped_mark_under_a_later_edit_is_explained(
    hub: tuple[Hub, str], tmp_path: Path
) -> None:
    """strip-bom changes no value; strip-fp8-kv-cache on top of it still explains its edit (the
    whole-text record used to be taken for the last edit of every pointer)."""
    _, url = hub
    cache = tmp_path / "cache"
    snapshot = Path(
        snapshot_download("org/marked", cache_dir=cache, endpoint=url, allow_patterns=["*.json"])
    )
    env = {"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": url}
    for name in ("strip-bom", "strip-fp8-kv-cache"):
        code, _, err = run("apply", "org/marked", name, env=env)
        assert code == 0, err
    assert not (snapshot / "config.json").read_bytes().startswith(b"\xef\xbb\xbf")
    code, out, err = run("diff", "org/marked", "--upstream", "--json", env=env)
    assert code == 0, out + err
    result = json.loads(out)
    assert result["unexplained"] == 0
    assert ("config.json", "/quantization_config/kv_cache_scheme", "strip-fp8-kv-cache") in {
        (f["path"], d["pointer"], d["transform"]) for f in result["files"] for d in f["differences"]
    }


def _applied_in_cache(url: str, tmp_path: Path, *apply: str) -> tuple[Path, dict[str, str]]:
    """A cached snapshot of REPO with ``patcher apply REPO *apply`` done, and the env for it."""
    cache = tmp_path / "cache"
    snapshot = fill_cache(url, cache)
    env = {"HF_HUB_CACHE": str(cache), "HF_ENDPOINT": url}
    code, _, err = run("apply", REPO, *apply, env=env)
    assert code == 0, err
    return snapshot, env


def test_an_appended_item_is_explained_by_the_transform_that_appended_it(
    hub: tuple[Hub, str], tmp_path: Path
) -> None:
    snapshot, env = _applied_in_cache(
        hub[1], tmp_path, "add-quant-exclude-modules", "--set", "pattern=lm_head*"
    )
    upstream = json.loads((EXAMPLE / "hf_quant_config.json").read_bytes())
    end = len(upstream["quantization"]["exclude_modules"])

    code, out, err = run("diff", REPO, "--upstream", "--json", env=env)
    assert code == 0, err
    found = {
        (f["path"], d["pointer"], d["kind"], d["current"], d["transform"])
        for f in json.loads(out)["files"]
        for d in f["differences"]
    }
    assert (
        "hf_quant_config.json",
        f"/quantization/exclude_modules/{end}",
        "added",
        "lm_head*",
        "add-quant-exclude-modules",
    ) in found
    assert all(transform == "add-quant-exclude-modules" for *_, transform in found)

    # The appended item changed by hand afterwards is no longer the transform's doing.
    quant = snapshot / "hf_quant_config.json"
    quant.write_text(quant.read_text().replace('"lm_head*"', '"lm_head.mine"'))
    code, out, _ = run("diff", REPO, "--upstream", env=env)
    assert code == 1
    assert "changed by hand after add-quant-exclude-modules was applied" in out


def test_a_duplicate_key_added_by_hand_is_compared_as_json_reads_it(
    hub: tuple[Hub, str], tmp_path: Path
) -> None:
    snapshot, env = _applied_in_cache(hub[1], tmp_path, "strip-fp8-kv-cache")
    quant = snapshot / "hf_quant_config.json"
    text = quant.read_text()
    quant.write_text("{" + '"mine": 1, "mine": 2,' + text[text.index("{") + 1 :])

    code, out, err = run("diff", REPO, "--upstream", "--json", env=env)
    assert code == 1, err
    found = {
        (d["pointer"], d["kind"], d["current"], d["transform"])
        for f in json.loads(out)["files"]
        if f["path"] == "hf_quant_config.json"
        for d in f["differences"]
    }
    assert found == {
        ("/mine", "added", 2, None),  # the last of the two, as json.loads reads it
        ("/quantization/kv_cache_quant_algo", "changed", None, "strip-fp8-kv-cache"),
    }
