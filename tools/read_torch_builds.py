"""Which GPUs each torch release's default build runs on, read from torch's own files:

    python -m tools.read_torch_builds TORCH_WHEEL [TORCH_WHEEL ...]

- the compute capabilities each CUDA build of torch is compiled for (``PYTORCH_RELEASES_CODE_CC``
  in ``torch/cuda/__init__.py``, kept by torch in sync with its wheel builds; x86_64) and which
  GPUs a kernel image for each runs on (``DEVICE_REQUIREMENT`` there), from the wheels given
  (any platform's wheel carries the same Python file: 2.11.0's macOS wheel and 2.13.0's CPU
  wheel were read);
- the CUDA of each torch release's default build on PyPI (the one ``pip install torch==X``
  takes on Linux x86_64): its ``Requires-Dist`` on ``nvidia-cuda-runtime-cu12==12.8.90`` or
  ``cuda-toolkit[...]==13.0.2``, read from the index's metadata (``pip install --dry-run
  --report``, no download of the wheel), for every torch the engines' read releases pin
  (the catalogue's ``torch_pin``).

The result, patcher/advice/torch-builds.json, lets doctor answer torch's own refusal of a GPU
("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current
PyTorch installation") with the engine releases whose pinned torch runs on it.
"""

from __future__ import annotations

import ast
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

OUT = Path("patcher/advice/torch-builds.json")
_INIT = "torch/cuda/__init__.py"
_CUDA_PIN = re.compile(
    r"^(?:nvidia-cuda-runtime-cu\d+|cuda-toolkit(?:\[[^\]]*\])?)\s*\(?==\s*(\d+)\.(\d+)"
)


def _assigned(tree: ast.Module, name: str) -> ast.expr:
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.target.id == name and node.value is not None:
                return node.value
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return node.value
    raise LookupError(f"{_INIT} assigns no {name}")


def _ints(node: ast.expr) -> list[int]:
    value = ast.literal_eval(node)
    return sorted(int(v) for v in value)


def code_cc(wheel: Path) -> tuple[str, dict[str, list[int]], dict[str, dict[str, Any]]]:
    """The torch version, its CUDA builds' compute capabilities (x86_64) and what each image
    runs on (``{"start": 70, "exclude": [72]}`` or ``{"only": [72]}``)."""
    with zipfile.ZipFile(wheel) as archive:
        tree = ast.parse(archive.read(_INIT).decode())
    version = wheel.name.split("-")[1].split("+")[0]
    builds: dict[str, list[int]] = {}
    table = _assigned(tree, "PYTORCH_RELEASES_CODE_CC")
    assert isinstance(table, ast.Dict)
    for key, value in zip(table.keys, table.values, strict=True):
        assert key is not None
        cuda = ast.literal_eval(key)
        if isinstance(value, ast.Dict):  # {cuda: {host arch: set}} (2.13)
            hosts = [ast.literal_eval(k) for k in value.keys if k is not None]
            by_arch = dict(zip(hosts, value.values, strict=True))
            builds[cuda] = _ints(by_arch["x86_64"])
        else:  # {cuda: set} (2.11)
            builds[cuda] = _ints(value)
    runs: dict[str, dict[str, Any]] = {}
    requirement = _assigned(tree, "DEVICE_REQUIREMENT")
    assert isinstance(requirement, ast.Dict)
    for key, value in zip(requirement.keys, requirement.values, strict=True):
        assert key is not None and isinstance(value, ast.Call)
        kind = value.func.id if isinstance(value.func, ast.Name) else ""
        if kind == "_CompatSet":
            runs[str(ast.literal_eval(key))] = {"only": _ints(value.args[0])}
        else:
            words = {k.arg: k.value for k in value.keywords}
            runs[str(ast.literal_eval(key))] = {
                "start": ast.literal_eval(words["start"]),
                "exclude": _ints(words["exclude"]) if "exclude" in words else [],
            }
    return version, builds, runs


def default_cuda(torch: str) -> str:
    """The CUDA of ``torch==X``'s default Linux x86_64 wheel on PyPI, from its metadata."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        # the index alone: no local wheels (PIP_FIND_LINKS), no other index or constraint
        env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        env["PIP_CONFIG_FILE"] = os.devnull
        tags = ["--platform", "manylinux_2_28_x86_64", "--platform", "manylinux2014_x86_64"]
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--quiet"]
            + [
                "--ignore-installed",
                "--disable-pip-version-check",
                "--only-binary=:all:",
                "--python-version",
                "3.11",
            ]
            + [*tags, "--platform", "manylinux1_x86_64", "--target", str(Path(tmp) / "t")]
            + ["--index-url", "https://pypi.org/simple", "--report", str(report)]
            + [f"torch=={torch}"],
            check=True,
            env=env,
        )
        metadata = json.loads(report.read_text())["install"][0]["metadata"]
    for requirement in metadata.get("requires_dist", []):
        found = _CUDA_PIN.match(requirement)
        if found is not None:
            return f"{found.group(1)}.{found.group(2)}"
    raise LookupError(f"torch {torch}: no CUDA runtime among its requirements")


def _pinned() -> list[str]:
    from patcher.advice.catalogue import features_of

    pins = {pin for engine in ("vllm", "sglang") for pin in features_of(engine, "torch_pin")}
    return sorted(pins, key=lambda v: tuple(int(p) for p in v.split(".")))


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    builds: dict[str, list[int]] = {}
    runs: dict[str, dict[str, Any]] = {}
    read_from = []
    for wheel in map(Path, argv):
        version, its_builds, its_runs = code_cc(wheel)
        read_from.append(version)
        builds.update(its_builds)  # a later torch's table wins for a CUDA both list
        runs.update(its_runs)
    cudas = {torch: default_cuda(torch) for torch in _pinned()}
    out = {
        "made_by": "python -m tools.read_torch_builds TORCH_WHEEL... "
        f"({datetime.date.today().isoformat()})",
        "source": {
            "builds": f"PYTORCH_RELEASES_CODE_CC (x86_64) in {_INIT} of torch "
            + ", ".join(read_from),
            "runs_on": f"DEVICE_REQUIREMENT in {_INIT} of the same",
            "default_cuda": "the Requires-Dist of each torch release's Linux x86_64 wheel on "
            "PyPI (nvidia-cuda-runtime-cu12 / cuda-toolkit pin)",
        },
        "builds": dict(sorted(builds.items())),
        "runs_on": dict(sorted(runs.items(), key=lambda kv: int(kv[0]))),
        "default_cuda": cudas,
    }
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(f"{OUT}: {len(builds)} CUDA builds, {len(cudas)} torch releases")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
