"""Which transformers releases give a model config class a field, as read from their wheels
(``tools/read_config_fields.py``: ``config-fields-transformers.json.gz``, 26 releases from
4.33.3 to 5.0.0). An engine reading ``config.NAME`` that the installed transformers' class
lacks fails with "'XConfig' object has no attribute 'NAME'"; where the reading shows the
class gained the field in a later release (``Qwen2MoeConfig.mlp_only_layers``, 4.41) or
dropped it in one (``LlamaConfig.rope_theta``, gone in 5.0 for ``rope_parameters``), the way
out is a transformers on the side that has it. A field no release read gives the class is
not transformers' release to mend (the engine reads a nested config wrongly, or predates the
model): no answer here."""

from __future__ import annotations

import functools

from patcher.advice.log_rules import Fix
from patcher.advice.packaged import packaged

Reading = tuple[tuple[str, ...], dict[str, dict[str, str]]]


@functools.cache
def _reading() -> Reading:
    data = packaged("config-fields-transformers.json.gz")
    return tuple(data["releases"]), data["classes"]


def _indices(spans: str) -> list[int]:
    """``"0-2,5"`` as ``[0, 1, 2, 5]``."""
    found: list[int] = []
    for run in spans.split(","):
        first, _, last = run.partition("-")
        found.extend(range(int(first), int(last or first) + 1))
    return found


def field_release(cls: str, field: str) -> tuple[str, Fix] | None:
    """Where ``field`` came to or left transformers' ``cls``, and the transformers to install:
    None where the class is not read, every release read with it has the field, none does,
    or the field came and went more than once."""
    releases, classes = _reading()
    spans = classes.get(cls)
    if spans is None or field not in spans:
        return None
    having = _indices(spans[field])
    lacking = [i for i in _indices(spans[""]) if i not in having]
    if having != list(range(having[0], having[-1] + 1)):
        return None
    before = [i for i in lacking if i < having[0]]
    after = [i for i in lacking if i > having[-1]]
    first, last = releases[having[0]], releases[having[-1]]
    if before and not after:
        return (
            f"transformers' {cls} has {field} from {first} on (read; {releases[before[-1]]} "
            "lacks it): the installed transformers is older",
            Fix("dependency", f"pip install 'transformers>={first}'"),
        )
    if after and not before:
        gone = releases[after[0]]
        return (
            f"transformers' {cls} has {field} up to {last} (read) and not in {gone}: the "
            f"installed transformers is newer than the engine release was written for",
            Fix("dependency", f"pip install 'transformers<{gone}'"),
        )
    if before and after:
        gone = releases[after[0]]
        return (
            f"transformers' {cls} has {field} from {first} to {last} only (read)",
            Fix("dependency", f"pip install 'transformers>={first},<{gone}'"),
        )
    return None
