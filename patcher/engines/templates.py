"""Which chat template a checkpoint's tokenizer carries, and so what a server renders with
when it is given no ``--chat-template``."""

from __future__ import annotations

from typing import Any

JINJA_FILE = "chat_template.jinja"


def served_template(tokenizer_config: Any, jinja: str | None) -> str | None:
    """The chat template vLLM's and SGLang's tokenizers carry: ``chat_template.jinja`` when the
    checkpoint has one, else tokenizer_config.json's ``chat_template`` (of a list of named
    templates, the one named "default"). Recorded with vLLM 0.16.0 and 0.33.0 and SGLang 0.5.23,
    a differing tokenizer_config.json template beside the file included."""
    if jinja is not None:
        return jinja
    own = tokenizer_config.get("chat_template") if isinstance(tokenizer_config, dict) else None
    if isinstance(own, list):
        named = {t.get("name"): t.get("template") for t in own if isinstance(t, dict)}
        own = named.get("default")
    return own if isinstance(own, str) else None
