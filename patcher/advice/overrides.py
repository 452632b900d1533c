"""``overrides``: the engine flags that would do what the applied transforms did, and the
edits that have none. Uses the transform definitions kept in the journal, so it describes
what was applied even after the catalog changes."""

from __future__ import annotations

import copy
import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patcher.engines.engine import Engine, parse_engine
from patcher.engines.readings import Assumed, assumed
from patcher.errors import PatcherError
from patcher.results import JsonResult
from patcher.store.checkpoint import open_checkpoint
from patcher.store.journal import load_object
from patcher.store.jsonfile import read_config
from patcher.store.session import read_journal
from patcher.transforms.definition import Transform, parse_transform, substitute

NOT_OVERRIDABLE = {
    "hf_quant_config.json": "read from disk by the engines (TensorRT-LLM reads it first)",
    "generation_config.json": "not part of the HF config that --hf-overrides changes",
    "tokenizer_config.json": "read by the tokenizer, not by --hf-overrides",
    "chat_template.jinja": "read by the tokenizer, not by --hf-overrides",
}


@dataclass(frozen=True, slots=True)
class EntryOverride:
    """One applied transform and what the engine can do instead."""

    entry_id: int
    transform: str
    hf_overrides: dict[str, Any]
    flags: tuple[str, ...]
    uncovered: tuple[str, ...]
    note: str


@dataclass(frozen=True, slots=True, repr=False)
class Overrides(JsonResult):
    """The merged ``--hf-overrides`` JSON and flags for every applied transform."""

    checkpoint: Path
    entries: tuple[EntryOverride, ...]
    hf_overrides: dict[str, Any]
    flags: tuple[str, ...]
    reading: Assumed | None = None  # with --engine: the release whose rules were used

    @property
    def command(self) -> str:
        """A ``vllm serve`` line with the equivalents (for the edits that have one)."""
        parts = ["vllm serve", shlex.quote(str(self.checkpoint))]
        if self.hf_overrides:  # argv-quoted: the line runs as pasted
            parts.append("--hf-overrides " + shlex.quote(json.dumps(self.hf_overrides)))
        return " ".join([*parts, *self.flags])

    def to_json(self) -> dict[str, Any]:
        """Engine overrides as JSON."""
        return {
            "checkpoint": str(self.checkpoint),
            "reading": None if self.reading is None else self.reading.to_json(),
            "hf_overrides": self.hf_overrides,
            "flags": list(self.flags),
            "command": self.command,
            "entries": [
                {
                    "entry": e.entry_id,
                    "transform": e.transform,
                    "hf_overrides": e.hf_overrides,
                    "flags": list(e.flags),
                    "no_runtime_equivalent": list(e.uncovered),
                    "note": e.note,
                }
                for e in self.entries
            ],
        }


def _merge(into: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)  # never alias an entry's own overrides


def flags_verdict(transform: Transform, engine: Engine) -> str | None:
    """Whether the transform's runtime flags work on ``engine``, for ``show --engine``."""
    runtime = transform.runtime
    if runtime is None or not runtime.flags:
        return None
    flags = " ".join(runtime.flags)
    too_old = _too_old(runtime.requires, engine)
    note = assumed(engine).note
    said = f"{flags}: {too_old}" if too_old else f"{flags}: accepted by {engine}"
    return f"{said} ({note})" if note else said


def _too_old(requires: str | None, engine: Engine | None) -> str | None:
    """Why the flags do not work on ``engine`` (None when they do, or no engine is named)."""
    if requires is None or engine is None:
        return None
    needed = parse_engine(requires)
    if needed.name == engine.name and engine.version >= needed.version:
        return None
    return (
        f"no runtime equivalent on {engine}: the flags need "
        f"{needed.name} {needed.version_text} or later"
    )


def engine_overrides(
    checkpoint: Path | str, *, engine: Engine | str | None = None, revision: str | None = None
) -> Overrides:
    """The runtime equivalents of the transforms applied to the checkpoint; with ``engine``,
    only the flags that engine version accepts."""
    target = parse_engine(engine) if isinstance(engine, str) else engine
    ckpt = open_checkpoint(checkpoint, revision)
    journal = read_journal(ckpt)
    # Whether the flags nest under text_config follows the file the engine will read: one it
    # cannot read is refused, not taken for a flat config.
    config = read_config(ckpt, "config.json")
    nested = isinstance(config, dict) and isinstance(config.get("text_config"), dict)
    merged: dict[str, Any] = {}
    flags: list[str] = []
    entries = []
    for entry in journal.applied:
        try:
            text = load_object(ckpt.journal_dir, entry.definition).decode("utf-8")
            transform = parse_transform(text, entry.source)
        except PatcherError:
            entries.append(
                EntryOverride(
                    entry.id, entry.transform, {}, (), (), "definition not in the journal"
                )
            )
            continue
        runtime = transform.runtime
        params = dict(entry.params)
        overrides: dict[str, Any] = {}
        entry_flags: tuple[str, ...] = ()
        note = ""
        if runtime is not None:
            overrides = substitute(dict(runtime.hf_overrides), params)
            if overrides and runtime.nest_in_text_config and nested:
                overrides = {"text_config": overrides}
            entry_flags = tuple(substitute(list(runtime.flags), params))
            note = runtime.note
            too_old = _too_old(runtime.requires, target)
            if too_old:
                entry_flags, note = (), too_old
            elif runtime.requires and target is None:
                note = f"flags from {runtime.requires.replace('==', ' ')} on. {note}".strip()
        covered = bool(overrides or entry_flags)
        uncovered = tuple(
            f"{record.path}: {NOT_OVERRIDABLE[record.path]}"
            for record in entry.files
            if record.path in NOT_OVERRIDABLE and not entry_flags
        )
        if not covered and not uncovered:
            uncovered = tuple(f"{record.path}: no runtime equivalent" for record in entry.files)
        _merge(merged, overrides)
        flags += [f for f in entry_flags if f not in flags]
        entries.append(
            EntryOverride(entry.id, entry.transform, overrides, entry_flags, uncovered, note)
        )
    return Overrides(
        ckpt.root,
        tuple(entries),
        merged,
        tuple(flags),
        assumed(target) if target is not None else None,
    )
