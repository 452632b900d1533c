"""The file primitives the write path trusts: in-place comparison and background hashing."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from patcher.fsio import Digest, holds


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
