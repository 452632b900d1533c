"""doctor's answer when an engine's registry has no class for the architecture
(patcher/advice/architectures.py): the release named comes from the registries read."""

from __future__ import annotations

from patcher.advice.architectures import release_for
from patcher.engines.registries import architectures


def test_a_class_every_release_read_lists_is_not_said_to_start_there() -> None:
    registry = architectures("vllm")
    first = min(registry)
    always = sorted(n for n in registry[first] if all(n in names for names in registry.values()))
    fix = release_for(always[0], (0, 3, 0))
    assert fix is not None and fix.text == f"pip install 'vllm>={'.'.join(map(str, first))}'"
    assert fix.note is not None and "an older release may list it too" in fix.note


def test_a_class_a_later_release_added_names_that_release_alone() -> None:
    registry = architectures("vllm")
    versions = sorted(registry)
    added = sorted(registry[versions[-1]] - registry[versions[0]])
    listed = [v for v in versions if added[0] in registry[v]]
    fix = release_for(added[0], versions[0])
    assert fix is not None and fix.text == f"pip install 'vllm>={'.'.join(map(str, listed[0]))}'"
    assert fix.note is not None and "older release" not in fix.note
