"""Typed parameters: from ``--set KEY=VALUE`` strings (or Python values) to checked values."""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patcher.errors import TransformError
from patcher.store.fsio import NotRegularFileError, read_regular
from patcher.text.document import shown, strict_loads
from patcher.transforms.definition import Param, Transform

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


@dataclass(frozen=True, slots=True)
class ResolvedParams:
    """``recorded`` goes into the journal; ``values`` fill the templates (file contents)."""

    recorded: Mapping[str, Any]
    values: Mapping[str, Any]
    # Parameters left at their defaults: a default never overwrites a different value the
    # file already holds (the compiler refuses, asking for the value to be given).
    defaulted: frozenset[str] = frozenset()


def parse_assignments(assignments: list[str]) -> dict[str, str]:
    """Split ``KEY=VALUE`` strings."""
    parsed: dict[str, str] = {}
    for item in assignments:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise TransformError(
                f"--set expects KEY=VALUE, got {item!r}", hint="e.g. --set length=131072"
            )
        name = key.strip()
        if name in parsed:  # the last would silently win, and the journal record only it
            raise TransformError(
                f"--set {name}= given twice ({parsed[name]!r} and {value!r})",
                hint=f"give --set {name}=... once",
            )
        parsed[name] = value
    return parsed


def _fail(transform: Transform, param: Param, problem: str) -> TransformError:
    builtin = transform.source.startswith("builtin:")  # not a file the user can open
    return TransformError(
        f"{transform.name}: parameter {param.name!r}: {problem}"
        if builtin
        else f"parameter {param.name!r}: {problem}",
        file=None if builtin else transform.source,
        hint=transform.explained_by,
    )


MAX_FILE_PARAM = 64 * 1024 * 1024
_INTEGER = re.compile(r"[+-]?[0-9](?:_?[0-9])*")


def _bound(limit: float) -> str:
    """A parameter's min or max as a message shows it: 2,147,483,647, 1, 0.5."""
    return f"{int(limit):,}" if float(limit).is_integer() else f"{limit:g}"


def _convert(transform: Transform, param: Param, raw: Any) -> Any:
    kind = param.type
    if isinstance(raw, str):
        try:
            raw.encode("utf-8")
        except UnicodeEncodeError:
            raise _fail(transform, param, "not valid UTF-8 text") from None
    if kind == "int":
        if isinstance(raw, bool) or not isinstance(raw, int | str):
            raise _fail(transform, param, f"expected an integer, got {raw!r}")
        if isinstance(raw, str) and not _INTEGER.fullmatch(raw.strip()):
            raise _fail(transform, param, f"expected an integer such as 131072, got {raw!r}")
        try:
            value: Any = int(str(raw).replace("_", ""))
        except ValueError:
            raise _fail(transform, param, f"expected an integer, got {raw!r}") from None
    elif kind == "float":
        try:
            value = float(raw) if not isinstance(raw, bool) else None
        except (TypeError, ValueError):
            value = None
        if isinstance(raw, str) and not raw.strip().isascii():
            value = None
        if value is None or not math.isfinite(value):
            raise _fail(transform, param, f"expected a finite number such as 4.0, got {raw!r}")
    elif kind == "bool":
        if isinstance(raw, bool):
            value = raw
        elif str(raw).lower() in _TRUE | _FALSE:
            value = str(raw).lower() in _TRUE
        else:
            raise _fail(transform, param, f"expected true or false, got {raw!r}")
    elif kind == "json":
        if isinstance(raw, str):
            try:
                value = strict_loads(raw)
            except (ValueError, RecursionError) as exc:
                message = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
                raise _fail(
                    transform, param, f'expected JSON ({message}), e.g. [1, 2] or {{"a": 1}}'
                ) from None
        else:
            value = raw
    else:
        value = str(raw)
        if not value.strip():  # an empty eos token, dtype or module pattern is never meant
            raise _fail(transform, param, f"expected text, got {value!r}")
    if param.minimum is not None and isinstance(value, int | float) and value < param.minimum:
        raise _fail(
            transform, param, f"must be at least {_bound(param.minimum)}, got {shown(value)}"
        )
    if param.maximum is not None and isinstance(value, int | float) and value > param.maximum:
        raise _fail(
            transform, param, f"must be at most {_bound(param.maximum)}, got {shown(value)}"
        )
    if param.choices is not None and value not in param.choices:
        allowed = ", ".join(map(str, param.choices))
        raise _fail(transform, param, f"must be one of {allowed}, got {value!r}")
    return value


