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
  not the model dtype (``_reject_mismatched_float_kv_cache`` in config/vllm.py).

    pip download --no-deps vllm==X.Y.Z -d WHEELS     # per release
    python tests/record_rules.py WHEELS/vllm-*.whl [X.Y.Z=VENV/lib/python3.11/site-packages]

Writes ``snapshots/engines/rules-vllm.json``; ``tests/engines/test_rules.py`` holds the
model's boundaries (YARN_KEEPS_MAX_POSITION, AUTO_GPTQ_FROM, KV_AUTO_FROM_CHECKPOINT) and its
``--kv-cache-dtype`` choices (``vllm_kv.kv_cache_dtype_choices``) to it.
"""

from __future__ import annotations

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
    }


def read(source: str) -> tuple[str, dict[str, Any]]:
    """A wheel (vllm-X.Y.Z-...whl), or X.Y.Z=SITE_PACKAGES for an installed release."""
    names = (*CONFIG_FILES, *TORCH_UTILS, *QUANTIZATION, *CACHE, *VLLM_CONFIG)
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
                "made_by": "python tests/record_rules.py WHEELS/vllm-*.whl (2026-12-02)",
                "releases": dict(ordered),
            },
            indent=1,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
