"""The engine as patcher's child: started in its own process group, never outliving patcher,
its output passed through byte for byte, each signal delivered to it once.

What a supervisor owes the engine and the user, and why each piece is here:

- **Its own process group.** A terminal's Ctrl-C (and ``kill -TERM -PGID``) reaches patcher's
  group only; patcher forwards the signal to the engine's group once. Had the engine shared
  patcher's group it would get the signal twice, and vLLM takes a second Ctrl-C as "quit
  now", skipping its graceful shutdown.
- **It cannot outlive patcher.** ``PR_SET_PDEATHSIG`` gives the engine SIGTERM (its graceful
  shutdown, which stops its own workers) if patcher dies by SIGKILL; on every other exit of
  patcher the group is stopped: SIGTERM, then SIGKILL after the grace period.
- **A bounded stop.** After SIGTERM, SIGINT or SIGHUP, patcher waits ``stop_timeout`` seconds
  for the engine, then kills its group. When the engine exits, its output is drained for at
  most ``DRAIN_TIMEOUT`` seconds: a worker that still holds the pipe does not hold patcher.
- **Output exactly.** stdout to stdout and stderr to stderr, as bytes: ``\\r`` progress bars,
  CRLF and bytes that are not UTF-8 pass unchanged. When patcher's stdout is closed (``| head``),
  the engine's stdout pipe is closed too, so the engine sees what it would have seen alone.
- **A bounded tail for doctor**: the last ``TAIL_BYTES`` of output, lines cut at ``LINE_BYTES``.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import errno
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from patcher.errors import TargetError

TAIL_BYTES = 16 * 1024 * 1024
LINE_BYTES = 8 * 1024
DRAIN_TIMEOUT = 2.0
STOP_TIMEOUT = 30.0
CHUNK = 1 << 16
# Signals the engine, in its own group, could not have received: forwarded once each.
FORWARDED = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)
STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# What the engines print once they serve (every file read): uvicorn under vLLM, and SGLang.
READY_MARKERS = (b"Application startup complete", b"The server is fired up and ready to roll")
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True, slots=True)
class Ended:
    """How the engine ended: the exit code to give (the engine's; 128+N for a signal N),
    whether a signal patcher forwarded stopped it, and the tail of what it printed (made
    text only when asked: a failure)."""

    code: int
    signalled: bool
    tail: Tail


class Tail:
    """The last ``limit`` bytes of complete lines, from any number of streams; a stream's
    unfinished line waits for its newline (so two streams never splice mid-line)."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        self.limit = limit
        self.kept: collections.deque[bytes] = collections.deque()
        self.size = 0
        self.pending: dict[int, bytearray] = {}

    def add(self, stream: int, chunk: bytes) -> None:
        """Take a chunk read from ``stream``."""
        pending = self.pending.setdefault(stream, bytearray())
        end = chunk.rfind(b"\n")
        if end < 0:
            pending += chunk[: max(0, LINE_BYTES - len(pending))]
            return
        whole = bytes(pending) + chunk[: end + 1]
        pending[:] = chunk[end + 1 : end + 1 + LINE_BYTES]
        self.kept.append(whole)
        self.size += len(whole)
        while self.size - len(self.kept[0]) >= self.limit:
            self.size -= len(self.kept.popleft())

    def text(self) -> str:
        """The tail as text, each line cut at ``LINE_BYTES``, unfinished lines last."""
        whole = b"".join([*self.kept, *(bytes(p) + b"\n" for p in self.pending.values() if p)])
        text = whole[-self.limit :].decode("utf-8", "replace")
        return "\n".join(line[:LINE_BYTES] for line in text.split("\n"))


def refuse_nul(words: Sequence[str], where: str) -> None:
    """Refuse a word holding a NUL byte (no program can be given one), naming it."""
    for word in words:
        if "\0" in word:
            raise TargetError(
                f"{where}: {word.split(chr(0))[0][:40]!r}... holds a NUL byte",
                hint="remove it from the command or the profile's flags",
            )


def check_runnable(argv: Sequence[str]) -> None:
    """Refuse, in one line, an engine command that cannot be started: the program not found,
    not executable, a script without ``#!``, or an argument holding a NUL byte. Run before
    anything is written."""
    refuse_nul(argv, "the engine command")
    program = argv[0]
    path = _which(program)
    if path is None:
        raise TargetError(
            f"{program}: not found on PATH",
            hint="install the engine, or activate its environment (e.g. source VENV/bin/activate)",
        )
    if not os.access(path, os.X_OK):
        raise TargetError(f"{path}: not executable", hint=f"chmod +x {path}")
    try:
        with Path(path).open("rb") as program_file:
            head = program_file.read(4)
    except OSError as exc:
        raise TargetError(
            f"{path}: cannot be read ({exc.strerror})", hint="check the engine"
        ) from None
    if not head.startswith((b"#!", b"\x7fELF")):
        raise TargetError(
            f"{path}: not a program (no '#!' line and not a binary)",
            hint="reinstall the engine (pip install --force-reinstall vllm)",
        )


def _which(program: str) -> str | None:
    if os.sep in program:
        return program if Path(program).is_file() else None
    for folder in os.environ.get("PATH", os.defpath).split(os.pathsep):
        candidate = Path(folder or ".") / program
        if candidate.is_file():
            return str(candidate)
    return None


def _die_with_parent(parent: int) -> Callable[[], None]:
    """The child's set-up before exec: SIGTERM when patcher dies (Linux), and not started at
    all when patcher is already gone."""

    def before_exec() -> None:
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return before_exec


def supervise(
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    stop_timeout: float = STOP_TIMEOUT,
    stdout_fd: int = 1,
    stderr_fd: int = 2,
    on_closed: Callable[[str], None] | None = None,
    on_ready: Callable[[], None] | None = None,
    ready_timeout: float = 0.0,
) -> Ended:
    """Start ``argv`` and supervise it to its end (module docstring); the engine's exit code,
    whether patcher's forwarded signal stopped it, and the tail of its output. ``on_ready`` is
    called once, when the engine says it serves (``READY_MARKERS``), exits, or
    ``ready_timeout`` seconds have passed: ``run`` lets writers back in then."""
    received: list[int] = []
    child: subprocess.Popen[bytes] | None = None

    def forward(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)
        if child is not None:
            _signal_group(child.pid, signum)

    previous = {s: signal.signal(s, forward) for s in FORWARDED}
    try:
        try:
            child = subprocess.Popen(  # noqa: S603 - the user's own engine command
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                process_group=0,
                preexec_fn=_die_with_parent(os.getpid()),  # noqa: PLW1509
            )
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            said = getattr(exc, "strerror", None) or str(exc)
            raise TargetError(
                f"cannot start {argv[0]} ({said})", hint="check that the engine is installed"
            ) from None
        for signum in received:
            _signal_group(child.pid, signum)
        tail = Tail()
        ready = _Ready(on_ready, ready_timeout)
        try:
            _pump(child, tail, received, stop_timeout, (stdout_fd, stderr_fd), on_closed, ready)
        finally:
            ready.fire()
            _stop_group(child, stop_timeout if child.poll() is None else 0.0)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    code = child.returncode
    stopped = any(s in STOPPING for s in received)
    return Ended(code if code >= 0 else 128 - code, stopped, tail)


class _Ready:
    """Watches the output for the engine's "serving" line; calls back once."""

    def __init__(self, callback: Callable[[], None] | None, timeout: float) -> None:
        self.callback = callback
        self.deadline = time.monotonic() + timeout
        self.seen = b""

    def watch(self, chunk: bytes) -> None:
        if self.callback is None:
            return
        window = self.seen + chunk
        if any(marker in window for marker in READY_MARKERS) or time.monotonic() > self.deadline:
            self.fire()
        self.seen = window[-64:]

    def fire(self) -> None:
        callback, self.callback = self.callback, None
        if callback is not None:
            callback()


def _pump(
    child: subprocess.Popen[bytes],
    tail: Tail,
    received: list[int],
    stop_timeout: float,
    targets: tuple[int, int],
    on_closed: Callable[[str], None] | None,
    ready: _Ready,
) -> None:
    """Pass the engine's output through until both pipes close, or the engine has exited and
    the drain time is over, or a stop signal's grace period is over."""
    assert child.stdout is not None and child.stderr is not None
    selector = selectors.DefaultSelector()
    out_of: dict[int, int] = {}
    for pipe, target in zip((child.stdout, child.stderr), targets, strict=True):
        os.set_blocking(pipe.fileno(), False)
        selector.register(pipe.fileno(), selectors.EVENT_READ)
        out_of[pipe.fileno()] = target
    exited_at: float | None = None
    stop_asked: float | None = None
    try:
        while selector.get_map():
            now = time.monotonic()
            if stop_asked is None and any(s in STOPPING for s in received):
                stop_asked = now
            if exited_at is None and child.poll() is not None:
                exited_at = now
                ready.fire()
            if now > ready.deadline:
                ready.fire()
            if exited_at is not None and now - exited_at >= DRAIN_TIMEOUT:
                return
            if stop_asked is not None and exited_at is None and now - stop_asked >= stop_timeout:
                _signal_group(child.pid, signal.SIGKILL)
                child.wait()
                exited_at = time.monotonic()
            for key, _ in selector.select(timeout=0.1):
                source = key.fd
                try:
                    chunk = os.read(source, CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(source)
                    continue
                tail.add(source, chunk)
                ready.watch(chunk)
                if not _write_all(out_of[source], chunk):
                    # Our reader is gone (``| head``): close the engine's pipe as well, so it
                    # meets the broken pipe it would have met alone.
                    selector.unregister(source)
                    os.close(source)
                    if on_closed is not None:
                        on_closed("stdout" if out_of[source] == targets[0] else "stderr")
    finally:
        selector.close()


def _write_all(fd: int, data: bytes) -> bool:
    """Write all of ``data`` to ``fd``; False when the reader has gone (EPIPE)."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            time.sleep(0.001)
        except OSError as exc:
            if exc.errno in (errno.EPIPE, errno.EBADF):
                return False
            raise
    return True


def _signal_group(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


def _stop_group(child: subprocess.Popen[bytes], grace: float) -> None:
    """Leave nothing of the engine behind: SIGTERM to its group while the engine runs, SIGKILL
    after ``grace`` seconds, and SIGKILL to what is left of the group once it has exited."""
    if child.poll() is None:
        _signal_group(child.pid, signal.SIGTERM)
        try:
            child.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    _signal_group(child.pid, signal.SIGKILL)
    child.wait()
    for pipe in (child.stdout, child.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
