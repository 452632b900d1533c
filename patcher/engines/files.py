"""The JSON files an engine's config stage reads, each parsed once."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from patcher.errors import InputFileError
from patcher.store.checkpoint import Checkpoint
from patcher.store.jsonfile import parse_config, read_config
from patcher.text.document import BOM

if TYPE_CHECKING:
    from patcher.store.snapshot import Snapshot

ENGINE_FILES = ("config.json", "hf_quant_config.json")
GENERATION_FILE = "generation_config.json"  # read for request defaults; the engine starts without
READ_FILES = (*ENGINE_FILES, GENERATION_FILE)
TOKENIZER_FILE = "tokenizer_config.json"  # read by the tokenizer: only its first bytes matter here
# The files whose byte-order mark the engine model knows the effect of.
MARKED_FILES = (*READ_FILES, TOKENIZER_FILE)


@dataclass(frozen=True, slots=True)
class ConfigFiles:
    """``config.json``, ``hf_quant_config.json`` and ``generation_config.json`` as parsed JSON
    (None when absent), and which of those and ``tokenizer_config.json`` start with a BOM."""

    config: dict[str, Any] | None
    hf_quant: dict[str, Any] | None
    source: str = "config.json"  # where config came from, for messages
    weights: bool = False  # whether *.safetensors files sit beside them (listed, never read)
    bom: frozenset[str] = frozenset()  # the files among them that start with a BOM
    generation: dict[str, Any] | None = None


def _load(checkpoint: Checkpoint, name: str) -> dict[str, Any] | None:
    path = checkpoint.path(name)
    value = read_config(checkpoint, name)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InputFileError("expected a JSON object", file=path, pointer="", hint="fix the file")
    return value


def has_safetensors(checkpoint: Checkpoint) -> bool:
    """Whether the checkpoint folder lists a ``*.safetensors`` file (names only: never opened)."""
    try:
        with os.scandir(checkpoint.root) as entries:
            return any(entry.name.endswith(".safetensors") for entry in entries)
    except OSError:
        return False


def starts_with_bom(checkpoint: Checkpoint, name: str) -> bool:
    """Whether the file starts with a UTF-8 byte-order mark (False when it cannot be read:
    reading it for its values reports why)."""
    try:
        with os.fdopen(checkpoint.open(name), "rb") as handle:
            return handle.read(len(BOM)) == BOM
    except OSError:
        return False


def readable_generation(files: ConfigFiles) -> tuple[dict[str, Any] | None, str]:
    """generation_config.json as the engines' transformers reads it: the parsed object, or None
    and why not (missing, or a byte-order mark, which transformers refuses)."""
    if GENERATION_FILE in files.bom:
        return None, f"{GENERATION_FILE} starts with a byte-order mark, which transformers refuses"
    if not isinstance(files.generation, dict):
        return None, f"no {GENERATION_FILE}"
    return files.generation, f"from {GENERATION_FILE}"


def bom_after(before: frozenset[str], replaced: Mapping[str, bytes]) -> frozenset[str]:
    """The files read with a byte-order mark once ``replaced`` (name -> bytes) are put in."""
    return frozenset(
        name
        for name in MARKED_FILES
        if (replaced[name].startswith(BOM) if name in replaced else name in before)
    )


_JSON_KINDS = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "true or false",
}


def config_files(
    checkpoint: Checkpoint,
    config: dict[str, Any] | None,
    hf_quant: dict[str, Any] | None,
    generation: dict[str, Any] | None,
    bom: frozenset[str] | None = None,
) -> ConfigFiles:
    """The engine model's view of the checkpoint's files, given them parsed (and ``bom``, the
    files that start with a byte-order mark; read from the disk when not given); a file that is
    JSON but not an object (``[]``) is refused naming it, as the engines refuse it."""
    for name, value in zip(READ_FILES, (config, hf_quant, generation), strict=True):
        if value is not None and not isinstance(value, dict):
            raise InputFileError(
                f"expected a JSON object, found {_JSON_KINDS.get(type(value), 'another value')}",
                file=checkpoint.path(name),
                pointer="",
                hint="fix the file (one JSON object), then run the command again",
            )
    return ConfigFiles(
        config,
        hf_quant,
        str(checkpoint.path("config.json")),
        has_safetensors(checkpoint),
        frozenset(name for name in MARKED_FILES if starts_with_bom(checkpoint, name))
        if bom is None
        else bom,
        generation,
    )


def read_config_files(checkpoint: Checkpoint) -> ConfigFiles:
    """The files the engine model reads, from the checkpoint as it is now."""
    config, hf_quant, generation = (_load(checkpoint, name) for name in READ_FILES)
    return config_files(checkpoint, config, hf_quant, generation)


def snapshot_config_files(snapshot: Snapshot) -> ConfigFiles:
    """The files the engine model reads, from the bytes ``snapshot`` holds: the ones the plan
    made on it edits, never a second read of the disk that another process may have changed
    in between. A file there that is not JSON is refused naming it. ``snapshot`` is over the
    checkpoint (a held one has only the files its fold holds)."""
    assert snapshot.held is None, "the checkpoint's files, not a fold's"
    checkpoint = snapshot.checkpoint

    def parsed(name: str) -> Any:
        data = snapshot.read(name)
        return None if data is None else parse_config(data, checkpoint.root / name)

    config, hf_quant, generation = (parsed(name) for name in READ_FILES)
    bom = frozenset(n for n in MARKED_FILES if (snapshot.read(n) or b"").startswith(BOM))
    return config_files(checkpoint, config, hf_quant, generation, bom)
