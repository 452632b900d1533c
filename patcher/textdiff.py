"""Unified text diffs that stay correct for files without a final newline.

The lines both sides share at the start and at the end are cut off before difflib runs (its
matcher costs seconds on a 15 MB ``tokenizer.json``, and an edit is a few lines of it), so a
diff costs one pass over the bytes plus difflib on the lines that differ and their context.
"""

from __future__ import annotations

CONTEXT = 3  # lines of context around each hunk, as ``diff -u``
_BLOCK = 1 << 16


def _common_prefix(old: bytes, new: bytes) -> int:
    """How many bytes ``old`` and ``new`` share at the start (block by block, compared in C)."""
    limit = min(len(old), len(new))
    start = 0
    while start < limit and old[start : start + _BLOCK] == new[start : start + _BLOCK]:
        start += _BLOCK
    end = min(start + _BLOCK, limit)
    while start < end and old[start] == new[start]:
        start += 1
    return min(start, limit)


def _common_suffix(old: bytes, new: bytes, floor: int) -> int:
    """How many bytes ``old`` and ``new`` share at the end, not reaching back past ``floor``."""
    limit = min(len(old), len(new)) - floor
    size = 0
    while size < limit:
        step = min(_BLOCK, limit - size)
        old_end, new_end = len(old) - size, len(new) - size
        if old[old_end - step : old_end] != new[new_end - step : new_end]:
            break
        size += step
    else:
        return limit
    while size < limit and old[len(old) - size - 1] == new[len(new) - size - 1]:
        size += 1
    return size


def _line_start(data: bytes, at: int) -> bool:
    return at == 0 or data[at - 1] == 0x0A


def _back_lines(data: bytes, start: int, count: int) -> int:
    """The offset ``count`` line starts before the line start ``start``."""
    for _ in range(count):
        if start == 0:
            break
        start = data.rfind(b"\n", 0, start - 1) + 1
    return start


def _forward_lines(data: bytes, end: int, count: int) -> int:
    """The offset just after ``count`` more lines from the line start ``end``."""
    for _ in range(count):
        if end >= len(data):
            return len(data)
        found = data.find(b"\n", end)
        end = len(data) if found < 0 else found + 1
    return end


def _lines(data: bytes) -> list[str]:
    """Lines as ``patch`` counts them: split at newlines only. (``str.splitlines`` also splits
    at U+0085, U+2028 and U+2029, which a JSON string may hold raw, as a tokenizer's vocab
    can: hunks would then count lines that are not there.)"""
    parts = data.decode("utf-8", "replace").split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _range(start: int, stop: int) -> str:
    """A hunk range as ``diff -u`` writes it (difflib's ``_format_range_unified``)."""
    beginning, length = start + 1, stop - start
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1
    return f"{beginning},{length}"


def _hunks(old: bytes, new: bytes) -> list[str]:
    """The hunk lines of a unified diff, difflib on the differing middle only."""
    import difflib  # only the commands that show diffs pay for it

    prefix = _common_prefix(old, new)
    head = old.rfind(b"\n", 0, prefix) + 1  # start of the first line that differs
    suffix = _common_suffix(old, new, head)
    old_end, new_end = len(old) - suffix, len(new) - suffix
    if not (_line_start(old, old_end) and _line_start(new, new_end)):
        # Move the cut to the next line start in the shared tail: the same bytes both sides.
        newline = old.find(b"\n", old_end)
        step = (len(old) if newline < 0 else newline + 1) - old_end
        old_end, new_end = old_end + step, new_end + step
    start = _back_lines(old, head, CONTEXT)
    old_stop = _forward_lines(old, old_end, CONTEXT)
    new_stop = new_end + (old_stop - old_end)
    offset = old.count(b"\n", 0, start)
    a, b = _lines(old[start:old_stop]), _lines(new[start:new_stop])
    lines: list[str] = []
    matcher = difflib.SequenceMatcher(None, a, b)
    for group in matcher.get_grouped_opcodes(CONTEXT):
        first, last = group[0], group[-1]
        lines.append(
            f"@@ -{_range(first[1] + offset, last[2] + offset)} "
            f"+{_range(first[3] + offset, last[4] + offset)} @@\n"
        )
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [" " + line for line in a[i1:i2]]
                continue
            if tag in ("replace", "delete"):
                lines += ["-" + line for line in a[i1:i2]]
            if tag in ("replace", "insert"):
                lines += ["+" + line for line in b[j1:j2]]
    return lines


def unified(old: bytes, new: bytes, old_name: str, new_name: str) -> str:
    """A unified diff of two byte strings (decoded as UTF-8)."""
    if old == new:
        return ""
    out = [f"--- {old_name}\n", f"+++ {new_name}\n"]
    for line in _hunks(old, new):
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)
