"""doctor's answer for a RoPE block of config.json that transformers or the engine does not
read: a layout older or newer than the transformers installed (the legacy validators' words),
a field's value refused (transformers' rope validation names the field), keys missing, or
``rope_theta`` moved under ``rope_parameters`` (transformers 5).
"""

from __future__ import annotations

import re

from patcher.advice.answers import _unique
from patcher.advice.catalogue import Matched
from patcher.advice.log_rules import Fix, LogContext
from patcher.advice.own_remedy import own_remedy

# A transformers older than the RoPE layout (4.43's llama3 rope_type, 4.45's rope_type key):
# the messages of the old validators, which a newer transformers reads.
_LEGACY_ROPE = re.compile(
    r"must be a dictionary with (?:with )?two fields|should have a .rope_type. key|"
    r"must have a .type. or .rope_type. key|Unrecognized keys in .rope_scaling",
    re.IGNORECASE,
)


def explain_rope(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    """A RoPE block in a layout this transformers or engine does not read."""
    fixes = own_remedy(m.line, m.template)
    line = m.line
    if "rope_theta" in line:
        fixes.append(ctx.apply("add-rope-theta-to-rope-parameters"))
    missing = re.search(r"(?:missing|required)[^:]*:\s*(\{.*?\}|\[.*?\]|[\w', ]+)", line, re.I)
    if missing:
        fixes.append(
            Fix(
                "advice",
                f"add the missing keys {missing.group(1)} to rope_scaling "
                "(rope_parameters in transformers 5) in config.json",
            )
        )
    field = re.search(r"`?(rope_scaling|rope_parameters)`?'s (\w+) field", line)
    if field:
        # transformers' rope validation: one field's value, read by the transformers installed.
        fixes.append(
            Fix(
                "transform",
                f"patcher set {ctx.checkpoint} config.json /{field.group(1)}/{field.group(2)} "
                "VALUE",
                note="a value the message accepts",
            )
        )
    if _LEGACY_ROPE.search(line):
        fixes.append(
            Fix(
                "dependency",
                "pip install 'transformers>=4.45'",
                note="a transformers that reads the model's RoPE layout",
            )
        )
    return (
        "the RoPE scaling block of config.json does not have the layout or values this "
        "transformers/engine reads",
        _unique(fixes),
    )
