"""check's findings about what an engine stops generating on: the eos ids of
generation_config.json against config.json's, and a tokenizer eos_token that is no token."""

from __future__ import annotations

import difflib
import json
import shlex
from collections.abc import Iterator
from typing import Any

from patcher.advice.finding import CheckContext, Finding, dig, language_model, pointer_of
from patcher.text.document import shown


def _as_set(value: Any) -> set[Any]:
    return set(value) if isinstance(value, list) else {value}


def _token_ids(value: Any) -> bool:
    """Whether ``value`` is a token id or a non-empty list of them."""
    items = value if isinstance(value, list) else [value]
    return bool(items) and all(
        isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in items
    )


def eos_mismatch(ctx: CheckContext) -> Iterator[Finding]:
    """generation_config.json's eos ids, against config.json's: not ids at all, or missing
    one of config.json's (an engine stopping on the first may run past a turn's end)."""
    files, apply = ctx.get, ctx.apply
    generation = files("generation_config.json")
    config = files("config.json")
    model, base = language_model(config)
    ids_generation = dig(generation, ("eos_token_id",))
    at = base if dig(model, ("eos_token_id",)) else ()
    ids_config = dig(model, ("eos_token_id",)) or dig(config, ("eos_token_id",))
    for name, pointer, ids in (
        ("generation_config.json", "/eos_token_id", ids_generation),
        ("config.json", pointer_of((*at, "eos_token_id")), ids_config),
    ):
        if ids is not None and not _token_ids(ids):
            fix = name == "generation_config.json" and _token_ids(ids_config)
            yield Finding(
                "eos-invalid",
                name,
                pointer,
                f"eos_token_id {shown(ids)} is not a token id or a list of them: an engine "
                "cannot stop on it",
                "fix-generation-eos-token-id" if fix else None,
                apply(
                    "fix-generation-eos-token-id",
                    "--set",
                    "eos=" + json.dumps(sorted(_as_set(ids_config))),
                )
                if fix
                else None,
                note=None if fix else f"edit {name}: eos_token_id is an integer or a list of them",
            )
            return
    if ids_generation is None or ids_config is None:
        return
    if not _as_set(ids_config) <= _as_set(ids_generation):
        yield Finding(
            "eos-mismatch",
            "generation_config.json",
            "/eos_token_id",
            f"eos_token_id differs: generation_config.json {json.dumps(ids_generation)}, "
            f"config.json {json.dumps(ids_config)}; engines that stop on the generation config "
            "may not stop at the end of a turn",
            "fix-generation-eos-token-id",
            apply(
                "fix-generation-eos-token-id",
                "--set",
                "eos=" + json.dumps(sorted(_as_set(ids_config) | _as_set(ids_generation))),
            ),
        )


def _token_text(value: Any) -> str | None:
    """A special token as tokenizer files spell it: a string, or an AddedToken's content."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _vocabulary(tokenizer_json: Any) -> set[str]:
    """The tokens of tokenizer.json's model: its vocabulary, a dict for BPE and WordPiece, a
    list of [piece, score] for Unigram."""
    vocab = dig(tokenizer_json, ("model", "vocab"))
    if isinstance(vocab, dict):
        return set(vocab)
    if isinstance(vocab, list):
        return {p[0] for p in vocab if isinstance(p, list) and p and isinstance(p[0], str)}
    return set()


def _token_texts(tokens: Any) -> set[str]:
    """The texts of a list of added tokens (or of added_tokens_decoder's values)."""
    if isinstance(tokens, dict):
        tokens = list(tokens.values())
    return {t for t in map(_token_text, tokens) if t} if isinstance(tokens, list) else set()


def unknown_eos_token(ctx: CheckContext) -> Iterator[Finding]:
    """tokenizer_config.json's eos_token, when the tokenizer has no such token."""
    files, checkpoint = ctx.get, ctx.checkpoint.arg
    tokenizer = files("tokenizer_config.json")
    value = dig(tokenizer, ("eos_token",))
    token = _token_text(value)
    special = _token_texts(dig(tokenizer, ("added_tokens_decoder",)))
    if token is None or token in special:
        return
    vocabulary = files("tokenizer.json")
    if not isinstance(vocabulary, dict):
        return  # the vocabulary is elsewhere (tokenizer.model, vocab.json) or absent
    special |= _token_texts(dig(vocabulary, ("added_tokens",)))
    if token in special or token in _vocabulary(vocabulary):
        return
    close = difflib.get_close_matches(token, sorted(special), n=1, cutoff=0.5)
    yield Finding(
        "eos-token-unknown",
        "tokenizer_config.json",
        "/eos_token/content" if isinstance(value, dict) else "/eos_token",
        f"eos_token {json.dumps(token)} is not a token of this tokenizer (tokenizer.json's "
        "vocabulary or added tokens): it is added as a new token, whose id the model never "
        "generates, so generation does not stop on it",
        "set-tokenizer-eos-token" if close else None,
        f"patcher apply {checkpoint} set-tokenizer-eos-token --set "
        + shlex.quote(f"token={close[0]}")
        if close
        else None,
        note=None
        if close
        else "edit tokenizer_config.json: eos_token names a token of tokenizer.json",
    )
