"""doctor's answer when vLLM's hybrid KV cache manager is off for a model that cannot run
without it.

vLLM keeps one KV cache group per kind of layer (full attention, sliding window, a Mamba or
linear-attention state) with its hybrid KV cache manager. With the manager off it must make
every layer's spec one type (``kv_cache_utils.py``'s ``unify_hybrid_kv_cache_specs``): a
sliding window or a chunked local window becomes full attention, a Mamba state cannot, and it
raises "Hybrid KV cache manager is disabled but failed to convert the KV cache specs to one
unified type." (0.9.1 to 0.26.0) or "Failed to promote local KV cache specs to one unified
type." (0.27.0 on). So the failure is not the model's nor the engine's: something turned the
manager off, and ``config/vllm.py`` (read in 0.17.0 and 0.26.0,
``snapshots/engines/vllm-hybrid-kv-manager.txt``) names every switch:
``--disable-hybrid-kv-cache-manager``; a KV connector that does not subclass ``SupportsHMA``
where the user expressed no preference (``--kv-transfer-config``, and from 0.26.0 the one
``--kv-offloading-size`` makes, resolved before the check); ``--kv-events-config`` (0.17.0,
not 0.26.0); chunked local attention (a window that converts, so not this failure's); and a
platform without the manager, where no flag turns it on.

The answer drops the switches the log shows. Where it shows none, it names them as a
condition, with the platform's case, which no flag mends.
"""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix, LogContext, Rule

UNIFIED = re.compile(
    r"Hybrid KV cache manager is disabled but failed to convert the KV cache specs to one "
    r"unified type|Failed to promote local KV cache specs to one unified type"
)
HYBRID_MANAGER_MARKERS = ("one unified type",)

# Each switch as the engine echoes it (its non-default args, 'kv_offloading_size': 80.0), as a
# report quotes the command (--kv-offloading-size 80, either spelling), or in vLLM's warning
# ("Turning off hybrid kv cache manager because `--kv-transfer-config` ..."); the explicit
# switch only where it is on ('disable_hybrid_kv_cache_manager': True, or the bare flag).
_SWITCHES = {
    "--disable-hybrid-kv-cache-manager": re.compile(
        r"'disable_hybrid_kv_cache_manager': True|--disable[-_]hybrid[-_]kv[-_]cache[-_]manager\b"
    ),
    "--kv-transfer-config": re.compile(r"'kv_transfer_config': [{K]|--kv[-_]transfer[-_]config\b"),
    "--kv-offloading-size": re.compile(r"'kv_offloading_size': \d|--kv[-_]offloading[-_]size\b"),
    "--kv-events-config": re.compile(r"'kv_events_config': [{K]|--kv[-_]events[-_]config\b"),
}
# --kv-offloading-backend alone switches nothing on (offloading starts with a size): it goes
# with the size where the command has it.
_BACKEND = re.compile(r"'kv_offloading_backend': '|--kv[-_]offloading[-_]backend\b")
# Every switch's words, as one search: a line holding none (most lines that say "kv") is
# passed over before each switch is tried.
_ANY_SWITCH = re.compile(r"hybrid[-_]kv|kv[-_](?:transfer|offloading|events)")


def switches_in(line: str) -> tuple[str, ...]:
    """The switches that turn vLLM's hybrid KV cache manager off that this line shows set."""
    if _ANY_SWITCH.search(line) is None:
        return ()
    found = tuple(flag for flag, shown in _SWITCHES.items() if shown.search(line))
    if "--kv-offloading-size" in found and _BACKEND.search(line):
        found += ("--kv-offloading-backend",)
    return found


def unified(_m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """Drop what turned the manager off, as the log shows it; else name the switches."""
    cause = (
        "vLLM's hybrid KV cache manager was off, and without it every layer's KV cache must "
        "take one spec, which a Mamba or linear-attention state beside attention layers cannot "
        "(kv_cache_utils.py): the manager is needed on"
    )
    if ctx.hybrid_off:
        shown = " ".join(ctx.hybrid_off)
        switches = ", ".join(f for f in ctx.hybrid_off if f != "--kv-offloading-backend")
        return (
            f"{cause}; the log shows {switches}: each turns it off, or (a connector without "
            "SupportsHMA) cannot run with it on",
            [
                Fix(
                    "advice",
                    f"drop {shown}",
                    note="vLLM keeps the manager on then (config/vllm.py); a KV connector that "
                    "does not subclass SupportsHMA turns it off, so offloading or transfer goes "
                    "with it where the release's connector lacks it (the native offloading's "
                    "does in 0.26.0, not in 0.17.0, read)",
                )
            ],
        )
    return (
        cause,
        [
            Fix(
                "advice",
                "drop --disable-hybrid-kv-cache-manager, --kv-transfer-config, "
                "--kv-offloading-size and --kv-events-config where the command has them",
                note="each turns the manager off (a connector only where it does not subclass "
                "SupportsHMA); on a platform without the manager (vLLM's CPU backend and other "
                "non-CUDA platforms) no flag turns it on: no config fix there",
            )
        ],
    )


HYBRID_MANAGER_RULES: tuple[Rule, ...] = (("hybrid-kv-manager", UNIFIED, unified),)
