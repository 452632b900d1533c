"""Unified diffs: valid (they patch the old text into the new one), ``diff -u``-shaped, and
computed on the differing lines only."""

from __future__ import annotations

import difflib
import re
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from patcher.text import textdiff
from patcher.text.textdiff import unified

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@\n")
_NO_NEWLINE = "\\ No newline at end of file\n"


def _patch_lines(text: str) -> list[str]:
    """Lines as patch reads them: ended by a newline only."""
    return re.findall(r"[^\n]*\n|[^\n]+\Z", text)


def patched(old: str, diff: str) -> str:
    """``old`` with the unified ``diff`` applied, as ``patch`` would, checking each hunk's
    context and removed lines, its line counts, that its new-side start follows from the
    hunks before it, and that only a file's last line is marked as lacking a newline."""
    lines = _patch_lines(diff)
    assert lines[:2] == ["--- a\n", "+++ b\n"]
    body = lines[2:]
    source = _patch_lines(old)
    out: list[str] = []
    at = 0  # next line of ``source`` not yet copied
    i = 0
    while i < len(body):
        header = _HUNK.fullmatch(body[i])
        assert header, body[i]
        start, length = int(header[1]), int(header[2] or 1)
        new_start, new_length = int(header[3]), int(header[4] or 1)
        first = start - 1 if length else start
        out += source[at:first]
        at = first
        assert (new_start - 1 if new_length else new_start) == len(out), body[i]
        removed = added = 0
        i += 1
        while i < len(body) and not body[i].startswith("@@"):
            kind, text = body[i][0], body[i][1:]
            if i + 1 < len(body) and body[i + 1] == _NO_NEWLINE:
                text, i = text[:-1], i + 1
            if kind in " -":
                assert source[at] == text, (at, source[at], text)
                assert text.endswith("\n") or at == len(source) - 1
                at += 1
                removed += 1
            if kind in " +":
                out.append(text)
                added += 1
            i += 1
        assert (removed, added) == (length, new_length)
    result = out + source[at:]
    assert all(line.endswith("\n") for line in result[:-1])
    return "".join(result)


# Lines that are prefixes of one another, and an empty one, so that a change can start or end
# at a newline; and characters str.splitlines takes for line ends, which patch does not.
LINES = st.sampled_from(
    ['  "\u2028": 1,\n', '  "a\x85b": 2,\n', "\u2029\n"]
    + ["{\n", "}\n", '  "a": 1,\n', '  "a": 1\n', "    2\n", "  ]\n", "\n", "x\n", "xx\n", "x}\n"]
)


@st.composite
def edited(draw: Any) -> tuple[str, str]:
    old = draw(st.lists(LINES, max_size=40))
    new = list(old)
    for _ in range(draw(st.integers(0, 5))):
        at = draw(st.integers(0, len(new)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        if action == "insert":
            new.insert(at, draw(LINES))
        elif new:
            at = min(at, len(new) - 1)
            if action == "delete":
                del new[at]
            else:
                new[at] = draw(LINES)
    old_text, new_text = "".join(old), "".join(new)
    if draw(st.booleans()):
        old_text = old_text.rstrip("\n")
    if draw(st.booleans()):
        new_text = new_text.rstrip("\n")
    return old_text, new_text


@settings(max_examples=1000, deadline=None)
@given(edited())
def test_the_diff_patches_the_old_text_into_the_new(pair: tuple[str, str]) -> None:
    old, new = pair
    diff = unified(old.encode(), new.encode(), "a", "b")
    assert (diff == "") == (old == new)
    if diff:
        assert patched(old, diff) == new


@settings(max_examples=1000, deadline=None)
@given(edited())
@example(("A\nx\nB\n", "C\nxx\nD\n"))  # "x\n" once in each, but inside a line on the new side
def test_split_at_anchor_lines_the_diff_still_patches(pair: tuple[str, str]) -> None:
    """With every middle split at its anchor lines (as only a large file's is), down to
    one-byte lines, with and without context (without, no two parts are joined again): the
    diff is still a valid patch."""
    old, new = pair
    saved = textdiff._SPLIT_OVER, textdiff._MIN_ANCHOR, textdiff.CONTEXT
    try:
        for context in (0, textdiff.CONTEXT):
            textdiff._SPLIT_OVER, textdiff._MIN_ANCHOR, textdiff.CONTEXT = 0, 1, context
            diff = unified(old.encode(), new.encode(), "a", "b")
            assert (diff == "") == (old == new)
            if diff:
                assert patched(old, diff) == new
    finally:
        textdiff._SPLIT_OVER, textdiff._MIN_ANCHOR, textdiff.CONTEXT = saved


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('{\n  "a": 1,\n  "b": 2\n}\n', '{\n  "a": 1,\n  "b": 3\n}\n'),
        ('{"a": 1}', '{"a": 2}'),  # no final newline on either side
        ('{"a": 1}', '{"a": 1}\n'),
        ("".join(f"line {i}\n" for i in range(30)), "".join(f"line {i}\n" for i in range(29))),
        ("", "a\n"),
        ("a\n", ""),
    ],
)
def test_a_single_change_reads_as_diff_u(old: str, new: str) -> None:
    expected = "".join(
        line if line.endswith("\n") else line + "\n" + _NO_NEWLINE
        for line in difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), "a", "b"
        )
    )
    assert unified(old.encode(), new.encode(), "a", "b") == expected


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The lengths of the two line lists of every difflib matcher made while the test runs."""
    lengths: list[tuple[int, int]] = []
    real = difflib.SequenceMatcher

    class Recording(real):  # type: ignore[misc,valid-type]
        def __init__(self, isjunk: Any, a: Any, b: Any) -> None:
            lengths.append((len(a), len(b)))
            super().__init__(isjunk, a, b)

    monkeypatch.setattr(difflib, "SequenceMatcher", Recording)
    return lengths


def test_difflib_sees_only_the_changed_lines_and_their_context(
    seen: list[tuple[int, int]],
) -> None:
    """A one-line edit in the middle of a 200,000-line file: the matcher gets 7 lines a side."""
    old = "".join(f'    "token{i}": {i},\n' for i in range(200_000))
    new = old.replace('"token100000": 100000,', '"token100000": 7,')
    diff = unified(old.encode(), new.encode(), "a", "b")
    assert seen == [(2 * textdiff.CONTEXT + 1, 2 * textdiff.CONTEXT + 1)]
    assert diff.splitlines()[2:5] == [
        "@@ -99998,7 +99998,7 @@",
        '     "token99997": 99997,',
        '     "token99998": 99998,',
    ]
    assert '-    "token100000": 100000,' in diff and '+    "token100000": 7,' in diff
    assert patched(old, diff) == new


def test_edits_far_apart_are_diffed_apart(seen: list[tuple[int, int]]) -> None:
    """Edits at both ends of a 200,000-line file (a tokenizer's version and a member after its
    merges): the middle is split at a line both sides hold once, and difflib sees each edit
    with its context only."""
    body = "".join(f'    "token{i}": {i},\n' for i in range(200_000))
    old = '{\n  "version": "1.0",\n' + body + '  "end": 1\n}\n'
    new = '{\n  "version": "2.0",\n' + body + '  "end": 1,\n  "zzz": 1\n}\n'
    diff = unified(old.encode(), new.encode(), "a", "b")
    assert all(a + b < 20 for a, b in seen) and len(seen) == 2
    assert [line for line in diff.splitlines() if line.startswith("@@")] == [
        "@@ -1,5 +1,5 @@",
        "@@ -200000,5 +200000,6 @@",
    ]
    assert patched(old, diff) == new
