"""Record a real terminal session with tmux and render it as docs/terminal.svg.

    python docs/record_terminal.py      # needs tmux, and patcher installed next to this Python

It types commands into a tmux pane (TERM=xterm-256color, bash with patcher's completion
loaded), captures the pane with its colours (``capture-pane -e``), and draws that capture with
rich (a dependency of typer). Shown: a coloured dry-run diff, the lock-wait line while another
process holds the checkpoint's lock, and tab completion of a transform name.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.text import Text

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SESSION = "patcher-demo"


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def type_line(keys: str, wait: float, enter: bool = True) -> None:
    tmux("send-keys", "-t", SESSION, "-l", keys)
    if enter:
        tmux("send-keys", "-t", SESSION, "Enter")
    time.sleep(wait)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="patcher-demo-"))
    shutil.copytree(ROOT / "snapshots" / "example" / "kimi-k2.5-nvfp4", work / "kimi")
    rc = work / "bashrc"
    rc.write_text(
        f'export PATH="{BIN}:$PATH" PS1="$ " TERM=xterm-256color\n'
        'eval "$(patcher --show-completion bash)"\n'
        f"cd {work}\nset +m\n"
    )
    holder = work / "hold-lock"  # another process holding the checkpoint's lock for a while
    holder.write_text(
        "#!/usr/bin/env python3\n"
        "import fcntl, os, sys, time\n"
        "fd = os.open(sys.argv[1] + '/.patcher/lock', os.O_RDWR | os.O_CREAT)\n"
        "os.write(fd, b'pid 4242: patcher sync')\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "time.sleep(float(sys.argv[2]))\n"
    )
    holder.chmod(0o755)
    subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
    tmux("new-session", "-d", "-s", SESSION, "-x", "104", "-y", "60", f"bash --rcfile {rc} -i")
    time.sleep(1.0)
    type_line("clear", 0.5)
    type_line("patcher apply kimi set-context-length --set length=131072 --dry-run", 2.5)
    type_line("mkdir -p kimi/.patcher; ./hold-lock kimi 3.5 &", 0.6)
    type_line("patcher apply kimi strip-fp8-kv-cache", 6.0)
    type_line("patcher apply kimi se", 0.2, enter=False)
    for _ in range(3):  # "se" -> "set-", then the list of set-* transforms
        tmux("send-keys", "-t", SESSION, "Tab")
        time.sleep(1.5)
    capture = tmux("capture-pane", "-t", SESSION, "-e", "-p", "-S", "-")
    tmux("kill-session", "-t", SESSION)
    lines = capture.rstrip("\n").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    console = Console(
        record=True, width=104, force_terminal=True, color_system="truecolor", file=io.StringIO()
    )
    console.print(Text.from_ansi("\n".join(lines)))
    out = ROOT / "docs" / "terminal.svg"
    console.save_svg(str(out), title="patcher: colour, the lock wait, completion")
    (ROOT / "docs" / "terminal.ansi").write_text("\n".join(lines) + "\n")  # the raw capture
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
