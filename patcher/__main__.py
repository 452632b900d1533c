"""The ``patcher`` command's entry point (and ``python -m patcher``).

A command is a short-lived process, and Python's cyclic garbage collector costs it time twice:
it sweeps the tens of thousands of objects the imports create, again and again while they are
being made, and once more at exit. So the imports run with the collector paused, everything
they made is then frozen out of its sweeps (``gc.freeze``: module contents live until exit
anyway), and the collector runs as usual for the command's own work. About 40-60 ms of a
200-300 ms command (see docs/benchmark.md). The library never touches the collector.
"""

from __future__ import annotations

import gc


def main() -> None:
    """Run the ``patcher`` command line."""
    gc.disable()
    from patcher.cli.app import main as run

    gc.freeze()
    gc.enable()
    try:
        run()
    finally:
        gc.freeze()  # the sweep at exit has nothing left to look at


if __name__ == "__main__":
    main()
