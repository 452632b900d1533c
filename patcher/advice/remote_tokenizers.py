"""doctor's answer to a model's own slow tokenizer class (its ``tokenization_*.py``, loaded with
``trust_remote_code``) that reads its own attribute before it sets it: ``AttributeError:
'BaichuanTokenizer' object has no attribute 'sp_model'``. From transformers 4.34.0,
``PreTrainedTokenizer.__init__`` adds the special tokens itself (``self._add_tokens``), which
asks the subclass for its vocabulary before the subclass's own ``__init__`` goes on past its
``super().__init__()`` call; code written for 4.33 sets ``sp_model`` (``encoder``,
``tokenizer``) only after that call. Read from transformers' wheels 4.33.3 to 5.0.0
(snapshots/engines/slow-tokenizer-init-transformers.txt)."""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix, LogContext, Rule

# The first transformers release whose PreTrainedTokenizer.__init__ adds the special tokens.
ADDS_TOKENS_SINCE = "4.34.0"
# The traceback frame of the model's own code (the Hub module transformers loaded it as).
REMOTE_FILE = re.compile(r"transformers_modules/(?:[^\"/]+/)*(tokenization_\w+\.py)")


def _own_attribute(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """The model's tokenizer class lacks its own attribute inside transformers' tokenizer
    ``__init__``: code written for transformers before 4.34."""
    if ctx.remote_tokenizer is None:
        return "", []
    cls, attribute = m.group(1), m.group(2)
    return (
        f"the model's own {cls} ({ctx.remote_tokenizer}) reads self.{attribute} before it "
        f"sets it: transformers {ADDS_TOKENS_SINCE} and later ask a tokenizer for its "
        "vocabulary inside PreTrainedTokenizer.__init__, before the class's own __init__ "
        "goes on; the code was written for an earlier transformers",
        [
            Fix(
                "advice",
                f"the model's newer {ctx.remote_tokenizer}, which sets self.{attribute} before "
                "it calls super().__init__() (its repository's latest revision)",
                note="or move that assignment above super().__init__() in the file",
            ),
            Fix(
                "dependency",
                f"pip install 'transformers<{ADDS_TOKENS_SINCE}'",
                note="only where the engine release accepts a transformers that old (pip check "
                "tells)",
            ),
        ],
    )


REMOTE_TOKENIZER_RULES: tuple[Rule, ...] = (
    (
        "remote-tokenizer",
        re.compile(r"'(\w*Tokenizer\w*)' object has no attribute '(\w+)'"),
        _own_attribute,
    ),
)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
REMOTE_TOKENIZER_MARKERS = ("' object has no attribute '",)
