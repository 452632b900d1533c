"""doctor's answer for a RoPE block of config.json that transformers or the engine does not
read: a layout older or newer than the transformers installed (the legacy validators' words),
a field's value refused (transformers' rope validation names the field), keys missing, or
``rope_theta`` moved under ``rope_parameters`` (transformers 5).
"""

from __future__ import annotations

import re

from patcher.advice.answers import _unique
from patcher.advice.catalogue import Matched, no_longer_raised
from patcher.advice.log_rules import Fix, LogContext
from patcher.advice.own_remedy import own_remedy

# A transformers older than the RoPE layout (4.43's llama3 rope_type, 4.45's rope_type key):
# the messages of the old validators, which a newer transformers reads.
_LEGACY_ROPE = re.compile(
    r"must be a dictionary with (?:with )?two fields|should have a .rope_type. key|"
    r"must have a .type. or .rope_type. key|Unrecognized keys in .rope_scaling",
    re.IGNORECASE,
)

# "`rope_scaling`'s factor field must be a float > 1, got 8.0" (transformers 4.40 to 4.42): a
# bound the value named already meets is not the value's fault but the validator's.
_BOUND = re.compile(
    r"must be an? (?:float|int|integer|number) (>=?|<=?) (-?[\d.]+), got (-?[\d.]+)"
)


def _meets_bound(line: str) -> bool:
    found = _BOUND.search(line)
    if found is None:
        return False
    sign, bound, value = found.group(1), float(found.group(2)), float(found.group(3))
    return {">": value > bound, ">=": value >= bound, "<": value < bound, "<=": value <= bound}[
        sign
    ]


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
    # A value that meets the bound the message states: the validator of this release is at
    # fault, and a release that no longer raises the message reads the block.
    later = (
        no_longer_raised("transformers", m.template.text, ctx.config_file)
        if m.template.engine == "transformers" and _meets_bound(line)
        else None
    )
    if later is not None:
        fixes.append(
            Fix(
                "dependency",
                f"pip install 'transformers>={later}'",
                note=f"the transformers releases read from {later} on do not raise this message",
            )
        )
    if field and not _meets_bound(line):
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
