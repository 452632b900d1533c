"""``python -m patcher`` runs the CLI."""

from __future__ import annotations

from patcher.cli import main

main()
