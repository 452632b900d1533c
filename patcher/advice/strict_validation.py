"""transformers' strict validation of config classes (huggingface_hub's ``@strict``, from the
release the reading names: ``strict_since`` in ``errors-transformers.json``): which messages
only the strictly validating releases raise, and the pin to the release before them."""

from __future__ import annotations

import re

from patcher.advice.catalogue import Template, strict_since, version_key
from patcher.advice.log_rules import Fix

# @strict validates the config classes: their base and each model's own (a per-layer config's
# checks, integrations/heterogeneity, are no part of it)
_CONFIG_CLASS_FILE = re.compile(
    r"^transformers/(?:configuration_utils|models/[^/]+/configuration_\w+)\.py$"
)


def raised_strictly(template: Template) -> bool:
    """Whether only the strictly validating releases raise ``template``: a config class's
    message first read in a release that validates strictly."""
    since = strict_since()
    return bool(
        since is not None
        and template.engine == "transformers"
        and _CONFIG_CLASS_FILE.search(template.file) is not None
        and template.releases
        and version_key(template.releases[0]) >= version_key(since)
    )


def before_strict() -> Fix:
    """The transformers release before strict config validation, as the reading has it."""
    since = strict_since()
    if since is None:
        return Fix("advice", "the transformers release the engine pins")
    return Fix(
        "dependency",
        f"pip install 'transformers<{since}'",
        note=f"transformers {since} and later validate config classes strictly (read from "
        "their source); or the engine release's own pin",
    )
