"""The engines' launch flags: how each spells a launch setting, and reading them from argv.

A launch setting is one the target holds (the parallel sizes, the memory, the context, the KV
dtype): patcher plans it, so a flag naming one is read into the target, never passed blind.
Any other flag is the user's, passed through as given."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

from patcher.engines.engine import Engine
from patcher.errors import TargetError

# Each launch setting, as each engine spells it (the first spelling is the canonical one).
VLLM_FLAGS: Mapping[str, tuple[str, ...]] = {
    "tensor_parallel": ("--tensor-parallel-size", "-tp"),
    "pipeline_parallel": ("--pipeline-parallel-size", "-pp"),
    "max_model_len": ("--max-model-len",),
    "kv_cache_memory": ("--kv-cache-memory-bytes",),
    "gpu_memory_utilization": ("--gpu-memory-utilization",),
    "kv_cache_dtype": ("--kv-cache-dtype",),
}
SGLANG_FLAGS: Mapping[str, tuple[str, ...]] = {
    "tensor_parallel": ("--tp", "--tp-size", "--tensor-parallel-size"),
    "pipeline_parallel": ("--pp-size", "--pipeline-parallel-size"),
    "max_model_len": ("--context-length",),
    "gpu_memory_utilization": ("--mem-fraction-static",),
    "kv_cache_dtype": ("--kv-cache-dtype",),
}


# Expert parallelism, which the plan reads from the server's flags (it decides how experts
# split; patcher.engines.parallel): vLLM's switch (the size is the GPUs'), SGLang's size.
EXPERT_PARALLEL_FLAGS: Mapping[str, tuple[str, ...]] = {
    "vllm": ("--enable-expert-parallel", "-ep"),
    "sglang": ("--ep-size", "--ep", "--expert-parallel-size"),
}


def engine_flags(engine: str) -> Mapping[str, tuple[str, ...]]:
    """The launch settings' spellings for ``engine`` (``vllm`` or ``sglang``)."""
    return SGLANG_FLAGS if engine == "sglang" else VLLM_FLAGS


def _is_value(word: str) -> bool:
    if not word.startswith("-"):
        return True
    try:
        float(word)  # a negative number (--max-model-len -1) is a value, not a flag
    except ValueError:
        return False
    return True


def vllm_spelling(name: str) -> str:
    """A flag's name as vLLM's FlexibleArgumentParser reads it: underscores are dashes up to
    the first dot (``--max_model_len`` is ``--max-model-len``; utils/argparse_utils.py)."""
    if not name.startswith("--"):
        return name
    head, dot, tail = name[2:].partition(".")
    return "--" + head.replace("_", "-") + dot + tail


def flag_words(
    words: Sequence[str], engine: str | None = None
) -> tuple[tuple[str, str | None, tuple[str, ...]], ...]:
    """Each flag in ``words`` with its value (None: a switch such as --enforce-eager) and the
    words it took: ``--name=value``, ``--name value`` (a value is a word that is not a flag).
    For ``engine`` "vllm" the names are as vLLM reads them (underscores as dashes)."""
    found: list[tuple[str, str | None, tuple[str, ...]]] = []
    spell = vllm_spelling if engine == "vllm" else str
    i = 0
    while i < len(words):
        word = words[i]
        name, eq, value = word.partition("=")
        name = spell(name)
        if eq and word.startswith("-"):
            found.append((name, value, (word,)))
            i += 1
        elif word.startswith("-") and i + 1 < len(words) and _is_value(words[i + 1]):
            found.append((spell(word), words[i + 1], (word, words[i + 1])))
            i += 2
        else:
            found.append((spell(word), None, (word,)))
            i += 1
    return tuple(found)


def setting_values(
    words: Sequence[str], spellings: Mapping[str, tuple[str, ...]], engine: str | None = None
) -> dict[str, str]:
    """The launch settings ``words`` name, by their target names (the last one given wins, as
    argparse takes it; for vLLM, ``--max_model_len`` as ``--max-model-len``)."""
    found: dict[str, str] = {}
    for name, value, _ in flag_words(words, engine):
        for key, names in spellings.items():
            if name in names and value is None:
                raise TargetError(
                    f"{name} is given no value", hint=f"give it one ({name} VALUE) or leave it out"
                )
            if name in names:
                found[key] = value  # type: ignore[assignment]
    return found


