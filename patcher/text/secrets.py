"""Secrets on a server's command line and in the environment, kept out of what patcher prints.

A secret is the value of a flag whose name has a part ``key``, ``token``, ``secret``,
``password`` or ``credential`` (``--api-key``, ``--hf-token``, ``--ssl-keyfile-password``; not
``--tokenizer``, ``--max-num-batched-tokens`` or ``--ssl-keyfile``, which name no secret), and
the value of the environment's token variables (``HF_TOKEN``). The engine is given them as
they are; every line and JSON result patcher prints has them replaced by ``***``: the CLI's
output functions mask every value :func:`remember` was given, so a refusal or a note that
quotes a flag cannot leak one either.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence

MASK = "***"
SECRET_PARTS = frozenset({"key", "token", "secret", "password", "passwd", "credential"})
SECRET_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "VLLM_API_KEY", "OPENAI_API_KEY")
MIN_LENGTH = 4  # shorter values are masked in argv only: replacing "ab" in all text would garble it

_known: set[str] = set()


def is_secret_flag(word: str) -> bool:
    """Whether ``word`` (``--api-key`` or ``--api_key=...``) names a flag whose value is secret."""
    if not word.startswith("-"):
        return False
    name = word.split("=", 1)[0].lstrip("-").lower().replace("_", "-")
    return any(part in SECRET_PARTS for part in name.split("-"))


def secret_values(words: Sequence[str]) -> set[str]:
    """The secret values in argv ``words``."""
    found: set[str] = set()
    for i, word in enumerate(words):
        if not is_secret_flag(word):
            continue
        if "=" in word:
            found.add(word.split("=", 1)[1])
        elif i + 1 < len(words):
            found.add(words[i + 1])
    return {value for value in found if value}


def mask_words(words: Sequence[str]) -> list[str]:
    """``words`` with each secret flag's value replaced by ``***``."""
    masked = list(words)
    for i, word in enumerate(words):
        if not is_secret_flag(word):
            continue
        if "=" in word:
            masked[i] = word.split("=", 1)[0] + "=" + MASK
        elif i + 1 < len(words):
            masked[i + 1] = MASK
    return masked


def remember(values: Iterable[str]) -> None:
    """Mask these values in everything printed from now on (a command line's secrets)."""
    _known.update(v for v in values if len(v) >= MIN_LENGTH)


def mask(text: str) -> str:
    """``text`` with every remembered secret, and the environment's tokens, as ``***``."""
    secrets = set(_known)
    secrets.update(v for k in SECRET_ENV if len(v := os.environ.get(k, "")) >= MIN_LENGTH)
    for secret in sorted(secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
        quoted = json.dumps(secret)[1:-1]
        if quoted != secret and quoted in text:
            text = text.replace(quoted, MASK)
    return text
