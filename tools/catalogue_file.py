"""Writing a catalogue file of ``patcher/advice`` (``errors-ENGINE.json``): the one layout every
reader that records into it keeps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# the folder of the catalogue files, inside the package
CATALOGUE = Path(__file__).resolve().parents[1] / "patcher" / "advice"


def write_catalogue(target: Path, catalogue: dict[str, Any]) -> None:
    """Write a catalogue file: its head on one line, then one template a line (the diff of a
    reading shows the templates it added or dropped)."""
    head = {k: v for k, v in catalogue.items() if k != "templates"}
    lines = [
        json.dumps(t, ensure_ascii=False, separators=(",", ":")) for t in catalogue["templates"]
    ]
    target.write_text(
        json.dumps(head, ensure_ascii=False)[:-1]
        + ', "templates": [\n'
        + ",\n".join(lines)
        + "\n]}\n"
    )
