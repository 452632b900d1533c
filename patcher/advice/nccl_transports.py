"""NCCL's own warning that one of its transports failed, and the switch that turns it off.

With ``NCCL_DEBUG=WARN`` or ``INFO`` NCCL prefixes a warning with its source file and line
(``transport/nvls.cc:287 NCCL WARN ...``): a CUDA call failing there (``CUCHECKGOTO``) or the
NVLink SHARP multicast bind failing returns ``ncclUnhandledCudaError`` and the communicator's
initialisation fails ("NCCL error: unhandled cuda error"), so the engine does not start. Each
transport has a parameter that takes it out, read from NCCL's source (NVIDIA/nccl at
5067397c): ``NCCL_PARAM(NvlsEnable, "NVLS_ENABLE", 2)`` in ``src/transport/nvls.cc`` (the
warning itself says "Disable NVLS (NCCL_NVLS_ENABLE=0)"), ``ShmDisable, "SHM_DISABLE"`` in
``shm.cc``, ``IbDisable, "IB_DISABLE"`` in ``net_ib/init.cc``, ``NCCL_P2P_DISABLE`` read by
``graph/paths.cc`` for ``p2p.cc``, and ``CollnetEnable, "COLLNET_ENABLE"`` in ``init.cc`` for
``coll_net.cc``. The transport off, NCCL routes through the others (slower where it was the
fast one); the machine's own fault (the Fabric Manager, NVSwitches, InfiniBand) stays to mend.

NCCL keeps its last warning as text (``src/debug.cc``: every WARN is printed into
``ncclLastError``), and torch appends it to its own words ("ncclUnhandledCudaError: Call to
CUDA function failed.\nLast error:\n..." in c10d's ``getNcclErrorDetailStr``), without the
file and line the WARN line shows. So the warning is read where it follows torch's error, and
a CUDA call that failed for want of peer access is the P2P transport's in any wording:
``p2p.cc`` maps a peer's buffer with ``cudaIpcOpenMemHandle`` or ``cuMemImportFromShareableHandle``
and ``cuMemSetAccess`` ("Cuda failure 'peer access ...'": ``CUDACHECK`` in checks.h, "Cuda
failure 217 '...'": ``CUCHECK`` in cudawrap.h), and within one process enables peer access
("failed to peer with device N(=busid): 217 ..."). snapshots/engines/nccl-last-error.txt.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import chain, islice

from patcher.advice.log_lines import PREFIX
from patcher.advice.log_rules import Fix, LogContext

# transport file -> (the switch that takes it out, what the transport is)
SWITCHES: dict[str, tuple[str, str]] = {
    "nvls": ("NCCL_NVLS_ENABLE=0", "NVLink SHARP (NVSwitch multicast)"),
    "shm": ("NCCL_SHM_DISABLE=1", "shared memory between the processes (/dev/shm)"),
    "p2p": ("NCCL_P2P_DISABLE=1", "peer-to-peer copies between the GPUs"),
    "net_ib": ("NCCL_IB_DISABLE=1", "InfiniBand/RoCE"),
    "coll_net": ("NCCL_COLLNET_ENABLE=0", "in-network reductions (CollNet/SHARP)"),
}
FAILED = re.compile(
    r"transport/(nvls|shm|p2p|net_ib|coll_net)[\w/]*\.cc:\d+ NCCL WARN "
    r"(?:Cuda failure|Call to \w+ failed|Failed to bind)"
)


def transport_failed(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """A transport's CUDA call or bind failing inside NCCL: its switch off."""
    switch, what = SWITCHES[m.group(1)]
    return (
        f"NCCL's {what} transport failed on this machine (its warning from transport/"
        f"{m.group(1)}), so the GPUs' communicator did not initialise and the engine stopped",
        [
            Fix(
                "env",
                switch,
                note="NCCL then routes through its other transports (NCCL_PARAM in its "
                "source); the machine's own fault stays to mend",
            ),
        ],
    )


# A CUDA call of NCCL's P2P transport refused for want of peer access between the GPUs.
PEER = re.compile(
    r"NCCL WARN (?:Cuda failure (?:\d+ )?'peer access is not supported between these two "
    r"devices'|failed to peer with device \d+)"
)


def peer_unsupported(_m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """Peer access refused between two GPUs: NCCL's P2P transport off."""
    switch, what = SWITCHES["p2p"]
    return (
        "NCCL's transport for "
        + what
        + " could not map another GPU's memory: CUDA says these GPUs cannot access each "
        "other's memory (no peer-to-peer between them over this PCIe topology, or a VM or "
        "IOMMU that keeps them apart), so the GPUs' communicator did not initialise",
        [
            Fix(
                "env",
                switch,
                note="NCCL then routes through shared memory or the network (graph/paths.cc "
                "reads NCCL_P2P_DISABLE); the GPUs' topology stays as it is",
            ),
        ],
    )


# torch's wrapper of an NCCL failure, which sends the reader to NCCL's own warning.
UNHANDLED = re.compile(r"NCCL error:? (?:in: \S+ )?unhandled (cuda|system) error")
# The lines after torch's NCCL error within which its "Last error:" and NCCL's words come.
LAST_ERROR_WITHIN = 6


def last_error(line: str, lines: Iterator[str]) -> str | None:
    """NCCL's last warning where torch appends it to its error ``line`` ("Last error:" and the
    warning, on a line or the next), from that line or the next few of ``lines`` (used up)."""
    after = False
    for raw in chain((line,), islice(lines, LAST_ERROR_WITHIN)):
        text = PREFIX.sub("", raw).strip()
        if after and text:
            return text
        if (at := text.find("Last error:")) >= 0:
            said = text[at + len("Last error:") :].strip()
            if said:
                return None if said == "Unknown NCCL Error" else said
            after = True
    return None


def unhandled(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """NCCL's failure as torch words it, without NCCL's own warning in the log: the warning
    names the transport (above), so the way is to have NCCL print it. A *system* error is a
    system call that failed (``ncclSystemError``); the one every communicator on one machine
    makes as it initialises is the shared-memory segment in /dev/shm (``ncclOsShmOpen``:
    mkstemp, fallocate, mmap; snapshots/engines/nccl-shm.txt), which a container's 64 MB
    /dev/shm refuses: named beside the step that tells."""
    fixes = [
        Fix(
            "advice",
            "run the same command with NCCL_DEBUG=INFO (or WARN): NCCL then prints the "
            "transport/FILE.cc line that failed, and doctor names the switch for it",
        )
    ]
    if m.group(1) == "system":
        fixes.append(
            Fix(
                "advice",
                "in a container, more shared memory (docker run --ipc=host, or --shm-size=16g): "
                "NCCL's segment in /dev/shm is the system call its set-up makes on every "
                "machine, and Docker's default /dev/shm is 64 MB",
            )
        )
    if ctx.nccl_last_error is not None:
        return (
            "NCCL failed to set up the GPUs' communicator; its last warning, which torch "
            f"quotes, names no transport doctor knows: {ctx.nccl_last_error}",
            fixes,
        )
    return (
        "NCCL failed to set up the GPUs' communicator; its own warning, which names the "
        "transport or call that failed, is not in the log",
        fixes,
    )
