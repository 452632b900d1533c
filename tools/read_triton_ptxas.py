"""The GPU architectures the ptxas each Triton release bundles accepts, read by running it: each
wheel's ``ptxas`` (and ``ptxas-blackwell``, which Triton 3.3 and 3.6 on run for an arch of 100
and above) is extracted and asked ``--version`` (its CUDA release) and ``--help`` (the values
``--gpu-name`` takes). Triton compiles every kernel with it; an arch it lacks fails with
"ptxas fatal : Value 'sm_121a' is not defined for option 'gpu-name'" (patcher/advice/
ptxas_archs.py names the Triton releases and CUDA releases whose ptxas accepts it).

Recorded in ``patcher/advice/triton-ptxas.json``: per Triton release, per binary, its CUDA
release and the values it accepts, and for ptxas-blackwell the arch from which the release's
``get_ptxas`` runs it. The ptxas binaries are x86-64 Linux programs: run it there.

Usage: python -m tools.read_triton_ptxas TRITON_WHEEL...  (pip download --no-deps triton==X)
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from patcher.advice.catalogue import version_key

TARGET = Path(__file__).resolve().parent.parent / "patcher" / "advice" / "triton-ptxas.json"
_BINARY = re.compile(r"triton/(?:backends/nvidia|third_party/cuda)/bin/(ptxas(?:-blackwell)?)")


def _run(path: Path, flag: str) -> str:
    return subprocess.run([str(path), flag], capture_output=True, text=True, check=False).stdout


def read_wheel(wheel: Path) -> dict[str, dict[str, Any]]:
    """Each ptxas the wheel bundles: its CUDA release and the --gpu-name values it accepts."""
    found: dict[str, dict[str, Any]] = {}
    with zipfile.ZipFile(wheel) as archive, tempfile.TemporaryDirectory() as scratch:
        for name in archive.namelist():
            binary = _BINARY.fullmatch(name)
            if binary is None:
                continue
            path = Path(scratch) / binary.group(1)
            path.write_bytes(archive.read(name))
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
            release = re.search(r"release (\d+\.\d+)", _run(path, "--version"))
            allowed = re.search(
                r"Allowed values for this option:(.*?)\.\s", _run(path, "--help"), re.S
            )
            if release is None or allowed is None:
                raise RuntimeError(f"{wheel.name}: {binary.group(1)} did not say its release")
            archs = sorted(set(re.findall(r"sm_\w+", allowed.group(1))), key=_arch_key)
            found[binary.group(1)] = {"cuda": release.group(1), "accepts": archs}
        if "ptxas-blackwell" in found:
            found["ptxas-blackwell"]["from_arch"] = _blackwell_from(archive)
    if not found:
        raise RuntimeError(f"{wheel.name}: no ptxas in it")
    return found


def _blackwell_from(archive: zipfile.ZipFile) -> int:
    """The arch from which the release's compiler runs ptxas-blackwell (``get_ptxas`` in
    backends/nvidia/compiler.py: ``arch >= 100``, or ``if arch < 90: return ...ptxas``)."""
    source = archive.read("triton/backends/nvidia/compiler.py").decode()
    body = source[source.index("def get_ptxas(") :].split("\ndef ", 1)[0]
    bound = re.search(r"arch\s*(?:>=|<)\s*(\d+)", body)
    if bound is None:
        raise RuntimeError("get_ptxas names no arch bound")
    return int(bound.group(1))


def _arch_key(arch: str) -> tuple[int, str]:
    digits = re.match(r"sm_(\d+)", arch)
    return (int(digits.group(1)) if digits else 0, arch)


def record(wheels: list[Path]) -> Path:
    """Read each wheel into triton-ptxas.json; the releases read before are kept."""
    old: dict[str, Any] = json.loads(TARGET.read_text()) if TARGET.exists() else {}
    releases: dict[str, Any] = old.get("releases", {})
    for wheel in wheels:
        releases[wheel.name.split("-")[1]] = read_wheel(wheel)
        print(f"{wheel.name}: read", file=sys.stderr)
    out = {
        "source": "Triton's wheels on PyPI, each bundled ptxas run with --version and --help "
        "by tools/read_triton_ptxas.py",
        "releases": dict(sorted(releases.items(), key=lambda kv: version_key(kv[0]))),
    }
    TARGET.write_text(json.dumps(out, indent=1) + "\n")
    return TARGET


def main(argv: list[str] | None = None) -> int:
    """Read the wheels given."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help") or os.uname().machine != "x86_64":
        print(__doc__)
        return 2
    target = record([Path(a) for a in args])
    print(f"{target}: {target.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
