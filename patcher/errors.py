"""One small error hierarchy: every expected failure formats its own one-line message.

A message names the file, the JSON pointer where it applies, the problem, and the next
command to run. The CLI maps these to exit code 1; anything else is a bug (exit code 3).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar


class PatcherError(Exception):
    """Base of every failure the patcher expects and explains."""

    exit_code: ClassVar[int] = 1  # what the CLI exits with (the README's "Exit codes")

    def __init__(
        self,
        problem: str,
        *,
        file: Path | str | None = None,
        pointer: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.problem = problem
        self.file = None if file is None else str(file)
        self.pointer = pointer
        self.hint = hint
        self.detail: str | None = None  # extra lines (e.g. a diff) shown after the message
        super().__init__(self.message)

    @property
    def message(self) -> str:
        """The single line shown to the user."""
        parts: list[str] = []
        if self.file is not None:
            parts.append(self.file)
        if self.pointer is not None:
            parts.append(f"at {self.pointer or '/'} (JSON pointer)")
        location = " ".join(parts)
        text = f"{location}: {self.problem}" if location else self.problem
        if self.hint:
            text = f"{text}; next: {self.hint}"
        return " ".join(text.split("\n"))

    def __str__(self) -> str:
        return self.message

    def reworded(self, *, problem: str | None = None, hint: str | None = None) -> PatcherError:
        """This error with a new problem or hint (what happened after it was raised changes
        what the user must be told). Changed in place; returned for ``raise``."""
        self.problem = self.problem if problem is None else problem
        self.hint = self.hint if hint is None else hint
        self.args = (self.message,)
        return self


class CheckpointError(PatcherError):
    """The checkpoint directory is missing, empty or not usable."""


class InputFileError(PatcherError):
    """A config file is not valid UTF-8 JSON, or is ambiguous (duplicate keys)."""


class UnsafePathError(PatcherError):
    """A path would lead outside the checkpoint or through a symlinked directory."""


class TransformError(PatcherError):
    """A transform is unknown, invalid, or given bad parameters."""


class DoesNotApplyError(PatcherError):
    """A transform refuses the layout it found."""


class ConflictError(PatcherError):
    """Files changed since the journal recorded them, or edits overlap."""


class JournalError(PatcherError):
    """The journal is damaged, too new, or does not know what was asked."""


class LockTimeoutError(PatcherError):
    """Another process held the checkpoint lock for too long."""


class WriteError(PatcherError):
    """The filesystem refused a write (read-only, full disk, permissions)."""


class TargetError(PatcherError):
    """An engine, version or GPU that patcher's engine model does not know."""


class UpstreamError(PatcherError):
    """The Hugging Face Hub (or its local cache) could not provide the upstream files."""