def _read_file_param(transform: Transform, param: Param, path: str) -> str:
    """A ``file`` parameter's content: a regular file of text, of sane size, without a leading
    byte-order mark."""
    try:
        text = read_regular(Path(path), MAX_FILE_PARAM).decode("utf-8")
        # A Windows editor's mark is not template text: kept, it would become a U+FEFF
        # character at the start of tokenizer_config.json's chat_template.
        return text.removeprefix("\ufeff")
    except NotRegularFileError as exc:
        raise _fail(transform, param, f"{path!r} is {exc.strerror}") from None
    except OSError as exc:
        raise _fail(transform, param, f"cannot read file {path!r} ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise _fail(transform, param, f"{path!r} is not UTF-8 text") from None


# generation_config.json keys transformers' GenerationConfig and the engines read.
GENERATION_KEYS = (
    "bos_token_id", "decoder_start_token_id", "do_sample", "early_stopping", "eos_token_id",
    "epsilon_cutoff", "eta_cutoff", "frequency_penalty", "length_penalty", "max_length",
    "max_new_tokens", "min_length", "min_new_tokens", "min_p", "no_repeat_ngram_size",
    "num_beams", "pad_token_id", "presence_penalty", "repetition_penalty", "seed",
    "stop_strings", "temperature", "top_k", "top_p", "typical_p", "top_n_sigma",
    "bad_words_ids", "begin_suppress_tokens", "cache_implementation", "diversity_penalty",
    "forced_bos_token_id", "forced_eos_token_id", "guidance_scale", "num_beam_groups",
    "num_return_sequences", "output_scores", "renormalize_logits", "return_dict_in_generate",
    "suppress_tokens", "transformers_version", "use_cache",
)  # fmt: skip
_CLASS_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _meaning_problem(param: Param, value: Any) -> str | None:
    """Why ``value`` does not mean what ``param`` declares, or None."""
    if param.meaning == "token-ids":
        ids = value if isinstance(value, list) else [value]
        bad = [v for v in ids if isinstance(v, bool) or not isinstance(v, int) or v < 0]
        if not ids or bad:
            shown = bad[0] if bad else value
            return f"expected a token id or a list of ids (non-negative integers), got {shown!r}"
    if param.meaning == "generation-keys":
        if not isinstance(value, dict):
            return "expected a JSON object of generation_config.json keys"
        for key in value:
            if key not in GENERATION_KEYS:
                close = difflib.get_close_matches(key, GENERATION_KEYS, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                return f"{key!r} is not a generation_config.json key{hint}"
    if param.meaning == "class-name" and not (
        isinstance(value, str) and _CLASS_NAME.fullmatch(value)
    ):
        return f"expected one class name such as LlamaForCausalLM, got {value!r}"
    return None


_TYPE_WORDS = {"int": "an integer", "float": "a number", "bool": "true or false"}


def resolve_params(
    transform: Transform, given: Mapping[str, Any], *, typed: bool = False
) -> ResolvedParams:
    """Check ``given`` against the transform's parameters and fill in defaults. ``typed``:
    the values come typed (a profile's TOML, the library, Ansible's YAML), so a string is not
    read as a number or a boolean the way ``--set KEY=VALUE`` text is."""
    names = [p.name for p in transform.params]
    for key in given:
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1)
            suggestion = f"; did you mean {close[0]!r}?" if close else ""
            known = ", ".join(names) if names else "none"
            raise TransformError(
                f"unknown parameter {key!r} (known: {known}){suggestion}",
                file=transform.source,
                hint=transform.explained_by,
            )
    recorded: dict[str, Any] = {}
    values: dict[str, Any] = {}
    for param in transform.params:
        if typed and isinstance(given.get(param.name), str) and param.type in _TYPE_WORDS:
            raise _fail(
                transform,
                param,
                f"expected {_TYPE_WORDS[param.type]}, got the string {given[param.name]!r} "
                "(write it without quotes)",
            )
        if param.name in given:
            value = _convert(transform, param, given[param.name])
        elif not param.required:
            value = param.default
        else:
            raise _fail(transform, param, f"missing (use --set {param.name}=...)")
        problem = _meaning_problem(param, value) if param.name in given else None
        if problem is not None:
            raise _fail(transform, param, problem)
        recorded[param.name] = value
        if param.type == "file" and value is not None:
            values[param.name] = _read_file_param(transform, param, str(value))
        else:
            values[param.name] = value
    defaulted = frozenset(p.name for p in transform.params if p.name not in given)
    return ResolvedParams(recorded, values, defaulted)
