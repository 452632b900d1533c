"""doctor's answer when a weights file is not a whole safetensors file: safetensors' own words,
"Error while deserializing header: X" (read from huggingface/safetensors at 24b0b28,
snapshots/engines/safetensors-header.txt). A file's first 8 bytes are its header's length:

- ``HeaderTooLarge`` ("header too large" from safetensors 0.6): that length is over 100 MB, so
  the file is something else under the name: a Git LFS pointer ("version https://git-lfs...",
  a clone without ``git lfs``), an HTML error page saved by a download;
- ``HeaderTooSmall``: the file is shorter than 8 bytes (empty);
- ``InvalidHeaderLength``, ``MetadataIncompleteBuffer`` ("incomplete metadata, file not fully
  covered"): the tensors the header lists do not end where the file does (cut short by a
  download or an upload, or bytes added);
- ``InvalidHeaderDeserialization`` ("invalid JSON in header"): the header is damaged.

Each is the file's, not a setting's: the file fetched again whole."""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix, LogContext, Rule

# The variant's name (before safetensors 0.6, formatted with {e:?}) or its Display words.
HEADER = re.compile(
    r"Error while deserializing header: (HeaderTooLarge|HeaderTooSmall|InvalidHeaderLength|"
    r"MetadataIncompleteBuffer|InvalidHeaderDeserialization|header too large|header too small|"
    r"invalid header length|incomplete metadata|invalid JSON in header)"
)
_NOT_SAFETENSORS = ("HeaderTooLarge", "header too large", "HeaderTooSmall", "header too small")


def broken_file(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """A weights file that is not the whole safetensors file its name says."""
    said = m.group(1)
    if said in _NOT_SAFETENSORS:
        cause = (
            f"a weights file is not a safetensors file ({said}: its first bytes are not a "
            "header's length): most often a Git LFS pointer left by a clone without git lfs, "
            "or a page a download saved in its place"
        )
        first = Fix(
            "advice",
            "fetch the weights themselves: git lfs install && git lfs pull in the clone, or "
            "hf download REPO --local-dir DIR",
            note="head -c 200 FILE shows a pointer's 'version https://git-lfs' text",
        )
    else:
        cause = (
            f"a weights file is cut short or damaged ({said}: the tensors its header lists do "
            "not end where the file does): an interrupted download, a copy, or a broken upload"
        )
        first = Fix(
            "advice",
            "fetch the file again whole: hf download REPO FILE --local-dir DIR (--force-download "
            "over a partial one)",
            note="its size against the Hub's (the file list on the model page, or hf "
            "download's own check) tells which shard",
        )
    return cause, [first]


SAFETENSORS_RULES: tuple[Rule, ...] = (("safetensors-header", HEADER, broken_file),)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
SAFETENSORS_MARKERS = ("Error while deserializing header",)
