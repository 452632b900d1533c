"""The command line the per-engine wheel readers share: ``python -m tools.read_X ENGINE
WHEEL...`` reads each wheel into the engine's file and prints the file and its size."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path


def run(
    doc: str | None,
    record: Callable[[str, list[Path]], Path],
    engines: Iterable[str],
    argv: list[str] | None = None,
) -> int:
    """Read the wheels given (``argv``, else the process's) into ``record``'s file for the
    engine named first; the usage (``doc``) and 2 where the engine is not one of ``engines``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2 or args[0] not in tuple(engines):
        print(doc)
        return 2
    target = record(args[0], [Path(a) for a in args[1:]])
    print(f"{target}: {target.stat().st_size} bytes")
    return 0
