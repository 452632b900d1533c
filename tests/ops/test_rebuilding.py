"""A rebuild (sync, rebase, a replacement) is planned in memory and committed in one step: a
dry run is that plan, so what it says a real run writes is what the real run writes, in a
plain checkpoint and in an overlay (whose files are links to a read-only store)."""

from __future__ import annotations

import shutil
from pathlib import Path

from patcher import api
from tests.conftest import SNAPSHOTS

EXAMPLE = SNAPSHOTS / "example" / "kimi-k2.5-nvfp4"
TARGET = {"engine": "vllm==0.16.0", "gpu": "rtx-pro-6000", "tensor_parallel": 8}


def _files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir()) if p.suffix == ".json"}


def _after(before: dict[str, bytes], changes: dict[str, bytes | None]) -> dict[str, bytes]:
    after = {**before, **{p: d for p, d in changes.items() if d is not None}}
    return {p: d for p, d in after.items() if changes.get(p, d) is not None}


def test_a_replacements_dry_run_is_what_the_replacement_writes(kimi: Path) -> None:
    api.apply(kimi, "set-torch-dtype", {"dtype": "float16"})
    api.apply(kimi, "drop-auto-map")
    before = _files(kimi)
    preview = api.apply(kimi, "set-torch-dtype", {"dtype": "float32"}, dry_run=True)
    assert preview.outcome == "dry-run" and preview.replaced == 1 and _files(kimi) == before
    assert [p.path for p in preview.files] == ["config.json"]
    assert all(p.forward and p.inverse for p in preview.files)  # the new entry's patches
    done = api.apply(kimi, "set-torch-dtype", {"dtype": "float32"})
    assert done.outcome == "applied" and done.replaced == 1
    assert _files(kimi) == _after(before, {p.path: p.after for p in preview.files})
    assert [(p.path, p.after) for p in done.files] == [(p.path, p.after) for p in preview.files]


def test_a_syncs_dry_run_is_what_the_sync_writes(kimi: Path) -> None:
    """Reverting a hand-applied entry (--prune), re-applying one with new parameters and
    applying a needed one, in one rebuild."""
    api.apply(kimi, "drop-auto-map")
    api.sync(kimi, api.make_target(**TARGET, transforms={"set-torch-dtype": {"dtype": "float16"}}))
    target = api.make_target(**TARGET, transforms={"set-torch-dtype": {"dtype": "bfloat16"}})
    before = _files(kimi)
    preview = api.sync(kimi, target, dry_run=True, prune=True)
    assert preview.dry_run and preview.files and _files(kimi) == before
    predicted = _after(before, {c.path: c.after for c in preview.files})
    done = api.sync(kimi, target, prune=True)
    assert _files(kimi) == predicted
    assert [(c.path, c.after) for c in done.files] == [(c.path, c.after) for c in preview.files]
    assert done.plan.launch is not None and preview.plan.launch is not None
    assert done.plan.launch.argv == preview.plan.launch.argv


def test_an_overlays_dry_run_is_what_its_sync_writes(tmp_path: Path) -> None:
    """In an overlay the unpatched files are links to the store: the dry run judges the
    links the real sync puts back, and the store is never written."""
    source = tmp_path / "store" / "kimi"
    shutil.copytree(EXAMPLE, source)
    overlay = tmp_path / "overlay"
    api.apply(source, "set-torch-dtype", {"dtype": "float16"}, overlay=overlay)
    store = _files(source)
    target = api.make_target(**TARGET)
    before = _files(overlay)
    preview = api.sync(overlay, target, dry_run=True, prune=True)
    assert preview.files and _files(overlay) == before
    predicted = _after(before, {c.path: c.after for c in preview.files})
    api.sync(overlay, target, prune=True)
    assert _files(overlay) == predicted and _files(source) == store
    linked = [p.name for p in overlay.iterdir() if p.is_symlink()]
    assert "config.json" not in linked  # strip-fp8-kv-cache patched it: a file of its own
    assert "model.safetensors.index.json" in linked
