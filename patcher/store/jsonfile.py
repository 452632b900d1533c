"""Reading a config file from disk as JSON: absent is None, anything else that is not a readable
regular file of JSON is a one-line refusal naming it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from patcher.errors import InputFileError
from patcher.store.fsio import NotRegularFileError
from patcher.text.document import json_problem

if TYPE_CHECKING:
    from patcher.store.checkpoint import Checkpoint


def read_config(checkpoint: Checkpoint, name: str) -> Any:
    """The checkpoint's file ``name`` parsed (None when absent), or a one-line refusal naming
    it; a folder, a pipe or a device in its place is refused, not taken for a missing file.
    Opened the one way a checkpoint file is (``Checkpoint.open``: no link followed out)."""
    path = checkpoint.root / name  # named in a refusal; open() checks the name itself
    try:
        with os.fdopen(checkpoint.open(name), "rb") as handle:
            data = handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (IsADirectoryError, NotRegularFileError):
        raise not_a_file(path, "then run the command again") from None
    except OSError as exc:
        raise InputFileError(
            f"cannot read ({exc.strerror})", file=path, hint="fix the file's permissions"
        ) from None
    return parse_config(data, path)


def parse_config(data: bytes, path: Path) -> Any:
    """``data`` (the file at ``path``) parsed as JSON, or a one-line refusal naming it."""
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise InputFileError(
            f"not valid JSON ({json_problem(exc)})",
            file=path,
            hint="fix the file, then run the command again",
        ) from None


def not_a_file(path: Path, then: str) -> InputFileError:
    """The refusal of a folder, a pipe or a device where a config file should be."""
    return InputFileError(
        "is not a regular file (a folder, a pipe or a device?)",
        file=path,
        hint=f"put the file back (or move this aside), {then}",
    )
