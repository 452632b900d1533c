"""The file primitives the write path trusts: in-place comparison, background hashing, and
keeping an original by a hard link."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from patcher.store.fsio import TMP_SUFFIX, Digest, atomic_link, holds


def _holds(path: Path, data: bytes) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        return holds(fd, data)
    finally:
        os.close(fd)


# Over 2 MiB with an uneven tail, so the comparison runs over several 1 MiB pieces.
BIG = bytes(range(256)) * 9000 + b"tail"


@pytest.mark.parametrize("data", [b"", b'{"a": 1}\n', BIG])
def test_holds_the_same_bytes(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(data)
    assert _holds(path, data)


@pytest.mark.parametrize("where", [0, (1 << 20) - 1, 1 << 20, len(BIG) - 1])
def test_one_changed_byte_anywhere_is_seen(tmp_path: Path, where: int) -> None:
    changed = bytearray(BIG)
    changed[where] ^= 0x01
    path = tmp_path / "f.json"
    path.write_bytes(bytes(changed))
    assert not _holds(path, BIG)


@pytest.mark.parametrize("data", [BIG[:-1], BIG + b"\n", b""])
def test_another_length_is_not_the_same(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(data)
    assert not _holds(path, BIG)


@pytest.mark.parametrize("data", [b"", b"small", BIG])
def test_digest_is_the_sha256(data: bytes) -> None:
    assert Digest(data).result() == hashlib.sha256(data).hexdigest()


def _inode(path: Path) -> tuple[int, int]:
    st = os.lstat(path)
    return st.st_ino, st.st_nlink


def _checkpoint_with(tmp_path: Path, data: bytes) -> tuple[Path, Path, Path]:
    root = tmp_path / "ckpt"
    (root / ".patcher" / "objects").mkdir(parents=True)
    source = root / "tokenizer.json"
    source.write_bytes(data)
    return root, source, root / ".patcher" / "objects" / "kept"


def test_atomic_link_keeps_the_file_itself(tmp_path: Path) -> None:
    root, source, target = _checkpoint_with(tmp_path, BIG)
    inode = _inode(source)[0]
    assert atomic_link(source, target, BIG, root=root)
    assert _inode(target) == (inode, 2) and target.read_bytes() == BIG
    assert not [p for p in target.parent.iterdir() if p.name.endswith(TMP_SUFFIX)]


CASES = ["other-bytes", "second-name", "symlink", "outside", "executable"]
CASES += ["another-owner"] if os.geteuid() == 0 else []


@pytest.mark.parametrize("case", CASES)
def test_atomic_link_refuses_and_leaves_nothing(tmp_path: Path, case: str) -> None:
    """Anything but a lone regular file of the checkpoint holding exactly the bytes is not
    linked (the caller then copies): nothing is created, nothing is changed."""
    root, source, target = _checkpoint_with(tmp_path, BIG)
    data = BIG
    if case == "other-bytes":
        data = BIG[:-1] + b"!"
    elif case == "second-name":
        os.link(source, tmp_path / "elsewhere.json")
    elif case == "symlink":
        (tmp_path / "real.json").write_bytes(BIG)
        source.unlink()
        source.symlink_to(tmp_path / "real.json")
    elif case == "outside":
        source = tmp_path / "real.json"
        source.write_bytes(BIG)
    elif case == "executable":
        source.chmod(0o755)
    else:  # root provisioning a user's checkpoint: the journal is the user's, the file root's
        os.chown(target.parent, 4321, 4321)
    before = {p.name: _inode(p) for p in [*root.rglob("*"), *tmp_path.glob("*.json")]}
    assert not atomic_link(source, target, data, root=root)
    assert {p.name: _inode(p) for p in [*root.rglob("*"), *tmp_path.glob("*.json")]} == before


def test_a_name_swapped_for_a_symlink_after_the_check_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is swapped for a symlink between the check and the link (the link then names
    the symlink): it is not kept, nothing is left behind, and no error is raised (the caller
    copies instead)."""
    root, source, target = _checkpoint_with(tmp_path, BIG)
    (tmp_path / "real.json").write_bytes(BIG)
    real_link = os.link

    def swap_then_link(*args: Any, **kwargs: Any) -> None:
        source.unlink()
        source.symlink_to(tmp_path / "real.json")
        real_link(*args, **kwargs)

    monkeypatch.setattr(os, "link", swap_then_link)
    assert not atomic_link(source, target, BIG, root=root)
    assert list(target.parent.iterdir()) == []
