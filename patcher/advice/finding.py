"""A finding of ``check``: one known problem, where it is, and what to run about it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Finding:
    """One known problem, where it is, and what to run about it: ``command`` runs as pasted
    into a shell (None when no command fixes it), ``alternatives`` are other commands that do
    (an engine flag), and ``note`` is prose, never inside a command."""

    code: str
    file: str
    pointer: str
    message: str
    transform: str | None
    command: str | None
    alternatives: tuple[str, ...] = ()
    note: str | None = None


def dig(doc: Any, keys: tuple[str, ...]) -> Any:
    """The value at ``keys`` in nested dicts, or None where one is missing."""
    for key in keys:
        if not isinstance(doc, dict) or key not in doc:
            return None
        doc = doc[key]
    return doc


def pointer_of(keys: tuple[str, ...]) -> str:
    """The JSON pointer of ``keys`` (plain member names)."""
    return "".join("/" + k for k in keys)


def language_model(config: Any) -> tuple[Any, tuple[str, ...]]:
    """The dict holding the language model's keys (``text_config`` of a multimodal config,
    else the config), and its keys from the root."""
    if isinstance(config, dict) and isinstance(config.get("text_config"), dict):
        return config["text_config"], ("text_config",)
    return config, ()
