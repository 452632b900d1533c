"""Progress hooks: how a long wait is reported. The library never prints; the CLI sets these
(to stderr) and scripts may set their own. Kept import-free: the CLI sets it on every start."""

from __future__ import annotations

from collections.abc import Callable

# Called about once a second while another process holds the checkpoint's lock, with the
# holder ("pid 42: patcher apply") and the seconds waited so far.
wait_reporter: Callable[[str, float], None] | None = None
# Called once when a reported wait ends (the lock was acquired).
wait_done: Callable[[], None] | None = None
# Called before each upstream file is fetched, with the repository, the file and its place
# ("nvidia/Kimi-K2.5-NVFP4", "config.json", 1, 5); with total 0 once all are fetched.
fetch_reporter: Callable[[str, str, int, int], None] | None = None
# Called when the filesystem refuses file locks (NFS without its lock service says ENOLCK)
# and the command goes on without one, with the lock file and the reason.
unlocked_reporter: Callable[[str, str], None] | None = None
