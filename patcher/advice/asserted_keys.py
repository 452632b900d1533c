"""doctor's answer to an ``assert "key" in name`` of an engine's start-up code that failed: the
traceback shows only the source line and ``AssertionError``. vLLM 0.4 and 0.5's
``_get_and_verify_max_len`` asserted ``"factor" in rope_scaling`` for every RoPE type but a few;
Qwen2-VL's ``mrope``, which transformers 4.45 rewrites to ``default`` with no factor, met it. Later
releases read the same key with a default (``rope_scaling.get("factor", 1.0)``) and take the
config as it is. ``tools/read_asserted_keys.py`` reads each release for both
(``asserted-keys-ENGINE.json``): the traceback's frame and line say which assert it was, and the
first release after the last that asserts it anywhere, reading the key with a default, is the
fix. Where no release read does so, nothing is answered here (the generic assertion answer)."""

from __future__ import annotations

import functools
import re

from patcher.advice.catalogue import Engine, version_key
from patcher.advice.diagnosis import Diagnosis
from patcher.advice.families import FAMILIES
from patcher.advice.log_lines import engine_file
from patcher.advice.log_rules import Fix
from patcher.advice.packaged import packaged

_FAMILY = next(f for f in FAMILIES if f.name == "dependency")
# the source line a traceback echoes: assert "factor" in rope_scaling
_ASSERT_IN = re.compile(r"""^assert\s+(["'])(\w+)\1\s+in\s+([\w.]+(?:\[[^\]]+\])*)\s*$""")


Releases = dict[str, list[str]]  # name['key'] -> the releases read


@functools.cache
def _reading(engine: Engine) -> tuple[dict[str, Releases], Releases]:
    """The engine's reading: where each file asserts a key, and where any file reads it with a
    default instead; empty where none is recorded."""
    try:
        data = packaged(f"asserted-keys-{engine}.json")
    except FileNotFoundError:
        return {}, {}
    return data["asserted"], data["defaulted"]


def by_asserted_key(frame: str | None, code: str | None) -> Diagnosis | None:
    """A failed ``assert "key" in name`` whose file the reading records: the releases that
    read the key with a default instead, after the last that asserts it."""
    where = engine_file(frame)
    said = _ASSERT_IN.match((code or "").strip())
    if where is None or said is None:
        return None
    engine, path = where
    asserted, defaulted = _reading(engine)
    record = f"{said.group(3)}[{said.group(2)!r}]"
    asserting = asserted.get(path, {}).get(record)
    if not asserting:
        return None
    anywhere = [r for names in asserted.values() for r in names.get(record, [])]
    last = max(anywhere, key=version_key)
    later = [r for r in defaulted.get(record, []) if version_key(r) > version_key(last)]
    if not later:
        return None
    first = min(later, key=version_key)
    key, name = said.group(2), said.group(3)
    shown = f"{asserting[0]} to {asserting[-1]}" if len(asserting) > 1 else asserting[0]
    cause = (
        f"this {engine} requires the key '{key}' in {name} ({path}: assert '{key}' in {name}, "
        f"read in {engine} {shown}), and the model's config as the installed transformers "
        f"reads it has none; {engine} {first} and later assert it nowhere and read it with a "
        "default"
    )
    fixes = (
        Fix("dependency", f"pip install '{engine}>={first}'"),
        Fix("advice", f"or the config's {name} with '{key}' given, where the model defines it"),
    )
    return Diagnosis("-", _FAMILY.name, "AssertionError", cause, fixes, None, _FAMILY)
