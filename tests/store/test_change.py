"""``commit``: the one function that writes a change planned in memory."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

import patcher
from patcher.errors import ConflictError
from patcher.ops.adding import plan_entry
from patcher.store.change import Change, commit
from patcher.store.checkpoint import Checkpoint, open_checkpoint
from patcher.store.hfcache import RepoRef
from patcher.store.journal import load_journal
from patcher.store.session import Session, read_journal, write_session
from patcher.store.snapshot import Snapshot
from patcher.transforms.catalog import find_transform
from patcher.transforms.compiler import FilePlan, compile_transform
from patcher.transforms.definition import Transform
from patcher.transforms.params import ResolvedParams, resolve_params
from tests.conftest import tree_bytes


def _planned(
    kimi: Path, name: str, params: dict[str, str] | None = None
) -> tuple[Checkpoint, Transform, ResolvedParams, tuple[FilePlan, ...]]:
    ckpt = open_checkpoint(kimi)
    transform = find_transform(name)
    resolved = resolve_params(transform, params or {})
    plans = compile_transform(Snapshot(ckpt), transform, resolved)
    return ckpt, transform, resolved, plans


def test_a_planned_change_is_written_by_commit_alone(kimi: Path) -> None:
    """Planning writes nothing; commit writes the files, keeps the original and the
    definition, and leaves the journal the change said."""
    ckpt, transform, resolved, plans = _planned(kimi, "strip-fp8-kv-cache")
    before = {p.name: p.read_bytes() for p in kimi.iterdir() if p.is_file()}
    with write_session(ckpt) as session:
        change = plan_entry(Snapshot.of(session), transform, resolved.recorded, plans, None)
        assert {p.name: p.read_bytes() for p in kimi.iterdir() if p.is_file()} == before
        assert not (kimi / ".patcher" / "objects").exists()
        done = commit(session, change)
    assert load_journal(ckpt.journal_dir) == done
    assert [(e.transform, e.state) for e in done.entries] == [("strip-fp8-kv-cache", "applied")]
    kept = {p.name for p in (kimi / ".patcher" / "objects").iterdir()}
    assert {plans[0].before_hash, done.entries[0].definition} <= kept
    assert (kimi / plans[0].path).read_bytes() == plans[0].after


def test_a_change_planned_on_another_journal_is_refused_with_nothing_written(
    kimi: Path,
) -> None:
    ckpt, transform, resolved, plans = _planned(kimi, "strip-fp8-kv-cache")
    with write_session(ckpt) as session:
        stale = plan_entry(Snapshot.of(session), transform, resolved.recorded, plans, None)
    ckpt2, other, params, other_plans = _planned(kimi, "set-torch-dtype", {"dtype": "float16"})
    with write_session(ckpt2) as session:
        commit(session, plan_entry(Snapshot.of(session), other, params.recorded, other_plans, None))
    before = {p.name: p.read_bytes() for p in kimi.iterdir() if p.is_file()}
    journal = (kimi / ".patcher" / "journal.json").read_bytes()
    with write_session(ckpt) as session, pytest.raises(ConflictError, match="journal changed"):
        commit(session, stale)
    assert {p.name: p.read_bytes() for p in kimi.iterdir() if p.is_file()} == before
    assert (kimi / ".patcher" / "journal.json").read_bytes() == journal


def test_a_change_to_the_journal_alone_is_one_save(
    kimi: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recording the repository a checkpoint came from changes the journal and no file: the
    commit saves it once (no pending step to settle), and the files are untouched."""
    patcher.apply(kimi, "strip-fp8-kv-cache")
    ckpt = open_checkpoint(kimi)
    before = tree_bytes(kimi)
    saves: list[object] = []
    real = Session.save

    def counted(session: Session, journal: object) -> None:
        saves.append(journal)
        real(session, journal)  # type: ignore[arg-type]

    monkeypatch.setattr(Session, "save", counted)
    with write_session(ckpt) as session:
        ref = RepoRef("nvidia/Kimi-K2.5-NVFP4", "0" * 40)
        remembered = replace(session.journal, upstream=ref)
        commit(session, Change(session.journal, remembered, (), remembered))
    assert saves == [remembered] and read_journal(ckpt).upstream == ref
    assert tree_bytes(kimi) == before
