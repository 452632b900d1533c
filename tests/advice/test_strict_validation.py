"""transformers' strict config validation (patcher/advice/strict_validation.py): which of its
messages only the strictly validating releases raise, read from the recorded catalogue."""

from __future__ import annotations

from patcher.advice.catalogue import strict_since, templates, version_key
from patcher.advice.strict_validation import before_strict, raised_strictly


def test_only_config_class_messages_first_read_under_strict_validation_are_strict() -> None:
    since = strict_since()
    assert since is not None
    strict = [t for t in templates("transformers") if raised_strictly(t)]
    assert strict, "some config class message is first read under strict validation"
    assert all("/configuration_" in t.file for t in strict)
    assert all(version_key(t.releases[0]) >= version_key(since) for t in strict)
    per_layer = [t for t in templates("transformers") if "/heterogeneity/" in t.file]
    assert per_layer and not any(raised_strictly(t) for t in per_layer)


def test_the_pin_is_the_release_before_strict_validation() -> None:
    assert before_strict().text == f"pip install 'transformers<{strict_since()}'"
