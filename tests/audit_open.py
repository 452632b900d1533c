"""Run the patcher CLI with an audit hook that counts the files it opens.

``python tests/audit_open.py ARGS...`` behaves like ``patcher ARGS...`` and finally writes
``SHARDS-OPENED:N CONFIGS-OPENED:M`` to stderr (weight shards vs config files opened).
Used by the tests and the benchmark to show that weights are never read.
"""

from __future__ import annotations

import sys
from typing import Any

opened: list[str] = []


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and args[0] is not None:
        opened.append(str(args[0]))


if __name__ == "__main__":
    sys.addaudithook(_hook)
    from patcher.cli.app import app

    try:
        app(sys.argv[1:], prog_name="patcher")
    finally:
        shards = sum(p.endswith(".safetensors") for p in opened)
        configs = sum(p.endswith("config.json") for p in opened)
        sys.stderr.write(f"SHARDS-OPENED:{shards} CONFIGS-OPENED:{configs}\n")
