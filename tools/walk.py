"""Follow a checkpoint through a command: ``python tools/walk.py [COMMAND ...]``.

Runs ``patcher COMMAND`` in this process on a copy of the bundled example (``apply
strip-fp8-kv-cache`` when none is given) and watches every call into a patcher function that
is handed the checkpoint (a ``Checkpoint`` among its arguments). It prints:

- rooms: the modules those calls are in;
- stays: the calls that enter another module than their caller's (a move between rooms);
- climbs: those that go up a layer (a lower layer calling back into a higher one), each named.

The layers are test_architecture's (leaves, text, store, transforms, engines, advice, ops,
cli, the faces). This is the measure of issue 41's "stays in a handful of rooms without
climbing back"; it changes nothing outside its temporary folder.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("text", "store", "transforms", "engines", "advice", "ops", "cli")
EXAMPLE = ROOT / "snapshots" / "example" / "kimi-k2.5-nvfp4"


def layer(module: str) -> int:
    """0 the leaves, 1 text ... 7 cli, 8 the faces (test_architecture's order)."""
    parts = module.split(".")
    if module in ("patcher", "patcher.api", "patcher.__main__"):
        return len(LAYERS) + 1
    return LAYERS.index(parts[1]) + 1 if len(parts) > 2 and parts[1] in LAYERS else 0


def module_of(frame: FrameType | None) -> str | None:
    """The patcher module a frame runs in, or None outside patcher."""
    name = None if frame is None else frame.f_globals.get("__name__")
    return name if isinstance(name, str) and name.split(".")[0] == "patcher" else None


def walk(argv: list[str]) -> dict[str, Any]:
    """Run ``patcher argv`` (``CKPT`` in it stands for the copy) and follow the checkpoint."""
    from patcher.cli.app import main
    from patcher.store.checkpoint import Checkpoint

    rooms: Counter[str] = Counter()
    climbs: list[str] = []
    stays = 0

    def watch(frame: FrameType, event: str, _arg: object) -> None:
        nonlocal stays
        if event != "call":
            return
        here = module_of(frame)
        if here is None:
            return
        code = frame.f_code
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        if not any(isinstance(frame.f_locals.get(n), Checkpoint) for n in names):
            return
        rooms[here] += 1
        caller = frame.f_back
        while caller is not None and module_of(caller) is None:
            caller = caller.f_back
        there = module_of(caller)
        if there is None or there == here:
            return
        stays += 1
        if layer(here) > layer(there):
            climbs.append(f"{there} -> {here}.{code.co_name}")

    with tempfile.TemporaryDirectory() as folder:
        ckpt = Path(folder) / "kimi"
        shutil.copytree(EXAMPLE, ckpt)
        args = [str(ckpt) if a == "CKPT" else a for a in argv]
        sys.argv = ["patcher", *args]
        sys.setprofile(watch)
        try:
            main()
        except SystemExit:
            pass
        finally:
            sys.setprofile(None)
    return {"rooms": dict(rooms), "stays": stays, "climbs": climbs}


def report(argv: list[str]) -> None:
    """Print the walk of ``patcher argv``."""
    found = walk(argv)
    rooms: dict[str, int] = found["rooms"]
    print(f"patcher {' '.join(argv)}", file=sys.stderr)
    print(
        f"  {len(rooms)} rooms, {found['stays']} stays, {len(found['climbs'])} climbs",
        file=sys.stderr,
    )
    for room, calls in sorted(rooms.items(), key=lambda kv: (layer(kv[0]), kv[0])):
        print(f"    {room}: {calls} calls", file=sys.stderr)
    for climb in found["climbs"]:
        print(f"    climbs: {climb}", file=sys.stderr)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    report(sys.argv[1:] or ["apply", "CKPT", "strip-fp8-kv-cache"])
