"""The engine under ``patcher run``: started in its own group, never outliving patcher, its
output passed through byte for byte, each signal reaching it once, a bounded stop.

The engine is a real process: a Python script that forks workers sharing its stdout, as vLLM's
API server, engine core and workers do, and notes each pid and each signal it gets in a file.
Whether a process survives is read from ``/proc``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from patcher.ops.supervising import LINE_BYTES, Tail
from tests.cli.test_run import KV, _checkpoint, _engine
from tests.conftest import ROOT, tree_bytes

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")

# The stand-in engine. MODE: "graceful" (SIGTERM/SIGINT/SIGHUP/SIGUSR1 stop the workers, then
# exit 0, as vLLM's shutdown does), "stubborn" (ignores SIGTERM), "leaky" (exits 3 at once and
# leaves its workers holding the pipe), "chatty" (prints lines until its stdout breaks).
ENGINE = """
notes = open(os.environ["ENGINE_NOTES"], "a", buffering=1)
def note(*words):
    notes.write(" ".join(map(str, words)) + "\\n")
note("engine", os.getpid())
mode = os.environ.get("MODE", "graceful")
workers = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        note("worker", os.getpid())
        while True:
            time.sleep(1)
    workers.append(pid)
def stop(signum, frame):
    note("signal", signum)
    if mode == "stubborn" and signum == signal.SIGTERM:
        return
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    os._exit(0)
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1):
    signal.signal(s, stop)
print("ready", flush=True)
if mode == "leaky":
    print("fatal: the engine gave up", flush=True)
    os._exit(3)
if mode == "chatty":
    n = 0
    while True:
        n += 1
        print("line", n, flush=True)
        time.sleep(0.01)
while True:
    time.sleep(1)
"""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _notes(path: Path) -> list[tuple[str, int]]:
    if not path.exists():
        return []
    return [(w[0], int(w[1])) for w in (line.split() for line in path.read_text().splitlines())]


def _start(
    tmp_path: Path, mode: str = "graceful", *extra: str, stdout: int = subprocess.PIPE
) -> tuple[subprocess.Popen[bytes], Path]:
    """``patcher run`` of the stand-in engine in a session of its own (as a terminal gives),
    returned once the engine says it is ready."""
    ckpt = _checkpoint(tmp_path, "c1_base")
    env = _engine(tmp_path, ENGINE)
    notes = tmp_path / "notes"
    env |= {"ENGINE_NOTES": str(notes), "MODE": mode}
    child = subprocess.Popen(
        [sys.executable, "-m", "patcher", "run", *extra, "--", "vllm", "serve", str(ckpt)]
        + ["--kv-cache-memory-bytes", KV],
        env=env,
        stdout=stdout,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while sum(1 for kind, _ in _notes(notes) if kind == "worker") < 2:
        assert child.poll() is None, child.stderr.read() if child.stderr else ""
        assert time.monotonic() < deadline, "the engine did not start"
        time.sleep(0.05)
    return child, notes


def _engine_pids(notes: Path) -> list[int]:
    return [pid for kind, pid in _notes(notes) if kind in ("engine", "worker")]


def _none_left(notes: Path, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while any(_alive(pid) for pid in _engine_pids(notes)):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _signals(notes: Path) -> list[int]:
    return [n for kind, n in _notes(notes) if kind == "signal"]


def _run_plain(
    env: dict[str, str], ckpt: Path, text: bool = False
) -> subprocess.CompletedProcess[Any]:
    """``patcher run`` of the stand-in engine to its end, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "patcher", "run", "--", "vllm", "serve", str(ckpt)]
        + ["--kv-cache-memory-bytes", KV],
        env=env,
        capture_output=True,
        text=text,
        cwd=ROOT,
        timeout=120,
    )


def test_output_passes_through_byte_for_byte(tmp_path: Path) -> None:
    """Progress bars' ``\\r``, CRLF and bytes that are not UTF-8 reach the user unchanged, the
    engine's stdout on stdout and its stderr on stderr."""
    ckpt = _checkpoint(tmp_path, "c1_base")
    said = b"10%\r50%\r100%\r\nloaded\r\n\xff\xfe not utf-8\nno newline at the end"
    warned = b"warning\r\n\x80\x81\n"
    env = _engine(
        tmp_path,
        f"sys.stdout.buffer.write({said!r}); sys.stdout.flush(); "
        f"sys.stderr.buffer.write({warned!r}); sys.stderr.flush()",
    )
    done = _run_plain(env, ckpt)
    assert done.returncode == 0, done.stderr
    assert done.stdout == said
    assert done.stderr.endswith(warned)


