"""Two dtypes meeting in one operation after the user forced the model's dtype.

torch refuses an operation whose tensors disagree ("expected scalar type Half but found
BFloat16", "expected mat1 and mat2 to have the same dtype"). Where the log shows the command
forced a dtype (``--dtype half``, the args line's ``dtype='half'``), a part of the model the
engine builds in the checkpoint's dtype (a buffer, a vision tower, a router) met the cast
weights: ``--dtype auto`` runs the checkpoint's own dtype. Where the log shows no forced dtype
this rule says nothing (the mismatch is then the engine's own). vLLM's "Casting
torch.bfloat16 to torch.float16" is no evidence: it prints it too when it falls back by itself
on a GPU without bfloat16, and its engine line's unquoted ``dtype=torch.bfloat16`` is the
resolved dtype, not the command's.
"""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix, LogContext, Rule

# The dtype the command line forced: vLLM's "--dtype half", its args/non-default args
# ("dtype='half'", "'dtype': 'half'"), SGLang's server_args; quoted (the engine line's
# unquoted dtype=torch.bfloat16 is resolved, not asked), never kv_cache_dtype (the
# lookbehind), never auto.
FORCED = re.compile(r"(?:--dtype[= ]'?|(?<![\w-])dtype='|'dtype': ')(?!auto\b)(\w+)")

_MISMATCH = re.compile(
    r"expected scalar type (\w+) but found (\w+)"
    r"|expected mat1 and mat2 to have the same dtype, but got: ([\w:]+) != ([\w:]+)"
)


def forced_dtype(line: str) -> str | None:
    """The dtype a log line shows the command forced, or None."""
    given = FORCED.search(line)
    return given.group(1) if given is not None else None


def dtype_mismatch(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """torch's dtype refusal under a forced ``--dtype``: the checkpoint's own dtype back."""
    if ctx.dtype is None:
        return "", []  # no forced dtype in the log: not this rule's
    first, second = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    return (
        f"the command forced the model's dtype ({ctx.dtype}) and a part the engine builds in "
        f"the checkpoint's own dtype met it in one operation ({first} against {second})",
        [
            Fix(
                "flag",
                "--dtype auto",
                note="the checkpoint's own dtype (its config.json torch_dtype), as every part "
                "of the model is built",
            ),
            Fix(
                "advice",
                "on a GPU without bfloat16 (compute capability below 8.0) auto casts to float16 "
                "too: then the model does not run in float16 on this release",
            ),
        ],
    )


DTYPE_RULES: tuple[Rule, ...] = (("dtype-forced", _MISMATCH, dtype_mismatch),)
# no marker starts with "e": a new first letter costs on every line of a log
DTYPE_MARKERS = ("scalar type ", "mat1 and mat2 to have the same dtype")
