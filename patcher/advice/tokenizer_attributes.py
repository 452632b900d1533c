"""doctor's answer when a tokenizer attribute transformers dropped is read: transformers'
tokenizer ``__getattr__`` answers a name its classes do not define with "X has no attribute
Y". Where Y is a name the tokenizer base classes of an earlier transformers release define
and a later one no longer does (read from the wheels per release with
``tools/read_tokenizer_attributes.py``: snapshots/engines/tokenizer-attributes-transformers.txt),
the code reading it (the engine's, vLLM 0.11's ``get_cached_tokenizer`` reading
``all_special_tokens_extended``, or the model's own) was written for the earlier transformers,
and the transformers installed is the later one."""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix

# Names the tokenizer base classes define in transformers 4.57.0 (the last 4.x release read)
# and no longer in 5.0.0 (the reading; tests/advice/test_tokenizer_attributes.py holds the two
# together).
DROPPED_IN: dict[str, frozenset[str]] = {
    "5.0.0": frozenset(
        {
            "all_special_tokens_extended",
            "as_target_tokenizer",
            "batch_encode_plus",
            "clean_up_tokenization",
            "encode_plus",
            "prepare_seq2seq_batch",
            "sanitize_special_tokens",
            "special_tokens_map_extended",
            "words",
        }
    ),
}
LAST_WITH = {"5.0.0": "4.57.0"}  # the release read before each one that dropped names
# transformers' own "Qwen2Tokenizer has no attribute Y", or Python's "'X' object has no
# attribute 'Y'": a tokenizer class either way.
MISSING = re.compile(r"(\w*Tokenizer\w*)'?(?: object)? has no attribute '?(\w+)'?")


def dropped(line: str) -> tuple[str, list[Fix]] | None:
    """The answer to transformers' "X has no attribute Y" where Y is a tokenizer name a
    transformers release dropped; None for any other name."""
    found = MISSING.search(line)
    if found is None:
        return None
    tokenizer, name = found.groups()
    release = next((r for r, names in DROPPED_IN.items() if name in names), None)
    if release is None:
        return None
    major = release.split(".")[0]
    return (
        f"the code loading the tokenizer reads {tokenizer}.{name}, which transformers' tokenizer "
        f"classes define up to {LAST_WITH[release]} and no longer from {release} (read from "
        "the wheels): it was written for an earlier transformers than the one installed",
        [
            Fix(
                "dependency",
                f"pip install 'transformers<{major}'",
                note=f"{LAST_WITH[release]} is the last release read that defines {name}",
            ),
            Fix(
                "advice",
                "or an engine release written for the transformers installed (its requirement "
                "admits it: pip check)",
            ),
        ],
    )
