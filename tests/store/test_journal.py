"""The journal keeps the upstream original once; stacked entries start from rebuilt bytes."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patcher import api
from patcher.ops.reapply import reapply
from patcher.store import journal
from patcher.text import jsontext

SET = """name = "set-{name}"
summary = "s"
why = "w"
undo_when = "u"
[[edits]]
file = "tokenizer.json"
ops = [{{ op = "set", path = "{path}", value = {value} }}]
"""
DOC = {
    "version": "1.0",
    "model": {"dropout": None, "vocab": {f"tok{i}": i for i in range(3000)}, "merges": []},
    "added_tokens": [{"id": 0, "content": "<s>"}],
}
POINTERS = ["/model/dropout", "/model/fuse_unk", "/version", "/added_tokens/0/id", "/extra"]


def _checkpoint(root: Path) -> Path:
    root.mkdir()
    (root / "config.json").write_text('{"model_type": "llama"}\n')
    (root / "tokenizer.json").write_text(json.dumps(DOC, indent=2))
    return root


def _objects(ckpt: Path) -> int:
    objects = ckpt / ".patcher" / "objects"
    return sum(p.stat().st_size for p in objects.iterdir()) if objects.exists() else 0


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    edits=st.lists(
        st.tuples(st.sampled_from(POINTERS), st.integers(-5, 10**6)), min_size=1, max_size=12
    )
)
def test_stacked_applies_keep_the_original_once_and_revert_exactly(
    tmp_path_factory: object, edits: list[tuple[str, int]]
) -> None:
    """10 stacked edits of a file used to store 10 copies of it; now the original and one
    copy every KEYFRAME entries, and every revert still gives back the exact bytes."""
    base = Path(tmp_path_factory.mktemp("stack"))  # type: ignore[attr-defined]
    ckpt = _checkpoint(base / "ckpt")
    states = [(ckpt / "tokenizer.json").read_bytes()]
    for index, (pointer, value) in enumerate(edits):
        transform = base / f"t{index}.toml"
        transform.write_text(SET.format(name=index, path=pointer, value=value))
        if api.apply(ckpt, transform).outcome == "applied":
            states.append((ckpt / "tokenizer.json").read_bytes())
    size = len(states[0])
    kept = 1 + (len(states) - 2) // journal.KEYFRAME
    assert _objects(ckpt) <= kept * size + 300 * len(edits)  # + the transform definitions
    while len(states) > 1:
        api.revert(ckpt, last=True)
        states.pop()
        assert (ckpt / "tokenizer.json").read_bytes() == states[-1]


def test_a_stack_reapplies_after_a_re_download(tmp_path: Path) -> None:
    ckpt = _checkpoint(tmp_path / "ckpt")
    original = (ckpt / "tokenizer.json").read_bytes()
    for index, value in enumerate([1, 2, 3]):
        transform = tmp_path / f"t{index}.toml"
        transform.write_text(SET.format(name=index, path="/model/dropout", value=value))
        api.apply(ckpt, transform)
    patched = (ckpt / "tokenizer.json").read_bytes()
    (ckpt / "tokenizer.json").write_bytes(original)  # what a fresh download leaves
    reapply(ckpt)
    assert (ckpt / "tokenizer.json").read_bytes() == patched


def test_entries_of_another_patcher_version_are_not_relied_on(tmp_path: Path) -> None:
    """A newer patcher may render values differently, so it keeps its own copy rather than
    rebuild from an older version's patches."""
    ckpt = _checkpoint(tmp_path / "ckpt")
    first = tmp_path / "a.toml"
    first.write_text(SET.format(name="a", path="/model/dropout", value=1))
    api.apply(ckpt, first)
    raw = json.loads((ckpt / ".patcher" / "journal.json").read_text())
    raw["entries"][0]["tool_version"] = "0.0.1"
    (ckpt / ".patcher" / "journal.json").write_text(json.dumps(raw))
    second = tmp_path / "b.toml"
    second.write_text(SET.format(name="b", path="/model/dropout", value=2))
    one = _objects(ckpt)
    api.apply(ckpt, second)
    assert _objects(ckpt) > one + len(json.dumps(DOC, indent=2)) - 100


