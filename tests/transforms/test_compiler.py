"""The compiler: every edit is checked against the patch it claims to be, at any file size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from patcher import api
from patcher.text import jsontext
from tests.conftest import tree_bytes

BYTE_FALLBACK = """name = "byte-fallback"
summary = "Turn on byte fallback."
why = "w"
undo_when = "u"
[[edits]]
file = "tokenizer.json"
ops = [
  { op = "replace", path = "/model/byte_fallback", value = true },
  { op = "replace", path = "/model/unk_token", value = "<unk>" },
  { op = "add", path = "/model/fuse_unk", value = true },
]
"""


def _tokenizer(root: Path, tokens: int) -> Path:
    vocab = {f"tok{i}Ġ": i for i in range(tokens)}
    model = {"type": "BPE", "unk_token": None, "byte_fallback": False, "vocab": vocab}
    data = {"version": "1.0", "model": model, "merges": [f"a{i} b" for i in range(tokens)]}
    root.mkdir()
    (root / "config.json").write_text('{"model_type": "llama"}\n')
    (root / "tokenizer.json").write_text(json.dumps(data, indent=2, ensure_ascii=False))
    return root


@pytest.mark.parametrize("tokens", [10, 200_000], ids=["1 KB", "9 MB"])
def test_a_text_edit_that_disagrees_with_its_patch_is_caught_at_any_size(
    tmp_path: Path, tokens: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, only files up to 8 MiB were checked; a bug in the editor that damaged a value
    beside the edit in a larger file went to disk. Now the check covers every size."""
    ckpt = _tokenizer(tmp_path / "ckpt", tokens)
    (tmp_path / "t.toml").write_text(BYTE_FALLBACK)
    before = tree_bytes(ckpt)
    real = jsontext.JsonText.replace

    def damaging(self: jsontext.JsonText, pointer: str, value: Any, raw: str | None = None) -> str:
        old = real(self, pointer, value, raw)
        at = self.data.find(b'"tok3')  # a vocab key beside the edited path
        if at >= 0:
            self._splice(at + 1, at + 4, b"TOK")
        return old

    monkeypatch.setattr(jsontext.JsonText, "replace", damaging)
    with pytest.raises(AssertionError, match="text edit and patch disagree"):
        api.apply(ckpt, tmp_path / "t.toml")
    assert tree_bytes(ckpt) == before


def test_a_large_file_edit_keeps_every_other_byte(tmp_path: Path) -> None:
    ckpt = _tokenizer(tmp_path / "ckpt", 200_000)
    (tmp_path / "t.toml").write_text(BYTE_FALLBACK)
    original = (ckpt / "tokenizer.json").read_bytes()
    api.apply(ckpt, tmp_path / "t.toml")
    after = (ckpt / "tokenizer.json").read_bytes()
    model = json.loads(after)["model"]
    assert (model["byte_fallback"], model["unk_token"], model["fuse_unk"]) == (True, "<unk>", True)
    assert (
        after.replace(b'"byte_fallback": true', b'"byte_fallback": false')
        .replace(b'"unk_token": "<unk>"', b'"unk_token": null')
        .replace(b',\n    "fuse_unk": true', b"")
        == original
    )
    api.revert(ckpt, last=True)
    assert (ckpt / "tokenizer.json").read_bytes() == original