def split_settings(
    engine: str, words: Sequence[str]
) -> tuple[dict[str, tuple[str, str | None]], tuple[str, ...]]:
    """``words`` as the launch settings they name (key -> (the flag as written, its value, None
    when it has none); the last one given wins, as argparse takes it) and the other flags,
    passed as given."""
    spellings = engine_flags(engine)
    by_name = {name: key for key, names in spellings.items() for name in names}
    settings: dict[str, tuple[str, str | None]] = {}
    rest: list[str] = []
    for name, value, taken in flag_words(words, engine):
        if name not in by_name:
            rest += taken
        else:
            settings[by_name[name]] = (name, value)  # None: the flag's value is missing
    return settings, tuple(rest)


# Read from each release's engine/arg_utils.py (snapshots/engines/rules-vllm.json):
MAX_MODEL_LEN_AUTO_FROM = (0, 14, 0)  # human_readable_int_or_auto: --max-model-len auto or -1
KV_CACHE_MEMORY_BYTES_FROM = (0, 11, 0)  # the --kv-cache-memory-bytes argument
TERA_SUFFIX_FROM = (0, 13, 0)  # human_readable_int takes t/T beside k/K, m/M, g/G

_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def human_readable_int(text: str, version: tuple[int, ...] = (0, 33, 0)) -> int:
    """A number as vLLM's argparse reads --max-model-len and --kv-cache-memory-bytes
    (``human_readable_int``): ``1k`` is 1,000, ``1K`` 1,024, ``25.6k`` 25,600; a decimal with a
    binary suffix (``1.5G``), a unit such as ``GiB``, or anything else is refused
    (:class:`ValueError`), as vLLM refuses it."""
    value = text.strip()
    match = _HUMAN.fullmatch(value)
    tera = version >= TERA_SUFFIX_FROM
    if match and (tera or match.group(2) not in "tT"):
        number, suffix = match.groups()
        if suffix in _DECIMAL:
            return int(float(number) * _DECIMAL[suffix])
        return int(number) * _BINARY[suffix]  # int("1.5") raises, as vLLM refuses it
    return int(value)


def parse_context(text: str, version: tuple[int, ...] = (0, 33, 0)) -> int | Literal["auto"]:
    """--max-model-len as vLLM reads it (``human_readable_int_or_auto``): ``auto`` or ``-1``
    (the engine fits the context to the KV memory; see :data:`MAX_MODEL_LEN_AUTO_FROM`), else
    :func:`human_readable_int`."""
    value = text.strip()
    if value == "-1" or value.lower() == "auto":
        return "auto"
    return human_readable_int(value, version)


def is_auto_context(value: object) -> bool:
    """A max_model_len setting (a profile's, make_target's) that asks for vLLM's own fit."""
    return value == "auto" or (value == -1 and not isinstance(value, bool))


# A setting whose flag not every release has: (the flag, the first vLLM release taking it,
# what to do instead). SGLang has neither.
_FLAG_FROM: Mapping[str, tuple[str, tuple[int, int, int], str]] = {
    "max_model_len": (
        "--max-model-len auto",
        MAX_MODEL_LEN_AUTO_FROM,
        "leave max_model_len out: plan then caps the context to what fits",
    ),
    "kv_cache_memory": (
        "--kv-cache-memory-bytes",
        KV_CACHE_MEMORY_BYTES_FROM,
        "leave kv_cache_memory out and give gpu_memory_utilization (--gpu-utilization)",
    ),
}


def refuse_without_flag(engine: Engine, setting: str, source: str | None) -> None:
    """Refuse ``setting`` (max_model_len "auto", kv_cache_memory) where ``engine`` has no flag
    to give it to the server: the plan would judge a launch the server cannot have."""
    flag, first, instead = _FLAG_FROM[setting]
    if engine.name == "vllm" and engine.version >= first:
        return
    since = ".".join(map(str, first))
    raise TargetError(
        f"{engine} has no {flag}"
        + (f" (vLLM takes it from {since})" if engine.name == "vllm" else ""),
        file=source,
        pointer=f"/{setting}" if source else None,
        hint=instead,
    )