def test_reverting_a_whole_stack_replays_each_step_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """revert --all of a stack rebuilds each entry's start from what the entry above it
    replayed (it used to replay from the kept copy for every entry, and re-read the journal)."""
    ckpt = _checkpoint(tmp_path / "ckpt")
    original = (ckpt / "tokenizer.json").read_bytes()
    for index in range(24):
        transform = tmp_path / f"t{index}.toml"
        transform.write_text(SET.format(name=index, path="/model/dropout", value=index))
        api.apply(ckpt, transform)
    replays = []
    real = jsontext.apply_ops

    def counted(data: bytes, ops: Any) -> bytes:
        replays.append(ops)
        return real(data, ops)

    monkeypatch.setattr(jsontext, "apply_ops", counted)
    api.revert(ckpt, every=True)
    assert (ckpt / "tokenizer.json").read_bytes() == original
    assert len(replays) <= 24  # one replay per stacked step at most (was about 3.5 each)


def test_an_object_stored_meanwhile_is_read_not_refused(tmp_path: Path) -> None:
    """load_object found no file and went to rebuild it; another process stored it meanwhile:
    the rebuild reads the stored bytes instead of calling them missing."""
    directory = tmp_path / ".patcher"
    data = b'{"a": 1}\n'
    digest = journal.store_object(directory, data)
    assert journal.rebuild_object(directory, digest) == data


def _ino(path: Path) -> int:
    return path.stat().st_ino


def test_apply_keeps_the_original_file_itself_not_a_copy(kimi: Path) -> None:
    """The original's inode moves into objects/ (no second copy written); the checkpoint gets
    a new file, so nothing written there later can reach the kept bytes."""
    config = kimi / "config.json"
    original, inode = config.read_bytes(), _ino(config)
    api.apply(kimi, "strip-fp8-kv-cache")
    kept = kimi / ".patcher" / "objects" / journal.sha256(original)
    assert _ino(kept) == inode and kept.stat().st_nlink == 1
    assert _ino(config) != inode and config.stat().st_nlink == 1
    applied = config.read_bytes()
    with config.open("r+b") as editor:  # an edit in place, then undone by hand
        editor.write(b"X")
        assert kept.read_bytes() == original
        editor.seek(0)
        editor.write(applied[:1])
    api.revert(kimi, last=True)
    assert config.read_bytes() == original


def test_a_file_with_another_name_is_copied_not_linked(kimi: Path, tmp_path: Path) -> None:
    """A checkpoint file hard-linked elsewhere (a `cp -al` copy of a fleet's store) is kept
    as a copy: an edit in place through the other name cannot change the kept original."""
    config = kimi / "config.json"
    original = config.read_bytes()
    elsewhere = tmp_path / "fleet-copy-config.json"
    os.link(config, elsewhere)
    api.apply(kimi, "strip-fp8-kv-cache")
    kept = kimi / ".patcher" / "objects" / journal.sha256(original)
    assert _ino(kept) != _ino(elsewhere)
    with elsewhere.open("r+b") as other:  # an editor writing in place
        other.write(b"X")
    api.revert(kimi, last=True)
    assert config.read_bytes() == original


def test_where_no_hard_link_can_be_made_the_original_is_copied(
    kimi: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another filesystem under .patcher, or one without hard links: the copy as before."""

    def no_link(*_: object, **__: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", no_link)
    config = kimi / "config.json"
    original, inode = config.read_bytes(), _ino(config)
    api.apply(kimi, "strip-fp8-kv-cache")
    kept = kimi / ".patcher" / "objects" / journal.sha256(original)
    assert kept.read_bytes() == original and _ino(kept) != inode
    assert not list((kimi / ".patcher" / "objects").glob(".*patcher-tmp"))
    api.revert(kimi, last=True)
    assert config.read_bytes() == original


def test_journal_growth_over_thousands_of_entries_stays_bounded(tmp_path: Path) -> None:
    """1,000 entries applied and reverted (2,000 changes): ids never repeat, the journal keeps a
    bounded history (it does not grow with every change ever made), and the checkpoint is
    still byte-identical to its original at the end."""
    (tmp_path / "config.json").write_text('{"architectures": ["X"], "torch_dtype": "bfloat16"}\n')
    original = (tmp_path / "config.json").read_bytes()
    sizes = []
    for round_ in range(1000):
        applied = api.apply(tmp_path, "set-torch-dtype", {"dtype": "float16"})
        assert applied.entry_id == round_ + 1  # never an id used before
        api.revert(tmp_path, last=True)
        if round_ % 250 == 249:
            sizes.append((tmp_path / ".patcher" / "journal.json").stat().st_size)
    assert (tmp_path / "config.json").read_bytes() == original
    assert api.status(tmp_path).applied == ()
    assert max(sizes) < 64 * 1024 and sizes[-1] <= sizes[0] * 1.5, sizes
