"""Unified text diffs that stay correct for files without a final newline."""

from __future__ import annotations


def unified(old: bytes, new: bytes, old_name: str, new_name: str) -> str:
    """A unified diff of two byte strings (decoded as UTF-8)."""
    import difflib  # only the commands that show diffs pay for it

    lines = difflib.unified_diff(
        old.decode("utf-8", "replace").splitlines(keepends=True),
        new.decode("utf-8", "replace").splitlines(keepends=True),
        old_name,
        new_name,
    )
    out = []
    for line in lines:
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)