@pytest.mark.parametrize("broken", ["missing", "not executable", "no shebang", "nul in profile"])
def test_an_engine_that_cannot_start_is_refused_before_anything_is_written(
    tmp_path: Path, broken: str
) -> None:
    """The example needs a transform for its target: a broken engine is found before the sync
    writes it, in one line, with no traceback."""
    ckpt = tmp_path / "kimi"
    subprocess.run(
        ["cp", "-r", str(ROOT / "snapshots" / "example" / "kimi-k2.5-nvfp4"), str(ckpt)], check=True
    )
    before = tree_bytes(ckpt)
    env = _engine(tmp_path, "print('started')", version=None)
    script = tmp_path / "bin" / "vllm"
    extra: list[str] = []
    if broken == "missing":
        script.unlink()
    elif broken == "not executable":
        script.chmod(0o644)
    elif broken == "no shebang":
        script.write_text("print('started')\n")
    else:
        profile = tmp_path / "p.toml"
        profile.write_text(
            'engine = "vllm==0.16.0"\ngpu = "rtx-pro-6000"\ntensor_parallel = 8\n'
            'flags = ["--served-model-name", "ki\\u0000mi"]\n'
        )
        extra = ["--profile", str(profile)]
    done = subprocess.run(
        [sys.executable, "-m", "patcher", "run"]
        + (extra or ["--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000"])
        + ["--", "vllm", "serve", str(ckpt), "--tensor-parallel-size", "8"],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    wanted = {
        "missing": "vllm: not found on PATH",
        "not executable": "not executable",
        "no shebang": "not a program",
        "nul in profile": "holds a NUL byte",
    }[broken]
    assert wanted in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.count("error:") == 1 and "started" not in done.stdout
    assert tree_bytes(ckpt) == before and not (ckpt / ".patcher" / "journal.json").exists()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1])
def test_a_signal_to_patchers_group_reaches_the_engine_once(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """Ctrl-C in a terminal, ``kill -TERM -PGID``, an ssh hang-up: patcher's whole group is
    signalled, the engine gets the signal once (vLLM takes a second Ctrl-C as "quit now"), and
    nothing of the engine is left."""
    child, notes = _start(tmp_path)
    os.killpg(child.pid, signum)
    child.communicate(timeout=60)
    assert _signals(notes) == [signum]
    assert child.returncode == 0
    assert _none_left(notes)


def test_a_killed_patcher_leaves_no_engine(tmp_path: Path) -> None:
    """SIGKILL to patcher alone: the engine is told to stop (SIGTERM, its graceful shutdown
    that stops its workers) and nothing is left with parent 1."""
    child, notes = _start(tmp_path)
    child.kill()
    child.wait(timeout=30)
    assert _none_left(notes)
    assert _signals(notes) == [signal.SIGTERM]


def test_an_engine_that_ignores_sigterm_is_killed_after_the_stop_timeout(tmp_path: Path) -> None:
    child, notes = _start(tmp_path, "stubborn", "--stop-timeout", "1")
    began = time.monotonic()
    child.send_signal(signal.SIGTERM)
    child.communicate(timeout=60)
    assert time.monotonic() - began < 15
    assert child.returncode == 128 + signal.SIGKILL
    assert _none_left(notes, within=1)


def test_patcher_returns_when_the_engine_exits_though_a_worker_holds_the_pipe(
    tmp_path: Path,
) -> None:
    """The engine exits 3; its workers keep its stdout open: patcher drains for a bounded time,
    returns the engine's code and leaves no worker behind."""
    ckpt = _checkpoint(tmp_path, "c1_base")
    env = _engine(tmp_path, ENGINE) | {"ENGINE_NOTES": str(tmp_path / "notes"), "MODE": "leaky"}
    began = time.monotonic()
    done = _run_plain(env, ckpt, text=True)
    assert done.returncode == 3 and "fatal: the engine gave up" in done.stdout
    assert time.monotonic() - began < 30
    assert _none_left(tmp_path / "notes", within=1)


def test_a_closed_stdout_closes_the_engines_and_leaves_nothing(tmp_path: Path) -> None:
    """``patcher run ... | head -2``: once head has gone, the engine meets the broken pipe it
    would have met alone, patcher says so on stderr and ends, and no engine runs on."""
    read_end, write_end = os.pipe()
    child, notes = _start(tmp_path, "chatty", stdout=write_end)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as head:
        assert head.readline() == b"ready\n"
        assert head.readline() == b"line 1\n"
    _, stderr = child.communicate(timeout=60)
    assert b"stdout was closed" in stderr
    assert child.returncode != 0
    assert _none_left(notes)


def test_the_tail_kept_for_doctor_is_bounded() -> None:
    """600 lines of 1 MiB (1.87 GB kept before): at most 16 MiB, each line cut at 8 KiB."""
    tail = Tail()
    line = b"x" * (1 << 20) + b"\n"
    for _ in range(600):
        tail.add(1, line)
    assert tail.size == sum(map(len, tail.kept)) <= tail.limit + len(line)
    text = tail.text()
    assert max(len(part) for part in text.split("\n")) == LINE_BYTES


def test_two_streams_never_splice_a_line() -> None:
    tail = Tail(limit=1 << 20)
    tail.add(1, b"INFO loading wei")
    tail.add(2, b"ValueError: no backend\n")
    tail.add(1, b"ghts\n")
    assert tail.text().split("\n")[:2] == ["ValueError: no backend", "INFO loading weights"]
