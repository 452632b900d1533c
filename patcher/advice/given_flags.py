"""The fixes a log's own command line already gave: the engine refused with them in place, so
they are no way out (doctor trims them from its answer).

A flag the command line set with the fix's value failed already (another setting resets it, or
it is not the cause); a KV cache dtype the command line set overrides the checkpoint's FP8 KV
directive, so stripping the directive changes nothing.
"""

from __future__ import annotations

import re
from dataclasses import replace

from patcher.advice.diagnosis import Diagnosis
from patcher.advice.log_rules import Fix

_DROP_IF_GIVEN = re.compile(r"drop (--[\w-]+) if it was given")


def already_given(found: Diagnosis, command: str | None) -> Diagnosis:
    """``found`` less the flags the log's own command line already gave with the same value:
    the engine refused with them in place (another setting resets them, or they are not the
    cause), so they are no way out. Where none is left, that is said instead."""
    if command is None:
        return found
    words = command.split()
    pairs = {" ".join(words[i : i + 2]) for i in range(len(words))} | set(words)

    def given(fix: Fix) -> bool:
        if fix.kind == "flag":
            return fix.text in pairs
        # a flag to drop that the command line does not give
        dropped = _DROP_IF_GIVEN.match(fix.text)
        return dropped is not None and dropped.group(1) not in words

    kept = tuple(f for f in found.fixes if not given(f))
    if len(kept) == len(found.fixes):
        return found
    if not kept:
        gave = ", ".join(f.text for f in found.fixes if f.kind == "flag") or "the flags named"
        kept = (
            Fix(
                "advice",
                f"the command line already gives {gave} and the engine still refused: another "
                "setting resets it (the engine's warnings above the error name it), or the "
                "cause is elsewhere",
            ),
        )
    return replace(found, fixes=kept)


def given_kv_dtype(found: Diagnosis, flag: str | None) -> Diagnosis:
    """``found`` less the strip of the checkpoint's FP8 KV directive when the command line set
    the KV dtype itself: the flag overrides the directive, so stripping it changes nothing."""
    if flag is None or flag == "auto":
        return found
    same = f"--kv-cache-dtype {flag}"  # the value the command line gave already failed
    kept = tuple(f for f in found.fixes if " strip-fp8-kv-cache" not in f.text and f.text != same)
    if len(kept) == len(found.fixes):
        return found
    if not any(f.text.startswith("--kv-cache-dtype") for f in kept):
        # A dtype fix was dropped and none is left: the flag's own value is what to change.
        auto = Fix(
            "flag",
            "--kv-cache-dtype auto",
            note=f"the log's command line set {flag}; leave the flag out, and with an FP8 "
            "directive in the checkpoint also strip-fp8-kv-cache",
        )
        kept = (auto, *kept)
    return replace(found, fixes=kept)
