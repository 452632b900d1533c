"""Record the KV dtypes each dense MLA attention backend of vLLM takes, per release, from the
wheels' own source (no vLLM import): ``supported_kv_cache_dtypes`` of each backend class in
``vllm/v1/attention/backends/mla/``.

    pip download --no-deps vllm==X.Y.Z -d WHEELS    # per release
    python tools/record_mla_backends.py WHEELS/vllm-*.whl [X.Y.Z=VENV/lib/python3.11/site-packages]

Writes ``snapshots/engines/mla-backends-vllm.json``; ``tests/engines/test_mla_backends.py``
holds the engine model's backend table to it for every release read.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "snapshots" / "engines" / "mla-backends-vllm.json"
FILES = {
    "FLASHINFER_MLA": "flashinfer_mla.py",
    "CUTLASS_MLA": "cutlass_mla.py",
    "FLASH_ATTN_MLA": "flashattn_mla.py",
    "FLASHMLA": "flashmla.py",
    "TRITON_MLA": "triton_mla.py",
}
DTYPES = re.compile(r"supported_kv_cache_dtypes\s*:[^=]*=\s*(\[[^\]]*\])", re.S)


CAPABILITY = re.compile(r"def supports_compute_capability\([^)]*\)[^:]*:\s*return ([^\n]+)")


def _capability(source: str) -> list[int] | None:
    """The compute-capability majors the backend takes ([] for any), or None when its check
    is not one of the forms read (``major == N``, ``major in [..]``, ``True``)."""
    found = CAPABILITY.search(source)
    if found is None:
        return []  # the base class's: any capability
    expression = found.group(1).strip()
    if expression == "True":
        return []
    if (one := re.fullmatch(r"capability\.major == (\d+)", expression)) is not None:
        return [int(one.group(1))]
    if (many := re.fullmatch(r"capability\.major in [\[(]([\d, ]+)[\])]", expression)) is not None:
        return [int(n) for n in many.group(1).split(",") if n.strip()]
    return None


def _dtypes(source: str | None) -> dict[str, Any] | None:
    listed = None if source is None else DTYPES.search(source)
    if source is None or listed is None:
        return None
    return {
        "kv_cache_dtypes": list(ast.literal_eval(listed.group(1))),
        "capability_majors": _capability(source),
    }


def _backends(sources: dict[str, str]) -> dict[str, dict[str, Any] | None]:
    """Every dense MLA backend class in the files of ``v1/attention/backends/mla/`` (by the
    name its ``get_name()`` returns), beside the five the model has always known."""
    found: dict[str, dict[str, Any] | None] = {backend: None for backend in FILES}
    for file, text in sources.items():
        name = NAME.search(text)
        if name is None or "sparse" in file or any(p in file for p in NOT_CUDA):
            continue
        found[name.group(1)] = _dtypes(text)
    return found


# Backends of other platforms (ROCm, CPU, XPU), not chosen on an NVIDIA GPU.
NOT_CUDA = ("rocm", "aiter", "cpu", "amx", "xpu")
NAME = re.compile(r'def get_name\(\)[^:]*:\s*return "([A-Z0-9_]+_MLA|FLASHMLA)"')


def read(wheel: Path) -> tuple[str, dict[str, dict[str, Any] | None]]:
    """A wheel (vllm-X.Y.Z-...whl), or VERSION=SITE_PACKAGES for an installed release."""
    if "=" in str(wheel):
        version, _, folder = str(wheel).partition("=")
        base = Path(folder) / "vllm" / "v1" / "attention" / "backends" / "mla"
        files = sorted(base.glob("*.py")) if base.is_dir() else []
        return version, _backends({f.name: f.read_text() for f in files})
    found = re.match(r"vllm-(\d+\.\d+\.\d+)", wheel.name)
    assert found is not None, wheel
    prefix = "vllm/v1/attention/backends/mla/"
    with zipfile.ZipFile(wheel) as archive:
        sources = {
            name[len(prefix) :]: archive.read(name).decode()
            for name in archive.namelist()
            if name.startswith(prefix) and "/" not in name[len(prefix) :] and name.endswith(".py")
        }
    return found.group(1), _backends(sources)


def main() -> int:
    recorded = json.loads(OUT.read_text())["releases"] if OUT.exists() else {}
    for wheel in map(Path, sys.argv[1:]):
        version, found = read(wheel)
        if all(value is None for value in found.values()):
            print(version, "declares no supported_kv_cache_dtypes (before 0.12): not recorded")
            continue
        recorded[version] = found
        print(version, {k: v for k, v in found.items()})
    OUT.write_text(
        json.dumps(
            {
                "made_by": "python tools/record_mla_backends.py WHEELS/vllm-*.whl (2026-12-02)",
                "releases": dict(
                    sorted(recorded.items(), key=lambda kv: tuple(map(int, kv[0].split("."))))
                ),
            },
            indent=1,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
