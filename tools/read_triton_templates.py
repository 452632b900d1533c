"""Where the Triton TensorRT-LLM backend's model templates leave placeholders, read from its
repository's history:

    python -m tools.read_triton_templates REPO   # triton-inference-server/tensorrtllm_backend

Every ``config.pbtxt`` under ``all_models/`` at every commit that touched one: the ``${key}``
placeholders ``tools/fill_template.py`` fills, each with the line and column it starts at. Triton
refuses a template left unfilled in protobuf's words ("Error parsing text-format
inference.ModelConfig: 29:17: Expected integer, got: $"), which name only the place; this reading
names the key, and the model whose template has it. The backend's C++ source, as of the last
commit that held it, is read for the engine path parameter (``gpt_model_path``) whose folder's
config.json the backend parses. Each model whose template reshapes an input to a scalar
(``reshape: { shape: [ ] }``) is kept with the ``max_batch_size`` its template sets: Triton
refuses such an input in a non-batching model (``max_batch_size: 0``; the core's
model_config_utils.cc). The result: patcher/advice/trtllm-templates.json.
"""

from __future__ import annotations

import datetime
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

OUT = Path("patcher/advice/trtllm-templates.json")
_PLACEHOLDER = re.compile(r"\$\{(\w+)\}")
# the placeholder the engine path parameter's value is filled from
_ENGINE_PATH = re.compile(r'key:\s*"gpt_model_path"\s*value:\s*\{\s*string_value:\s*"\$\{(\w+)\}"')
_SOURCE = "inflight_batcher_llm/src/model_instance_state.cc"
_SCALAR = re.compile(r"reshape:\s*\{\s*shape:\s*\[\s*\]\s*\}")
_BATCH = re.compile(r"^max_batch_size:\s*(\S+)", re.MULTILINE)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def read(repo: Path) -> dict[str, object]:
    """The placeholders of every model template at every commit, by place and by model."""
    places: dict[str, set[str]] = defaultdict(set)
    models: dict[str, set[str]] = defaultdict(set)
    engine_path: set[str] = set()
    scalar: dict[str, set[str]] = defaultdict(set)  # model: the max_batch_size its template sets
    commits = _git(repo, "log", "--format=%H", "--", "all_models").split()
    for commit in commits:
        files = _git(repo, "ls-tree", "-r", "--name-only", commit, "--", "all_models").split()
        for path in (f for f in files if f.endswith("/config.pbtxt")):
            model = path.split("/")[-2]
            text = _git(repo, "show", f"{commit}:{path}")
            engine_path |= set(_ENGINE_PATH.findall(text))
            if _SCALAR.search(text) and (batch := _BATCH.search(text)):
                scalar[model].add(batch.group(1))
            for number, line in enumerate(text.splitlines(), start=1):
                for found in _PLACEHOLDER.finditer(line):
                    places[f"{number}:{found.start() + 1}"].add(found.group(1))
                    models[model].add(found.group(1))
    held = _git(repo, "log", "--format=%H", "-1", "--", _SOURCE).strip()
    source = _git(repo, "show", f"{held}~1:{_SOURCE}") if held else ""
    if "gpt_model_path" not in source:
        raise LookupError(f"{_SOURCE}: no gpt_model_path parameter")
    if not commits or not places or not engine_path:
        raise LookupError(f"{repo}: no placeholder in any all_models/*/config.pbtxt")
    return {
        "made_by": "python -m tools.read_triton_templates REPO "
        f"({datetime.date.today().isoformat()})",
        "source": {
            "repository": "triton-inference-server/tensorrtllm_backend",
            "templates": f"all_models/*/*/config.pbtxt at the {len(commits)} commits that "
            "touched them, up to the clone's head of "
            f"{_git(repo, 'log', '-1', '--format=%ad', '--date=short').strip()}",
            "engine_path": f"{_SOURCE} before {held[:7]}: the parameter gpt_model_path names "
            "the engine folder, whose config.json the backend parses (later releases check "
            "that it exists: 'Decoder (GPT) model path at %s does not exist.')",
        },
        "engine_path_parameter": "gpt_model_path",
        "engine_path_placeholders": sorted(engine_path),
        "places": {k: sorted(v) for k, v in sorted(places.items(), key=_place)},
        "models": {k: sorted(v) for k, v in sorted(models.items())},
        "scalar_inputs": {k: sorted(v) for k, v in sorted(scalar.items())},
    }


def _place(item: tuple[str, set[str]]) -> tuple[int, int]:
    line, column = item[0].split(":")
    return int(line), int(column)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    reading = read(Path(argv[0]))
    OUT.write_text(json.dumps(reading, indent=1) + "\n")
    print(f"{OUT}: {len(reading['places'])} places, {len(reading['models'])} models")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
