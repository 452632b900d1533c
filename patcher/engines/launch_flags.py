"""The engines' launch flags: how each spells a launch setting, and reading them from argv.

A launch setting is one the target holds (the parallel sizes, the memory, the context, the KV
dtype): patcher plans it, so a flag naming one is read into the target, never passed blind.
Any other flag is the user's, passed through as given."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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


def flag_words(words: Sequence[str]) -> tuple[tuple[str, str | None, tuple[str, ...]], ...]:
    """Each flag in ``words`` with its value (None: a switch such as --enforce-eager) and the
    words it took: ``--name=value``, ``--name value`` (a value is a word that is not a flag)."""
    found: list[tuple[str, str | None, tuple[str, ...]]] = []
    i = 0
    while i < len(words):
        word = words[i]
        name, eq, value = word.partition("=")
        if eq and word.startswith("-"):
            found.append((name, value, (word,)))
            i += 1
        elif word.startswith("-") and i + 1 < len(words) and _is_value(words[i + 1]):
            found.append((word, words[i + 1], (word, words[i + 1])))
            i += 2
        else:
            found.append((word, None, (word,)))
            i += 1
    return tuple(found)


def setting_values(
    words: Sequence[str], spellings: Mapping[str, tuple[str, ...]]
) -> dict[str, str]:
    """The launch settings ``words`` name, by their target names (the last one given wins, as
    argparse takes it)."""
    found: dict[str, str] = {}
    for name, value, _ in flag_words(words):
        for key, names in spellings.items():
            if name in names and value is not None:
                found[key] = value
    return found


def split_settings(
    engine: str, words: Sequence[str]
) -> tuple[dict[str, tuple[str, str]], tuple[str, ...]]:
    """``words`` as the launch settings they name (key -> (the flag as written, its value);
    the last one given wins, as argparse takes it) and the other flags, passed as given."""
    spellings = engine_flags(engine)
    by_name = {name: key for key, names in spellings.items() for name in names}
    settings: dict[str, tuple[str, str]] = {}
    rest: list[str] = []
    for name, value, taken in flag_words(words):
        if name not in by_name:
            rest += taken
        elif value is not None:
            settings[by_name[name]] = (name, value)
    return settings, tuple(rest)


def parse_bytes(text: str) -> int:
    """vLLM's --kv-cache-memory-bytes: a number, or with a suffix (64M, 1G, 1GiB)."""
    units = {"k": 1000, "m": 1000**2, "g": 1000**3, "ki": 1024, "mi": 1024**2, "gi": 1024**3}
    lowered = text.strip().lower().removesuffix("b")
    for suffix in ("ki", "mi", "gi", "k", "m", "g"):
        if lowered.endswith(suffix):
            return int(float(lowered[: -len(suffix)]) * units[suffix])
    return int(lowered)
