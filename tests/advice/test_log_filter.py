"""doctor's two-step line filter (patcher/advice/log_lines.py ``Filter``): each word's rarest
part first, the words themselves on a match only. It must find exactly the lines the words'
own pattern finds, whatever the line."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from patcher.advice.doctor import _heeded
from patcher.advice.engine_rules import _MARKERS
from patcher.advice.log_lines import ERRORISH, Filter, _rare_tail, any_of

WORDS = (*_MARKERS, *ERRORISH)


def test_each_rare_part_is_a_piece_of_its_word_long_enough_to_choose_lines() -> None:
    for word in WORDS:
        tail = _rare_tail(word)
        assert word.endswith(tail)
        assert len(tail) >= min(4, len(word))


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80),
    st.sampled_from(WORDS),
    st.integers(min_value=0, max_value=80),
    st.booleans(),
)
def test_the_filter_finds_a_line_exactly_when_the_words_pattern_does(
    text: str, word: str, at: int, insert: bool
) -> None:
    line = text[:at] + word + text[at:] if insert else text
    cut = text[:at] + word[: len(word) // 2]  # half a word: the exact pattern decides
    tail = text[:at] + _rare_tail(word)  # the rare part alone: the first step passes it
    exact, fast = any_of(WORDS), Filter(WORDS)
    for candidate in (line, cut, tail):
        assert (fast.search(candidate) is None) == (exact.search(candidate) is None)


def test_doctors_filter_keeps_every_error_line_and_skips_plain_ones() -> None:
    heeded = _heeded()
    assert heeded.search("RuntimeError: CUDA error: out of memory") is not None
    assert heeded.search("(EngineCore_DP0 pid=1) ERROR 12-04 10:00:00 [core.py:1] boom") is not None
    assert heeded.search("INFO 01-20 13:02:00 [core.py:100] Loading weights took 1 s") is None
