"""doctor on a weights file that is not a whole safetensors file (patcher/advice/
safetensors_files.py), read against safetensors' own source
(snapshots/engines/safetensors-header.txt)."""

from __future__ import annotations

import re

import pytest

from patcher.advice.doctor import diagnose_text
from tests.conftest import SNAPSHOTS

READING = (SNAPSHOTS / "engines" / "safetensors-header.txt").read_text()
# One line per rule (test_doctor's marker test takes them with its own cases).
SAFETENSORS_LINES = [
    "safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge"
]


def _words() -> dict[str, str]:
    """Each error's Display words (safetensors 0.6 on), by its variant's name."""
    return dict(re.findall(r'(\w+)(?:\(\w+\))? => write!\(f, "([^":{]+)', READING))


def test_a_git_lfs_pointer_s_first_bytes_are_a_header_length_over_the_limit() -> None:
    # read_metadata takes the first 8 bytes as a little-endian u64 and refuses one over
    # MAX_HEADER_SIZE: a pointer file's "version " is such a length
    limit = int(re.search(r"MAX_HEADER_SIZE: usize = ([\d_]+)", READING).group(1))  # type: ignore[union-attr]
    pointer = b"version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 4\n"
    assert int.from_bytes(pointer[:8], "little") > limit


@pytest.mark.parametrize(
    ("variant", "kind"),
    [
        ("HeaderTooLarge", "not a safetensors file"),
        ("HeaderTooSmall", "not a safetensors file"),
        ("MetadataIncompleteBuffer", "cut short"),
        ("InvalidHeaderLength", "cut short"),
    ],
)
def test_both_wordings_of_each_error_name_the_file_to_fetch_again(variant: str, kind: str) -> None:
    words = _words()[variant]
    for said in (variant, words):  # {e:?} before safetensors 0.6, {e} from it
        log = (
            '  File "/venv/lib/python3.12/site-packages/vllm/model_executor/model_loader/'
            'weight_utils.py", line 406, in safetensors_weights_iterator\n'
            '    with safe_open(st_file, framework="pt") as f:\n'
            f"safetensors_rust.SafetensorError: Error while deserializing header: {said}\n"
        )
        found = diagnose_text(log)
        assert found.code == "safetensors-header", said
        assert kind in found.cause
        assert [f.kind for f in found.fixes] == ["advice"]  # the file's, never a setting's
