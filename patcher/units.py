"""The units of memory, defined once: GiB and MiB as vLLM counts them (powers of two), and
sizes as people write them (``80GiB``, ``590GB``)."""

from __future__ import annotations

import math
import re

from patcher.errors import TargetError

KIB = 1024
MIB = 1024**2
GIB = 1024**3

# Compiled on first use (re caches it), not on import: every command imports this module.
_SIZE = r"(?i)\s*([0-9]+(?:\.[0-9]+)?)\s*(gib|gb|g|mib|mb|tib|tb)?\s*"
_UNITS = {
    None: 1.0,
    "gib": 1.0,
    "g": 1.0,
    "gb": 1e9 / GIB,
    "mib": 1 / 1024,
    "mb": 1e6 / GIB,
    "tib": 1024.0,
    "tb": 1e12 / GIB,
}


def parse_size_gib(text: str | float, what: str) -> float:
    """``75GiB``, ``80GB``, ``512MiB`` or a plain number of GiB, as GiB."""
    if isinstance(text, int | float):
        value = float(text)
    else:
        match = re.fullmatch(_SIZE, text)
        if not match:
            raise TargetError(
                f"cannot read {what} {text!r}",
                hint=f"give {what} as a size such as 80GiB, 80GB or 80 (GiB)",
            )
        value = float(match.group(1)) * _UNITS[(match.group(2) or "").lower() or None]
    if not math.isfinite(value) or value < 0:
        raise TargetError(f"{what} must be a finite size, got {text!r}", hint="e.g. 80GiB")
    return value
