"""doctor's answer when the machine's shared memory (``/dev/shm``) is too small for the engine's
processes: a container's default is 64 MB (Docker), and tensor parallelism passes tensors
between the GPUs' processes through it.

- NCCL creates a segment there for its SHM transport and proxy (``ncclOsShmOpen`` in
  ``src/os/linux.cc``: ``mkstemp`` of ``/dev/shm/nccl-XXXXXX``, then ``fallocate`` to the
  segment's size, then ``mmap``); a full ``/dev/shm`` fails the ``fallocate`` with "Error:
  failed to extend /dev/shm/nccl-... to N bytes", NCCL returns ``ncclSystemError`` and torch
  says "NCCL error: unhandled system error". Read from NCCL's source at 5067397c
  (snapshots/engines/nccl-shm.txt).
- A process that touches a page of a shared mapping ``/dev/shm`` cannot back gets SIGBUS:
  Python's fault handler prints "Fatal Python error: Bus error", torch's worker "Unexpected bus
  error encountered in worker. This might be caused by insufficient shared memory (shm)."
"""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix, LogContext, Rule

# NCCL's own warnings from ncclOsShmOpen (src/os/linux.cc), after its file:line prefix.
NCCL_SHM = re.compile(
    r"NCCL WARN Error: failed to (?:extend|create shared memory file) (/dev/shm/nccl-\w+)|"
    r"NCCL WARN Error while creating shared memory segment (/dev/shm/nccl-\w+)"
)
BUS_ERROR = re.compile(r"Fatal Python error: Bus error|Unexpected bus error encountered in worker")


def _more_shm(note: str) -> list[Fix]:
    return [
        Fix(
            "advice",
            "give the container more shared memory: docker run --ipc=host (or --shm-size=16g); "
            "in Kubernetes an emptyDir with medium: Memory mounted at /dev/shm",
            note=note,
        ),
    ]


def nccl_shm(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """NCCL could not make its shared-memory segment in /dev/shm."""
    segment = m.group(1) or m.group(2)
    return (
        f"NCCL could not make its shared-memory segment ({segment}): /dev/shm is full or too "
        "small (a container's default is 64 MB), so the GPUs' communicator did not initialise",
        [
            *_more_shm("df -h /dev/shm inside the container shows its size"),
            Fix(
                "env",
                "NCCL_SHM_DISABLE=1",
                note="NCCL then routes through P2P or the network instead of /dev/shm (slower "
                "between processes that would share it)",
            ),
        ],
    )


def bus_error(_m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """A process killed by SIGBUS: most often a shared mapping /dev/shm cannot back."""
    return (
        "a process was killed by SIGBUS: it touched shared memory the machine could not back, "
        "most often /dev/shm too small in a container (64 MB by default) for the tensors the "
        "engine's processes pass through it",
        [
            *_more_shm("df -h /dev/shm shows its size"),
            Fix(
                "advice",
                "where /dev/shm is large: a weights file changed or truncated while mapped (a "
                "network file system, a download still running) also raises SIGBUS",
            ),
        ],
    )


SHARED_MEMORY_RULES: tuple[Rule, ...] = (
    ("shared-memory", NCCL_SHM, nccl_shm),
    ("shared-memory", BUS_ERROR, bus_error),
)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
SHARED_MEMORY_MARKERS = ("us error",)  # NCCL's warnings: "NCCL WARN " (machine.py)
