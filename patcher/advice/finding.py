"""A finding of ``check``: one known problem, where it is, and what to run about it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from patcher.engines.view import EngineView
    from patcher.store.checkpoint import Checkpoint


# Every finding check reports, by its stable code (``--json``'s ``code``; scripts match it).
FindingCode = Literal[
    "add-eos-token",
    "bom",
    "chat-template-missing",
    "chat-template-shadowed",
    "engine-startup-error",
    "eos-invalid",
    "eos-mismatch",
    "eos-token-unknown",
    "eos-turn-end-missing",
    "fp8-kv-directive",
    "generation-max-new-tokens",
    "kv-disagreement",
    "kv-memory",
    "legacy-llama3-rope-downgrade",
    "mtp-weights-missing",
    "null-dtype",
    "partial-sliding-window",
    "tokenizer-class-unknown",
]


@dataclass(frozen=True, slots=True)
class Finding:
    """One known problem, where it is, and what to run about it: ``command`` runs as pasted
    into a shell (None when no command fixes it), ``alternatives`` are other commands that do
    (an engine flag), and ``note`` is prose, never inside a command."""

    code: FindingCode
    file: str
    pointer: str
    message: str
    transform: str | None
    command: str | None
    alternatives: tuple[str, ...] = ()
    note: str | None = None


Get = Callable[[str], Any]  # a file of the checkpoint, parsed once (None: absent, unreadable)
Apply = Callable[..., str]  # the command that applies a transform here (its --set words)


@dataclass(frozen=True, slots=True)
class CheckContext:
    """What every check rule is given: the checkpoint, its files, the engine judged against
    (None: none named) and its view, and how to name a fix."""

    checkpoint: Checkpoint
    get: Get
    marked: frozenset[str]  # the files that start with a byte-order mark
    apply: Apply
    engine: str | None
    view: EngineView | None
    tensor_parallel: int | None

    def has_file(self, name: str) -> bool:
        """Whether the checkpoint has a regular file ``name``."""
        return self.checkpoint.path(name).is_file()


# A check rule: the findings of one known problem (how to add one: docs/development.md).
Rule = Callable[[CheckContext], Iterable[Finding]]


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
