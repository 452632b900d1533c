"""GPUs by name or compute capability, with the memory the driver reports."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from patcher.errors import TargetError


@dataclass(frozen=True, slots=True)
class Gpu:
    """A GPU model: its compute capability and total memory (GiB, as nvidia-smi reports)."""

    name: str
    capability: tuple[int, int]
    memory_gib: float | None

    @property
    def capability_text(self) -> str:
        """The compute capability as ``12.0`` (``cpu`` for the CPU)."""
        return "cpu" if self.is_cpu else f"{self.capability[0]}.{self.capability[1]}"

    @property
    def is_cpu(self) -> bool:
        """Whether this is the CPU backend (vLLM's CPU build), not a GPU."""
        return self.name == "cpu"


# vLLM's CPU build: no compute capability; its KV space is given (--kv-cache-memory), as the
# engine sizes it from the host's RAM otherwise.
CPU = Gpu("cpu", (0, 0), None)


# Memory: total MiB reported by nvidia-smi / 1024, rounded to 0.01 GiB.
GPUS: dict[str, Gpu] = {
    gpu.name: gpu
    for gpu in (
        Gpu("rtx-pro-6000", (12, 0), 95.59),
        Gpu("rtx-5090", (12, 0), 31.84),
        Gpu("rtx-5080", (12, 0), 15.92),
        Gpu("dgx-spark", (12, 1), 119.7),
        Gpu("b200", (10, 0), 179.06),
        Gpu("gb200", (10, 0), 184.0),
        Gpu("b300", (10, 3), 268.0),
        Gpu("h200", (9, 0), 140.4),
        Gpu("h100", (9, 0), 79.65),
        Gpu("h20", (9, 0), 95.58),
        Gpu("gh200", (9, 0), 94.5),
        Gpu("l40s", (8, 9), 44.99),
        Gpu("l4", (8, 9), 22.49),
        Gpu("rtx-4090", (8, 9), 23.99),
        Gpu("rtx-6000-ada", (8, 9), 47.99),
        Gpu("a100", (8, 0), 80.0),
        Gpu("a100-40gb", (8, 0), 40.0),
        Gpu("a10g", (8, 6), 22.49),
        Gpu("a10", (8, 6), 22.49),
        Gpu("rtx-3090", (8, 6), 24.0),
        Gpu("a6000", (8, 6), 47.99),
        Gpu("t4", (7, 5), 15.0),
        Gpu("v100", (7, 0), 32.0),
    )
}
ALIASES = {
    "rtx-pro-6000-blackwell": "rtx-pro-6000",
    "h100-80gb": "h100",
    "a100-80gb": "a100",
    "h200-141gb": "h200",
    "gb10": "dgx-spark",
}
_CAPABILITY = re.compile(r"(?:sm_?)?(\d{1,2})\.?(\d)")


def parse_gpu(text: str) -> Gpu:
    """A GPU from a name (``rtx-pro-6000``, ``h200``) or a capability (``12.0``, ``sm90``)."""
    key = text.strip().lower().replace(" ", "-").replace("_", "-")
    key = ALIASES.get(key, key)
    if key == "cpu":
        return CPU
    if key in GPUS:
        return GPUS[key]
    match = _CAPABILITY.fullmatch(key.replace("-", ""))
    if match and 3 <= int(match.group(1)) <= 13:
        return Gpu(
            f"sm{match.group(1)}{match.group(2)}", (int(match.group(1)), int(match.group(2))), None
        )
    close = difflib.get_close_matches(key, list(GPUS), n=1, cutoff=0.5)
    raise TargetError(
        f"unknown GPU {text!r}" + (f"; did you mean {close[0]!r}?" if close else ""),
        hint="give a compute capability such as --gpu 12.0, cpu, or one of: " + ", ".join(GPUS),
    )


# The driver's product names (nvidia-smi's ``name``), by the words that tell the model apart:
# "NVIDIA RTX PRO 6000 Blackwell Server Edition", "NVIDIA H100 80GB HBM3", "NVIDIA
# A100-SXM4-80GB", "NVIDIA H200 NVL", "NVIDIA GeForce RTX 5090", "Tesla T4". First match wins.
DRIVER_NAMES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), name)
    for pattern, name in (
        (r"\brtx pro 6000\b", "rtx-pro-6000"),
        (r"\brtx 6000 ada\b", "rtx-6000-ada"),
        (r"\brtx a6000\b", "a6000"),
        (r"\brtx 5090\b", "rtx-5090"),
        (r"\brtx 5080\b", "rtx-5080"),
        (r"\brtx 4090\b", "rtx-4090"),
        (r"\brtx 3090\b", "rtx-3090"),
        (r"\bgb10\b", "dgx-spark"),
        (r"\bgb200\b", "gb200"),
        (r"\bgh200\b", "gh200"),
        (r"\bb300\b", "b300"),
        (r"\bb200\b", "b200"),
        (r"\bh200\b", "h200"),
        (r"\bh100\b", "h100"),
        (r"\bh20\b", "h20"),
        (r"\ba100\b.*\b40gb\b", "a100-40gb"),
        (r"\ba100\b", "a100"),
        (r"\bl40s\b", "l40s"),
        (r"\bl4\b", "l4"),
        (r"\ba10g\b", "a10g"),
        (r"\ba10\b", "a10"),
        (r"\bt4\b", "t4"),
        (r"\bv100\b", "v100"),
    )
)


def gpu_from_driver(name: str, memory_mib: str, capability: str) -> Gpu:
    """The GPU nvidia-smi reports (``--query-gpu=name,memory.total,compute_cap
    --format=csv,noheader,nounits``): its memory and compute capability as the driver gives
    them; the name is only a label, recognised where the table knows the model (else
    ``smXY``). Raises :class:`TargetError` for a line it cannot read."""
    words = re.sub(r"[^a-z0-9]+", " ", name.lower())
    known = next((gpu for pattern, gpu in DRIVER_NAMES if pattern.search(words)), None)
    try:
        major, minor = (int(part) for part in capability.strip().split("."))
        memory = round(float(memory_mib) / 1024, 2) if memory_mib.strip() else None
    except ValueError:
        raise TargetError(
            f"cannot read nvidia-smi's line {name!r}, {memory_mib!r}, {capability!r}",
            hint="add --gpu NAME",
        ) from None
    label = known or f"sm{major}{minor}"
    return Gpu(label, (major, minor), memory)
