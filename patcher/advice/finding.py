"""A finding of ``check``: one known problem, where it is, and what to run about it."""

from __future__ import annotations

from dataclasses import dataclass


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
