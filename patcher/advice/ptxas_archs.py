"""doctor's answer when the ptxas Triton runs does not know the GPU: "ptxas fatal : Value
'sm_121a' is not defined for option 'gpu-name'". Triton compiles every kernel with the ptxas
its wheel bundles (``ptxas-blackwell`` from an arch its ``get_ptxas`` names, in 3.3 and 3.6 on),
unless ``TRITON_PTXAS_PATH`` (``TRITON_PTXAS_BLACKWELL_PATH`` for that one, Triton 3.6 on,
``knobs.py``) names another. Each release's ptxas, its CUDA release and the values it accepts
were read by running it (tools/read_triton_ptxas.py: ``triton-ptxas.json``)."""

from __future__ import annotations

import functools
import re
from typing import Any

from patcher.advice.catalogue import version_key
from patcher.advice.log_rules import Fix, LogContext, Rule
from patcher.advice.packaged import packaged

# ptxas's own words; a report may quote them without its "ptxas fatal :" prefix
UNKNOWN_ARCH = re.compile(
    r"(?:fatal\s*:\s*)?\bValue '(sm_(\d+)\w*)' is not defined for option 'gpu-name'"
)


@functools.cache
def reading() -> dict[str, dict[str, Any]]:
    """Each Triton release read: its ptxas binaries, their CUDA release and accepted values."""
    releases: dict[str, dict[str, Any]] = packaged("triton-ptxas.json")["releases"]
    return dict(sorted(releases.items(), key=lambda kv: version_key(kv[0])))


def runs(binaries: dict[str, Any], arch: int) -> dict[str, Any]:
    """The ptxas a release's compiler runs for ``arch``."""
    blackwell = binaries.get("ptxas-blackwell")
    if blackwell is not None and arch >= blackwell["from_arch"]:
        return dict(blackwell)
    return dict(binaries["ptxas"])


def unknown_arch(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """Triton's ptxas lacks the GPU's architecture."""
    value, arch = m.group(1), int(m.group(2))
    read = reading()
    triton = next((r for r, b in read.items() if value in runs(b, arch)["accepts"]), None)
    cudas = sorted(
        {
            b["cuda"]
            for binaries in read.values()
            for b in binaries.values()
            if value in b["accepts"]
        },
        key=version_key,
    )
    fixes: list[Fix] = []
    if cudas:
        variables = ["TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas"]
        if arch >= min(
            (b["ptxas-blackwell"]["from_arch"] for b in read.values() if "ptxas-blackwell" in b),
            default=arch + 1,
        ):
            variables.append("TRITON_PTXAS_BLACKWELL_PATH=/usr/local/cuda/bin/ptxas")
        fixes.append(
            Fix(
                "env",
                " ".join(variables),
                note=f"the ptxas of a CUDA {cudas[0]} or newer toolkit (the first read whose "
                f"ptxas accepts {value}; ptxas --help lists the values), where it is installed",
            )
        )
    if triton is not None:
        fixes.append(
            Fix(
                "dependency",
                f"pip install 'triton>={triton}'",
                note=f"the first Triton release read whose bundled ptxas takes {value}; the "
                "torch the engine pins requires its own Triton (pip check)",
            )
        )
    return (
        f"the ptxas Triton runs does not know {value}, this GPU's architecture: it is older "
        "than the GPU",
        fixes,
    )


PTXAS_RULES: tuple[Rule, ...] = (("ptxas-arch", UNKNOWN_ARCH, unknown_arch),)
PTXAS_MARKERS = ("is not defined for option 'gpu-name'",)
