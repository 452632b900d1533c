"""Record, per vLLM release, which side of each version rule the engine model states it is on,
read from the release's own pure-Python source (no import, no GPU):

- ``yarn_derives_from_original``: a YaRN config's length is original_max_position_embeddings x
  factor (``derived_max_model_len = ...["original_max_position_embeddings"]`` in
  _get_and_verify_max_len), before the rule that keeps max_position_embeddings;
- ``auto_gptq``: quant_method gptq resolves to auto_gptq (``"auto_gptq"`` in the config code);
- ``kv_auto_from_checkpoint``: ``--kv-cache-dtype auto`` is resolved from the checkpoint's
  quantization config (``resolve_kv_cache_dtype_string``);
- ``quantization_methods``: the names the release registers (``QuantizationMethods``), which
  config/model.py checks quant_method against ("Unknown quantization method");
- ``kv_cache_dtypes``: the values ``--kv-cache-dtype`` takes (``CacheDType`` in
  config/cache.py; argparse refuses any other: "invalid choice");
- ``float_kv_matches_model``: VllmConfig refuses an explicit float16/bfloat16 KV cache that is
  not the model dtype (``_reject_mismatched_float_kv_cache`` in config/vllm.py);
- ``max_model_len_auto``: ``--max-model-len auto`` (or -1) fits the context to the KV memory
  (``human_readable_int_or_auto`` in engine/arg_utils.py);
- ``kv_cache_memory_bytes``: EngineArgs has ``kv_cache_memory_bytes`` (the flag exists);
- ``human_readable_int``: what the release's own ``human_readable_int`` (the type of
  --max-model-len and --kv-cache-memory-bytes) makes of sample words, run from its source:
  an int, or "refused"; ``human_readable_int_or_auto`` the same for --max-model-len's type
  from 0.14 (None before).

    pip download --no-deps vllm==X.Y.Z -d WHEELS     # per release
    python tools/record_rules.py WHEELS/vllm-*.whl [X.Y.Z=VENV/lib/python3.11/site-packages]

Writes ``snapshots/engines/rules-vllm.json``; ``tests/engines/test_rules.py`` holds the
model's boundaries (YARN_KEEPS_MAX_POSITION, AUTO_GPTQ_FROM, KV_AUTO_FROM_CHECKPOINT) and its
``--kv-cache-dtype`` choices (``vllm_kv.kv_cache_dtype_choices``) to it.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "snapshots" / "engines" / "rules-vllm.json"
CONFIG_FILES = ("vllm/config/model.py", "vllm/config.py", "vllm/config/__init__.py")
TORCH_UTILS = ("vllm/utils/torch_utils.py", "vllm/utils/__init__.py", "vllm/utils.py")
QUANTIZATION = ("vllm/model_executor/layers/quantization/__init__.py",)
CACHE = ("vllm/config/cache.py",)
VLLM_CONFIG = ("vllm/config/vllm.py",)
ARG_UTILS = ("vllm/engine/arg_utils.py",)
ARGPARSE_UTILS = ("vllm/utils/argparse_utils.py",)  # where the parsers live from 0.20
# Words a user may give --max-model-len or --kv-cache-memory-bytes.
HUMAN_WORDS = (
    "131072",
    " 4096 ",
    "128k",
    "128K",
    "25.6k",
    "1.5K",
    "1g",
    "1G",
    "2t",
    "2T",
    "64m",
    "64M",
    "1GiB",
    "1GB",
    "1e9",
    "-1",
    "auto",
    "0x10",
    "",
)
CACHE_DTYPES = re.compile(r"CacheDType\s*=\s*Literal\[(.*?)\]", re.S)
METHODS = re.compile(r"QuantizationMethods\s*=\s*Literal\[(.*?)\]", re.S)
YARN_OLD = re.compile(r"derived_max_model_len\s*=\s*\w+\[\s*\"original_max_position_embeddings\"")


def _rules(read: dict[str, str]) -> dict[str, Any]:
    config = "".join(read.get(name, "") for name in CONFIG_FILES)
    torch_utils = "".join(read.get(name, "") for name in TORCH_UTILS)
    listed = METHODS.search("".join(read.get(name, "") for name in QUANTIZATION))
    dtypes = CACHE_DTYPES.search("".join(read.get(name, "") for name in CACHE))
    if not config or listed is None or dtypes is None:
        raise SystemExit("no vllm/config code, QuantizationMethods or CacheDType in this release")
    return {
        "yarn_derives_from_original": YARN_OLD.search(config) is not None,
        "auto_gptq": '"auto_gptq"' in config,
        "kv_auto_from_checkpoint": "def resolve_kv_cache_dtype_string" in torch_utils,
        "quantization_methods": sorted(re.findall(r'"([\w-]+)"', listed.group(1))),
        "kv_cache_dtypes": re.findall(r'"([\w-]+)"', dtypes.group(1)),
        "float_kv_matches_model": "def _reject_mismatched_float_kv_cache"
        in "".join(read.get(name, "") for name in VLLM_CONFIG),
        **_arg_rules(
            "".join(read.get(name, "") for name in ARG_UTILS),
            "".join(read.get(name, "") for name in (*ARG_UTILS, *ARGPARSE_UTILS)),
        ),
    }


def _function(source: str, name: str) -> str:
    """The text of a top-level function of ``source``."""
    start = source.index(f"\ndef {name}(") + 1
    end = re.compile(r"\n(?=[^\s#])").search(source, start)  # the next top-level statement
    return source[start : end.start() if end else len(source)]


def _arg_rules(args: str, parsers: str) -> dict[str, Any]:
    """``args``: engine/arg_utils.py; ``parsers``: it and the module its parsers moved to."""
    if not args:
        raise SystemExit("no vllm/engine/arg_utils.py in this release")
    space: dict[str, Any] = {"re": re, "argparse": argparse}
    exec(_function(parsers, "human_readable_int"), space)  # the release's own parser
    parse = space["human_readable_int"]

    def outcomes(parse: Any) -> dict[str, int | str]:
        found: dict[str, int | str] = {}
        for word in HUMAN_WORDS:
            try:
                found[word] = int(parse(word))
            except (ValueError, argparse.ArgumentTypeError, KeyError):
                found[word] = "refused"
        return found

    with_auto: dict[str, int | str] | None = None
    if "def human_readable_int_or_auto" in parsers:
        exec(_function(parsers, "human_readable_int_or_auto"), space)
        with_auto = outcomes(space["human_readable_int_or_auto"])
    return {
        # The parser exists and arg_utils gives it to --max-model-len.
        "max_model_len_auto": "def human_readable_int_or_auto" in parsers
        and re.search(
            r'name == "max_model_len":\s*\n\s*kwargs\[name\]\["type"\] = '
            r"human_readable_int_or_auto",
            args,
        )
        is not None,
        "kv_cache_memory_bytes": re.search(r"^\s+kv_cache_memory_bytes\s*:", args, re.M)
        is not None,
        "human_readable_int": outcomes(parse),
        # --max-model-len's own type where it has one (-1: the engine fits the context).
        "human_readable_int_or_auto": with_auto,
    }


def read(source: str) -> tuple[str, dict[str, Any]]:
    """A wheel (vllm-X.Y.Z-...whl), or X.Y.Z=SITE_PACKAGES for an installed release."""
    names = (
        *CONFIG_FILES,
        *TORCH_UTILS,
        *QUANTIZATION,
        *CACHE,
        *VLLM_CONFIG,
        *ARG_UTILS,
        *ARGPARSE_UTILS,
    )
    if "=" in source:
        version, _, folder = source.partition("=")
        return version, _rules(
            {n: (Path(folder) / n).read_text() for n in names if (Path(folder) / n).is_file()}
        )
    found = re.match(r"vllm-(\d+\.\d+\.\d+)", Path(source).name)
    assert found is not None, source
    with zipfile.ZipFile(source) as archive:
        present = set(archive.namelist())
        return found.group(1), _rules({n: archive.read(n).decode() for n in names if n in present})


def main() -> int:
    recorded = json.loads(OUT.read_text())["releases"] if OUT.exists() else {}
    for source in sys.argv[1:]:
        version, rules = read(source)
        recorded[version] = rules
        print(version, rules)
    ordered = sorted(recorded.items(), key=lambda kv: tuple(map(int, kv[0].split("."))))
    OUT.write_text(
        json.dumps(
            {
                "made_by": "python tools/record_rules.py WHEELS/vllm-*.whl (2026-12-02)",
                "releases": dict(ordered),
            },
            indent=1,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
