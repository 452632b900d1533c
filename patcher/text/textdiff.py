"""Unified text diffs that stay correct for files without a final newline.

difflib's matcher costs seconds on a 15 MB ``tokenizer.json``, and an edit is a few lines of
it. So the lines both sides share at the start and at the end are cut off first (block by
block, compared in C); a middle still large is split at a line each side holds exactly once,
and each part is cut the same way. difflib then runs only on the lines that differ and their
context, and a diff costs a few passes over the bytes wherever the edits are.
"""

from __future__ import annotations

CONTEXT = 3  # lines of context around each hunk, as ``diff -u``
_BLOCK = 1 << 16
_SPLIT_OVER = 1 << 16  # a differing middle larger than this (bytes) is split at an anchor line
_ANCHOR_TRIES = 8
_MIN_ANCHOR = 8  # shorter lines ("  },") are too common to anchor on

Region = tuple[int, int, int, int]  # old start, old end, new start, new end (line starts)


def _common_prefix(old: bytes, a0: int, new: bytes, b0: int, limit: int) -> int:
    """How many bytes ``old[a0:]`` and ``new[b0:]`` share at the start, up to ``limit``."""
    size = 0
    while size < limit:
        step = min(_BLOCK, limit - size)
        if old[a0 + size : a0 + size + step] != new[b0 + size : b0 + size + step]:
            break
        size += step
    else:
        return limit
    while size < limit and old[a0 + size] == new[b0 + size]:
        size += 1
    return size


def _common_suffix(old: bytes, a1: int, new: bytes, b1: int, limit: int) -> int:
    """How many bytes ``old[:a1]`` and ``new[:b1]`` share at the end, up to ``limit``."""
    size = 0
    while size < limit:
        step = min(_BLOCK, limit - size)
        if old[a1 - size - step : a1 - size] != new[b1 - size - step : b1 - size]:
            break
        size += step
    else:
        return limit
    while size < limit and old[a1 - size - 1] == new[b1 - size - 1]:
        size += 1
    return size


def _line_start(data: bytes, at: int) -> bool:
    return at == 0 or data[at - 1] == 0x0A


def _trim(old: bytes, new: bytes, region: Region) -> Region:
    """``region`` without the whole lines both sides share at its start and at its end."""
    a0, a1, b0, b1 = region
    prefix = _common_prefix(old, a0, new, b0, min(a1 - a0, b1 - b0))
    head = max(a0, old.rfind(b"\n", a0, a0 + prefix) + 1)  # the first line that differs
    b_head = b0 + (head - a0)
    suffix = _common_suffix(old, a1, new, b1, min(a1 - head, b1 - b_head))
    a_end, b_end = a1 - suffix, b1 - suffix
    if not (_line_start(old, a_end) and _line_start(new, b_end)):
        # Move the cut to the next line start in the shared tail: the same bytes both sides.
        newline = old.find(b"\n", a_end, a1)
        step = (a1 if newline < 0 else newline + 1) - a_end
        a_end, b_end = a_end + step, b_end + step
    return head, a_end, b_head, b_end


def _anchor(old: bytes, new: bytes, region: Region) -> tuple[int, int, int] | None:
    """A line that each side of ``region`` holds exactly once, as (old offset, new offset,
    length); tried from the middle of the old side outwards."""
    a0, a1, b0, b1 = region
    for k in range(_ANCHOR_TRIES):
        fraction = (k + 1) / (_ANCHOR_TRIES + 1)
        start = old.find(b"\n", a0 + int((a1 - a0) * fraction), a1) + 1
        end = old.find(b"\n", start, a1) + 1
        if start == 0 or end == 0 or end - start < _MIN_ANCHOR:
            continue
        line = old[start:end]
        if old.count(line, a0, a1) != 1 or new.count(line, b0, b1) != 1:
            continue
        found = new.find(line, b0, b1)
        if _line_start(new, found):
            return start, found, end - start
    return None


def _regions(old: bytes, new: bytes, region: Region, depth: int = 0) -> list[Region]:
    """The parts of ``region`` that differ, in order; everything between them is the same
    lines on both sides."""
    a0, a1, b0, b1 = _trim(old, new, region)
    if a0 == a1 and b0 == b1:
        return []
    if min(a1 - a0, b1 - b0) <= _SPLIT_OVER or depth > 32:
        return [(a0, a1, b0, b1)]
    anchor = _anchor(old, new, (a0, a1, b0, b1))
    if anchor is None:
        return [(a0, a1, b0, b1)]
    at_old, at_new, size = anchor
    return _regions(old, new, (a0, at_old, b0, at_new), depth + 1) + _regions(
        old, new, (at_old + size, a1, at_new + size, b1), depth + 1
    )


def _merge_close(old: bytes, regions: list[Region]) -> list[Region]:
    """Join regions whose hunks would touch (at most 2 x CONTEXT shared lines between)."""
    merged: list[Region] = []
    for region in regions:
        if merged and old.count(b"\n", merged[-1][1], region[0]) <= 2 * CONTEXT:
            merged[-1] = (merged[-1][0], region[1], merged[-1][2], region[3])
        else:
            merged.append(region)
    return merged


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


def _region_hunks(
    old: bytes, new: bytes, region: Region, start: int, before: tuple[int, int]
) -> list[str]:
    """The hunks of one region: difflib on its lines and their context, which begins at the
    offset ``start`` of ``old``. ``before`` is how many lines precede that context, old side
    and new side."""
    import difflib  # only the commands that show diffs pay for it

    a0, a1, b0, b1 = region
    old_stop = _forward_lines(old, a1, CONTEXT)
    a = _lines(old[start:old_stop])
    b = _lines(new[b0 - (a0 - start) : b1 + (old_stop - a1)])
    old_before, new_before = before
    lines: list[str] = []
    for group in difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(CONTEXT):
        first, last = group[0], group[-1]
        lines.append(
            f"@@ -{_range(first[1] + old_before, last[2] + old_before)} "
            f"+{_range(first[3] + new_before, last[4] + new_before)} @@\n"
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


def _hunks(old: bytes, new: bytes) -> list[str]:
    """The hunk lines of a unified diff."""
    lines: list[str] = []
    counted = old_before = shift = 0  # shift: how many more lines the new side has so far
    for region in _merge_close(old, _regions(old, new, (0, len(old), 0, len(new)))):
        a0, a1, b0, b1 = region
        start = _back_lines(old, a0, CONTEXT)
        old_before += old.count(b"\n", counted, start)
        counted = start
        lines += _region_hunks(old, new, region, start, (old_before, old_before + shift))
        # Regions end at line starts (or the end), so counting newlines counts their lines.
        shift += new.count(b"\n", b0, b1) - old.count(b"\n", a0, a1)
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
