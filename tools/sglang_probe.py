"""Runs inside a venv that has a real SGLang installed (never in patcher's own venv).

Usage: SGLANG_VENV/bin/python tools/sglang_probe.py CASES.json OUT.json

For each case (``{"case name": "/path/to/checkpoint/dir"}``) this builds SGLang's own
``ModelConfig(model_path=DIR)`` on CPU and records the model dtype ``--dtype auto`` resolves
to, the context length, the request defaults it takes from generation_config.json, the ids it
stops on (``hf_eos_token_id``), and what its
tokenizer loading makes of tokenizer_config.json where the case has one. A case
SGLang cannot configure on a machine without a GPU (remote code, a quantization method only its
CUDA build registers) is recorded with its error and not compared. It imports nothing from
patcher (tests/engines/test_engine_truth.py compares).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from engine_probe import template_hash  # the same hash (run as tools/sglang_probe.py)


def _error(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


def _tokenizer(path: str) -> dict[str, Any]:
    """What SGLang's tokenizer loading (its own get_tokenizer, as the tokenizer manager calls it
    at start-up) makes of the files: "loaded" and the SHA-256 of the chat template the tokenizer
    carries (the server's default), or the error."""
    from sglang.srt.utils.hf_transformers_utils import get_tokenizer

    try:
        tokenizer = get_tokenizer(path)
    except Exception as exc:
        return {"tokenizer": _error(exc)}
    return {"tokenizer": "loaded", "chat_template_sha256": template_hash(tokenizer)}


def probe(path: str) -> dict[str, Any]:
    """What SGLang's config stage derives for one checkpoint directory."""
    from sglang.srt.configs.model_config import ModelConfig

    found: dict[str, Any] = {}
    if (Path(path) / "tokenizer_config.json").exists():
        found.update(_tokenizer(path))
    try:
        # sampling_defaults="model" is the server's default (ModelConfig's own is "openai").
        config = ModelConfig(model_path=path, sampling_defaults="model")
    except Exception as exc:
        return {**found, "error": _error(exc)}
    return {
        **found,
        "dtype": str(config.dtype).removeprefix("torch."),
        "context_len": config.context_len,
        # What its OpenAI server takes from generation_config.json as request defaults.
        "sampling_defaults": config.get_default_sampling_params(),
        # The ids its scheduler stops on besides the tokenizer's (config.json's and the
        # generation config's together).
        "eos_token_id": sorted(config.hf_eos_token_id or ()),
    }


def main() -> None:
    cases_file, out_file = sys.argv[1], sys.argv[2]
    cases: dict[str, str] = json.loads(Path(cases_file).read_text(encoding="utf-8"))
    import sglang

    record = {
        "engine": "sglang",
        "version": sglang.__version__,
        "cases": {name: probe(path) for name, path in sorted(cases.items())},
    }
    Path(out_file).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
