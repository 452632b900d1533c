"""The architectures vLLM's model registry lists, per release read.

``vllm_architectures.json`` beside this module, made by ``python -m tests.read_release``: the
keys of ``_VLLM_MODELS`` in each release's ``model_executor/models/registry.py``, read from its
wheel (which ``ModelRegistry.get_supported_archs()`` returns: held to the lists a venv of 0.16.0
and 0.33.0 returned and the live 0.32.0 CPU build printed, tests/engines/test_registry.py),
stored as each release's additions to and removals from the one read before it. Read on first
use, so no command that does not judge an architecture pays for it.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from patcher.engines.readings import assumed
from patcher.engines.target import Engine, Version


@cache
def architectures() -> dict[Version, frozenset[str]]:
    """The registry of each release read."""
    text = resources.files("patcher.engines").joinpath("vllm_architectures.json").read_text()
    names: frozenset[str] = frozenset()
    found: dict[Version, frozenset[str]] = {}
    for version, step in json.loads(text)["releases"].items():
        names = (names - set(step["removed"])) | set(step["added"])
        major, minor, patch = (int(part) for part in version.split("."))
        found[(major, minor, patch)] = names
    return found


def unknown_architectures(engine: Engine, architectures_: object) -> list[str] | None:
    """The names of ``architectures_`` that the registry of the release answering for
    ``engine`` does not list (a release not read is answered by the one before it, never by a
    union of releases); None when ``architectures_`` is not a list."""
    if not isinstance(architectures_, list):
        return None
    known = architectures()[assumed(engine).release]
    return [a for a in architectures_ if isinstance(a, str) and a not in known]
