"""Speed and memory of patcher, as whole processes: ``python tools/benchmark.py [--runs N]``.

1. One edit of a tokenizer.json-shaped file at 1 to 150 MB: ``patcher apply`` and ``patcher
   revert`` against ``jq`` making the same edit and writing the file, with peak memory.
   Then a 3-op transform against a 1-op one, and ``.patcher/`` after 10 stacked applies.
2. ``patcher status`` and ``patcher apply`` on a checkpoint holding 200 sparse 5 GB shards
   against the same checkpoint without shards, with an audit of every file opened.
3. ``patcher status`` against ``python -c "import typer"``.
4. Journal growth: the 20th and the 200th stacked ``patcher apply`` (each a whole process),
   and ``patcher revert --all`` of 200 entries against the 200 applies.
5. Where a small edit's time goes (``--only floor``, sizes below 8 MB): ``python -c pass``,
   ``import typer``, the library's apply and revert in a process without typer, the
   ``patcher`` command, and ``jq``.
6. ``patcher doctor`` on a 64 MB debug log whose root error is its last line (``--only doctor``).
7. ``patcher apply --dry-run``, ``diff``, ``diff --json`` and ``diff --upstream`` (against a
   local Hub) of one edit of a 15 MB tokenizer.json (``--only diff``).
8. ``patcher plan`` and ``patcher sync`` of the example for vLLM 0.16 on 8 RTX PRO 6000
   (``--only launch``): plan proves its actions by planning the sync in memory; sync plans once,
   except on a checkpoint patcher never wrote to.
9. ``patcher check --engine-python`` (``--only installed --engine-python VENV/bin/python``): the
   installed engine asked, cold (its own config code in its own interpreter) and cached.
10. ``patcher run`` (``--only run``): its own cost before the engine starts (an engine that
   exits at once, against that engine alone), and its throughput passing 1 GiB of engine
   output through to a pipe, against the engine writing to the pipe itself.

Runs are interleaved and the median is reported; peak RSS comes from ``os.wait4``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KIMI = ROOT / "snapshots" / "example" / "kimi-k2.5-nvfp4"
# The patcher installed next to this interpreter (``pip install .`` compiles its bytecode, as
# users get it); from the source tree only when it is not installed.
SCRIPT = Path(sys.executable).parent / "patcher"
INSTALLED = SCRIPT.exists()
# Bytecode is cached as on a user's machine: an editable install compiles nothing, and a
# PYTHONDONTWRITEBYTECODE=1 inherited from the shell would make every run compile patcher from
# source while typer's bytecode was compiled by pip (measured: 1.5x; 1.2x with it cached).
_USER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV = _USER_ENV if INSTALLED else {**_USER_ENV, "PYTHONPATH": str(ROOT)}
PATCHER = [str(SCRIPT)] if INSTALLED else [sys.executable, "-m", "patcher"]

AUDIT = str(ROOT / "tests" / "audit_open.py")  # counts the files a run opens


# The same patcher with its C scanner turned off (see patcher/text/jsontext.py).
PURE_ENV = {**ENV, "PATCHER_PURE_PYTHON": "1"}


def timed(
    command: list[str], env: dict[str, str] = ENV, ok: tuple[int, ...] = (0,)
) -> tuple[float, int, subprocess.CompletedProcess[bytes]]:
    """Wall seconds and peak RSS (KiB, from ``os.wait4``) of one process and its children
    (an exit code outside ``ok`` stops the benchmark)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        # Run outside the source tree, or a ``python -c`` would import patcher from it.
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=tempfile.gettempdir())
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(command, proc.returncode, out.read(), err.read())
    if done.returncode not in ok:
        raise SystemExit(f"failed: {' '.join(command)}\n{done.stderr.decode()}")
    return elapsed, usage.ru_maxrss, done


def make_tokenizer(path: Path, megabytes: float = 15.0) -> None:
    """A tokenizer.json-shaped file of about ``megabytes`` MB: a BPE vocab and merges, 2-space
    indent (300,000 tokens make about 15 MB)."""
    rng = random.Random(0)
    letters = "abcdefghijklmnopqrstuvwxyzĠĊ"
    count = max(1000, round(300_000 * megabytes / 15.0))
    vocab: dict[str, int] = {}
    while len(vocab) < count:
        token = "".join(rng.choice(letters) for _ in range(rng.randint(2, 10)))
        vocab.setdefault(token, len(vocab))
    tokens = list(vocab)
    merges = [f"{rng.choice(tokens)} {rng.choice(tokens)}" for _ in range(count)]
    data = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": f"<|reserved_{i}|>", "special": True} for i in range(256)
        ],
        "normalizer": None,
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "byte_fallback": False,
            "vocab": vocab,
            "merges": merges,
        },
    }
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")


def median_runs(
    runs: int, steps: list[tuple[str, Callable[[], tuple[float, int]]]]
) -> dict[str, tuple[float, int]]:
    """Interleave the steps ``runs`` times; median wall time and max RSS of each."""
    times: dict[str, list[float]] = {name: [] for name, _ in steps}
    rss: dict[str, int] = {name: 0 for name, _ in steps}
    for _ in range(runs):
        for name, step in steps:
            seconds, peak = step()
            times[name].append(seconds)
            rss[name] = max(rss[name], peak)
    return {name: (statistics.median(times[name]), rss[name]) for name in times}


SIZES_MB = (1.0, 5.0, 8.2, 15.0, 33.0, 60.0, 150.0)
ONE_OP = 'ops = [{ op = "replace", path = "/model/byte_fallback", value = true }]\n'
THREE_OPS = (
    "ops = [\n"
    '  { op = "replace", path = "/model/byte_fallback", value = true },\n'
    '  { op = "replace", path = "/model/unk_token", value = "<unk>" },\n'
    '  { op = "add", path = "/model/fuse_unk", value = true },\n'
    "]\n"
)


def _transform(work: Path, name: str, ops: str) -> Path:
    path = work / f"{name}.toml"
    path.write_text(
        f'name = "{name}"\nsummary = "s"\nwhy = "w"\nundo_when = "u"\n'
        f'[[edits]]\nfile = "tokenizer.json"\n{ops}'
    )
    return path


def _tokenizer_checkpoint(work: Path, megabytes: float) -> tuple[Path, int]:
    ckpt = work / f"tok-{megabytes:g}"
    ckpt.mkdir()
    shutil.copy(KIMI / "config.json", ckpt / "config.json")
    # Made in a child process so that this process stays small: a forked child starts with
    # its parent's pages, which would show in every later peak-RSS reading.
    subprocess.run(
        [
            sys.executable,
            __file__,
            "--make-tokenizer",
            str(ckpt / "tokenizer.json"),
            "--megabytes",
            str(megabytes),
        ],
        check=True,
    )
    return ckpt, (ckpt / "tokenizer.json").stat().st_size


IN_PROCESS = """
import sys, time
from patcher import api
start = time.perf_counter()
api.apply(sys.argv[1], sys.argv[2])
middle = time.perf_counter()
api.revert(sys.argv[1], last=True)
print(middle - start, time.perf_counter() - middle)
"""


def in_process(ckpt: Path, transform: Path, runs: int) -> tuple[float, float]:
    """Median seconds of one library apply and one revert, after the imports."""
    applies, reverts = [], []
    for _ in range(runs):
        done = timed([sys.executable, "-c", IN_PROCESS, str(ckpt), str(transform)])[2]
        apply_s, revert_s = (float(x) for x in done.stdout.split())
        applies.append(apply_s)
        reverts.append(revert_s)
    return statistics.median(applies), statistics.median(reverts)


def _tokenizer_and_jq_copy(work: Path, megabytes: float, tag: str) -> tuple[Path, int, Path]:
    """A tokenizer checkpoint of ``megabytes``, its size, and a copy of the file for jq."""
    ckpt, size = _tokenizer_checkpoint(work, megabytes)
    jq_file = work / f"{tag}-{megabytes:g}.json"
    shutil.copy(ckpt / "tokenizer.json", jq_file)
    return ckpt, size, jq_file


def _jq_edit(jq_file: Path) -> list[str]:
    """``jq`` making the benchmark's edit and writing the file, as a user would."""
    script = (
        f"jq '.model.byte_fallback = true' {jq_file} > {jq_file}.tmp && mv {jq_file}.tmp {jq_file}"
    )
    return ["sh", "-c", script]


def bench_large_file(work: Path, runs: int, sizes: tuple[float, ...]) -> list[str]:
    one_op = _transform(work, "byte-fallback", ONE_OP)
    jq = shutil.which("jq")
    lines = [
        f"One edit of a tokenizer.json-shaped file (median of {runs} interleaved runs; peak RSS "
        "is the largest of the runs):",
        "",
        "| file | patcher apply | patcher revert | jq edit + write | apply / jq | revert / jq "
        "| peak RSS apply / revert / jq | apply RSS / file | in process: apply / jq, "
        "revert / jq | apply without the C scanner / jq |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for megabytes in sizes:
        ckpt, size, jq_file = _tokenizer_and_jq_copy(work, megabytes, "jq")

        def apply(ckpt: Path = ckpt) -> tuple[float, int]:
            return timed([*PATCHER, "apply", str(ckpt), str(one_op)])[:2]

        def pure_cycle(ckpt: Path = ckpt) -> tuple[float, int]:
            seconds, peak = timed([*PATCHER, "apply", str(ckpt), str(one_op)], PURE_ENV)[:2]
            timed([*PATCHER, "revert", str(ckpt), "--last"])
            return seconds, peak

        def revert(ckpt: Path = ckpt) -> tuple[float, int]:
            return timed([*PATCHER, "revert", str(ckpt), "--last"])[:2]

        def jq_edit(jq_file: Path = jq_file) -> tuple[float, int]:
            return timed(_jq_edit(jq_file))[:2]

        steps = [("apply", apply), ("revert", revert), ("pure", pure_cycle)]
        if jq:
            steps.append(("jq", jq_edit))
        result = median_runs(runs, steps)
        (a, a_rss), (r, r_rss), (p, _) = result["apply"], result["revert"], result["pure"]
        j, j_rss = result.get("jq", (float("nan"), 0))
        lib_a, lib_r = in_process(ckpt, one_op, runs)
        lines.append(
            f"| {size / 1e6:.1f} MB | {a * 1000:.0f} ms | {r * 1000:.0f} ms | {j * 1000:.0f} ms "
            f"| {a / j:.2f}x | {r / j:.2f}x | {a_rss / 1024:.0f} / {r_rss / 1024:.0f} / "
            f"{j_rss / 1024:.0f} MiB | {a_rss * 1024 / size:.2f}x | {lib_a * 1000:.0f} ms "
            f"({lib_a / j:.2f}x), {lib_r * 1000:.0f} ms ({lib_r / j:.2f}x) "
            f"| {p * 1000:.0f} ms ({p / j:.2f}x) |"
        )
        shutil.rmtree(ckpt)
        jq_file.unlink()
    if not jq:
        lines.append("(jq is not installed: its columns are nan)")
    return lines


def bench_ops_and_storage(work: Path, runs: int) -> list[str]:
    """A 3-op transform against a 1-op one, reverting an entry under a later one (the inverse
    patch replayed on the bytes) against reverting the last, and ``.patcher/`` after 10
    stacked applies."""
    ckpt, size = _tokenizer_checkpoint(work, 15.0)
    one_op = _transform(work, "one-op", ONE_OP)
    three_ops = _transform(work, "three-ops", THREE_OPS)

    def cycle(transform: Path) -> Callable[[], tuple[float, int]]:
        def step() -> tuple[float, int]:
            result = timed([*PATCHER, "apply", str(ckpt), str(transform)])[:2]
            timed([*PATCHER, "revert", str(ckpt), "--last"])
            return result

        return step

    result = median_runs(runs, [("1 op", cycle(one_op)), ("3 ops", cycle(three_ops))])
    one, three = result["1 op"][0], result["3 ops"][0]
    later = _transform(
        work, "later", 'ops = [{ op = "replace", path = "/version", value = "2.0" }]\n'
    )

    def revert_under_later() -> tuple[float, int]:
        timed([*PATCHER, "apply", str(ckpt), str(one_op)])
        timed([*PATCHER, "apply", str(ckpt), str(later)])
        result = timed([*PATCHER, "revert", str(ckpt), "one-op"])[:2]
        timed([*PATCHER, "revert", str(ckpt), "--last"])
        return result

    def revert_last() -> tuple[float, int]:
        timed([*PATCHER, "apply", str(ckpt), str(one_op)])
        return timed([*PATCHER, "revert", str(ckpt), "--last"])[:2]

    reverts = median_runs(runs, [("under", revert_under_later), ("last", revert_last)])
    (under, under_rss), (last, last_rss) = reverts["under"], reverts["last"]
    timed([*PATCHER, "revert", str(ckpt), "--all"])
    shutil.rmtree(ckpt / ".patcher", ignore_errors=True)
    for index in range(10):
        stacked = _transform(
            work,
            f"stacked-{index}",
            f'ops = [{{ op = "set", path = "/model/dropout", value = {index + 1} }}]\n',
        )
        timed([*PATCHER, "apply", str(ckpt), str(stacked)])
    store = sum(p.stat().st_size for p in (ckpt / ".patcher").rglob("*") if p.is_file())
    return [
        f"Ops and storage on a {size / 1e6:.1f} MB tokenizer.json (median of {runs} runs):",
        "",
        "| measure | value |",
        "|---|---|",
        f"| apply, 1-op transform | {one * 1000:.0f} ms |",
        f"| apply, 3-op transform | {three * 1000:.0f} ms ({three / one:.2f}x) |",
        f"| revert the last entry | {last * 1000:.0f} ms, {last_rss / 1024:.0f} MiB |",
        f"| revert an entry under a later one | {under * 1000:.0f} ms, "
        f"{under_rss / 1024:.0f} MiB ({under_rss * 1024 / size:.2f}x the file) |",
        f"| .patcher/ after 10 stacked applies | {store / 1e6:.1f} MB "
        f"({store / size:.2f}x the file) |",
    ]


def bench_shards(work: Path, runs: int) -> list[str]:
    bare = work / "bare"
    sharded = work / "sharded"
    for ckpt in (bare, sharded):
        shutil.copytree(KIMI, ckpt)
    for index in range(200):
        with (sharded / f"model-{index + 1:05d}-of-00200.safetensors").open("wb") as handle:
            handle.truncate(5 * 1024**3)
    apparent = sum(p.stat().st_size for p in sharded.glob("*.safetensors")) / 1024**4

    def cycle(ckpt: Path) -> Callable[[], tuple[float, int]]:
        def step() -> tuple[float, int]:
            seconds, peak, done = timed(
                [sys.executable, AUDIT, "apply", str(ckpt), "strip-fp8-kv-cache"]
            )
            assert b"SHARDS-OPENED:0" in done.stderr, done.stderr
            timed([*PATCHER, "revert", str(ckpt), "--all"])
            return seconds, peak

        return step

    def status(ckpt: Path) -> Callable[[], tuple[float, int]]:
        def step() -> tuple[float, int]:
            seconds, peak, done = timed([sys.executable, AUDIT, "status", str(ckpt)])
            assert b"SHARDS-OPENED:0" in done.stderr, done.stderr
            return seconds, peak

        return step

    result = median_runs(
        runs,
        [
            ("apply, no shards", cycle(bare)),
            ("apply, 200 x 5 GB shards", cycle(sharded)),
            ("status, no shards", status(bare)),
            ("status, 200 x 5 GB shards", status(sharded)),
        ],
    )
    return _wall_and_rss(
        f"Shards next to the configs ({apparent:.2f} TiB apparent, sparse), strip-fp8-kv-cache "
        f"on the example checkpoint; every run audited: 0 shard files opened:",
        "process",
        result,
    )


def _wall_and_rss(
    title: str, column: str, result: dict[str, tuple[float, int]], prefix: str = ""
) -> list[str]:
    """A markdown table of median wall time and peak RSS per step."""
    lines = [title, "", f"| {column} | median wall | peak RSS |", "|---|---|---|"]
    for name, (seconds, peak) in result.items():
        lines.append(f"| {prefix}{name} | {seconds * 1000:.0f} ms | {peak / 1024:.0f} MiB |")
    return lines


def bench_startup(work: Path, runs: int) -> list[str]:
    ckpt = work / "startup"
    shutil.copytree(KIMI, ckpt)
    timed([*PATCHER, "apply", str(ckpt), "strip-fp8-kv-cache"])
    command = PATCHER
    result = median_runs(
        runs,
        [
            ("python -c 'import typer'", lambda: timed([sys.executable, "-c", "import typer"])[:2]),
            ("patcher status", lambda: timed([*command, "status", str(ckpt)])[:2]),
        ],
    )
    base = result["python -c 'import typer'"][0]
    ours = result["patcher status"][0]
    return [
        f"Start-up (median of {runs} interleaved runs):",
        "",
        "| process | median wall |",
        "|---|---|",
        f"| python -c 'import typer' | {base * 1000:.0f} ms |",
        f"| patcher status (journal with one entry) | {ours * 1000:.0f} ms |",
        "",
        f"ratio: {ours / base:.2f}x the bare typer import",
    ]


# The same library calls as ``patcher apply`` and ``patcher revert --last``, in a process that
# imports only what they need and not typer, with the collector kept out as the script does.
LEAN_APPLY = (
    "import gc; gc.disable(); import sys; sys.set_int_max_str_digits(0); "
    "from patcher.ops.apply import apply; gc.freeze(); gc.enable(); "
    "apply(sys.argv[1], sys.argv[2]); gc.freeze()"
)
LEAN_REVERT = (
    "import gc; gc.disable(); import sys; sys.set_int_max_str_digits(0); "
    "from patcher.ops.revert import revert; gc.freeze(); gc.enable(); "
    "revert(sys.argv[1], last=True); gc.freeze()"
)

# The same, after what any CLI built on typer imports first.
TYPER = "import typer; "


def _step(command: list[str], env: dict[str, str] = ENV) -> Callable[[], tuple[float, int]]:
    return lambda: timed(command, env)[:2]


def bench_floor(work: Path, runs: int, sizes: tuple[float, ...]) -> list[str]:
    """What part of a small edit is start-up: Python alone, ``import typer``, the edit in a
    process without typer, the same after ``import typer`` (the least any typer CLI can
    take), the ``patcher`` command, and ``jq``."""
    one_op = _transform(work, "byte-fallback-floor", ONE_OP)
    lines = [
        f"Where a small edit's time goes (median of {runs} interleaved runs; 'no typer' is the "
        "same library call in a `python -c` process that imports only it, '+ typer' the same "
        "after `import typer`):",
        "",
        "| file | python -c pass | import typer | apply, no typer / jq | apply + typer / jq "
        "| patcher apply / jq | revert, no typer / jq | revert + typer / jq "
        "| patcher revert / jq |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for megabytes in sizes:
        ckpt, size, jq_file = _tokenizer_and_jq_copy(work, megabytes, "jq-floor")
        commands = {
            "pass": [sys.executable, "-c", "pass"],
            "typer": [sys.executable, "-c", "import typer"],
            "lean apply": [sys.executable, "-c", LEAN_APPLY, str(ckpt), str(one_op)],
            "lean revert": [sys.executable, "-c", LEAN_REVERT, str(ckpt)],
            "typer apply": [sys.executable, "-c", TYPER + LEAN_APPLY, str(ckpt), str(one_op)],
            "typer revert": [sys.executable, "-c", TYPER + LEAN_REVERT, str(ckpt)],
            "apply": [*PATCHER, "apply", str(ckpt), str(one_op)],
            "revert": [*PATCHER, "revert", str(ckpt), "--last"],
            "jq": _jq_edit(jq_file),
        }
        steps = [(name, _step(command)) for name, command in commands.items()]
        result = {name: seconds for name, (seconds, _) in median_runs(runs, steps).items()}
        jq = result["jq"]

        def cell(name: str, jq: float = jq, result: dict[str, float] = result) -> str:
            return f"{result[name] * 1000:.0f} ms ({result[name] / jq:.2f}x)"

        lines.append(
            f"| {size / 1e6:.1f} MB | {result['pass'] * 1000:.0f} ms "
            f"| {result['typer'] * 1000:.0f} ms | {cell('lean apply')} | {cell('typer apply')} "
            f"| {cell('apply')} | {cell('lean revert')} | {cell('typer revert')} "
            f"| {cell('revert')} |"
        )
        shutil.rmtree(ckpt)
        jq_file.unlink()
    return lines


def bench_journal_growth(work: Path, runs: int) -> list[str]:
    ckpt = work / "growth"
    shutil.copytree(ROOT / "snapshots" / "configs" / "devstral-small-2507", ckpt)
    applies: list[float] = []
    for i in range(200):
        applies.append(
            timed(
                [
                    *PATCHER,
                    "apply",
                    str(ckpt),
                    "set-context-length",
                    "--set",
                    f"length={1000 + i}",
                    "--stack",
                ]
            )[0]
        )
    window = max(1, runs)
    twentieth = statistics.median(applies[20 - window // 2 : 20 + window // 2 + 1])
    last = statistics.median(applies[-window:])
    revert, _, _ = timed([*PATCHER, "revert", str(ckpt), "--all"])
    journal = (ckpt / ".patcher" / "journal.json").stat().st_size
    return [
        "Journal growth (200 stacked applies of set-context-length, each a process):",
        "",
        "| measure | wall |",
        "|---|---|",
        f"| apply #20 (median of the {window} around it) | {twentieth * 1000:.0f} ms |",
        f"| apply #200 (median of the last {window}) | {last * 1000:.0f} ms |",
        f"| revert --all of 200 entries | {revert:.2f} s |",
        f"| the 200 applies together | {sum(applies):.2f} s |",
        "",
        f"apply #200 / #20: {last / twentieth:.2f}x; revert --all / 200 applies: "
        f"{revert / sum(applies):.2f}x; journal after revert --all: {journal / 1024:.0f} KiB "
        "(settled reverted entries beyond the last 20 are pruned)",
    ]


# A Hub on 127.0.0.1 serving one folder's files as a repository, in a child process so that
# this one stays small (see _tokenizer_checkpoint); it prints its URL, and stops at EOF.
HUB = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from hubserver import Hub, serve
hub = Hub()
hub.add_repo(sys.argv[3], {p.name: p.read_bytes() for p in sorted(Path(sys.argv[2]).iterdir())})
with serve(hub) as endpoint:
    print(endpoint, flush=True)
    sys.stdin.read()
"""


@contextlib.contextmanager
def _hub_serving(folder: Path, repo_id: str) -> Iterator[str]:
    """The URL of a local Hub serving ``folder`` as ``repo_id``, while the block runs."""
    command = [sys.executable, "-c", HUB, str(ROOT / "tests"), str(folder), repo_id]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as hub:
        assert hub.stdout is not None and hub.stdin is not None
        try:
            yield hub.stdout.readline().decode().strip()
        finally:
            hub.stdin.close()


def bench_diff(work: Path, runs: int, megabytes: float = 15.0) -> list[str]:
    """Showing one edit of a large file: ``apply --dry-run``, ``diff`` and ``diff --json``, and
    ``diff --upstream`` against a local Hub (``tests/hubserver.py``) serving the original."""
    one_op = _transform(work, "byte-fallback-diff", ONE_OP)
    fresh, size = _tokenizer_checkpoint(work, megabytes)
    applied = work / "tok-diff-applied"
    shutil.copytree(fresh, applied)
    timed([*PATCHER, "apply", str(applied), str(one_op)])
    with _hub_serving(fresh, "bench/tokenizer") as endpoint:
        env = {**ENV, "HF_ENDPOINT": endpoint, "HF_HOME": str(work / "hf-home")}
        upstream = [*PATCHER, "diff", str(applied), "--upstream", "bench/tokenizer"]
        _, _, first = timed(upstream, env)  # fills the cache; the runs below revalidate it
        if b"/model/byte_fallback" not in first.stdout:
            raise SystemExit(f"diff --upstream failed: {first.stderr.decode()}")
        steps = [
            ("apply --dry-run", _step([*PATCHER, "apply", str(fresh), str(one_op), "--dry-run"])),
            ("diff", _step([*PATCHER, "diff", str(applied)])),
            ("diff --json", _step([*PATCHER, "diff", str(applied), "--json"])),
            ("diff --upstream", _step(upstream, env)),
            ("diff --upstream --json", _step([*upstream, "--json"], env)),
        ]
        result = median_runs(runs, steps)
    return _wall_and_rss(
        f"Showing one edit of a {size / 1e6:.1f} MB tokenizer.json (median of {runs} "
        "interleaved runs; `--upstream` against a Hub on 127.0.0.1, the files cached):",
        "command",
        result,
        prefix="patcher ",
    )


DOCTOR_NOISE = (
    "INFO 01-20 13:02:00 [core.py:100] Loading weights took 12.3 seconds\n",
    "(EngineCore_DP0 pid=123) DEBUG 01-20 13:02:00 [gpu_model_runner.py:2000] step 1234 "
    "scheduled 17 requests, 4096 tokens\n",
    "\x1b[1;36m(APIServer pid=1)\x1b[0;0m INFO 01-20 13:02:00 [loggers.py:123] Engine 000: "
    "Avg prompt throughput: 0.0 tokens/s\n",
)
DOCTOR_ERROR = (
    "(EngineCore_DP0 pid=123) ERROR 01-20 13:03:50 [core.py:866] ValueError: To serve at least "
    "one request with the models's max seq len (262144), (17.00 GiB KV cache is needed, which "
    "is larger than the available KV cache memory (11.60 GiB). Based on the available memory, "
    "the estimated maximum model length is 179296. Try increasing `gpu_memory_utilization` or "
    "decreasing `max_model_len` when initializing the engine.\n"
)


def bench_doctor(work: Path, runs: int, megabytes: float = 64.0) -> list[str]:
    """``patcher doctor`` on a debug log of ``megabytes`` MB whose root error is its last
    line: every line before it is read and tried."""
    log = work / "server.log"
    rng = random.Random(0)
    with log.open("w", encoding="utf-8") as handle:
        handle.write("INFO 01-20 13:01:00 [api_server.py:1] vLLM API server version 0.16.0\n")
        size, lines = 0, 2
        while size < megabytes * 1e6:
            line = rng.choice(DOCTOR_NOISE)
            handle.write(line)
            size += len(line)
            lines += 1
        handle.write(DOCTOR_ERROR)
    result = median_runs(runs, [("doctor", _step([*PATCHER, "doctor", str(log)]))])
    seconds, peak = result["doctor"]
    return [
        f"doctor (median of {runs} runs; a {log.stat().st_size / 1e6:.0f} MB log of "
        f"{lines:,} lines, the root error on the last):",
        "",
        "| measure | value |",
        "|---|---|",
        f"| wall | {seconds * 1000:.0f} ms ({log.stat().st_size / 1e6 / seconds:.0f} MB/s) |",
        f"| peak RSS | {peak // 1024} MiB |",
    ]


LAUNCH = ["--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--tp", "8"]
ELSEWHERE = ["--engine", "vllm==0.16.0", "--gpu", "h200", "--tp", "8"]


def bench_launch(work: Path, runs: int) -> list[str]:
    ckpt = work / "launch"
    shutil.copytree(KIMI, ckpt)
    timed([*PATCHER, "sync", str(ckpt), *LAUNCH])  # a journal, then back to the upstream
    timed([*PATCHER, "sync", str(ckpt), *ELSEWHERE])  # bytes (nothing is needed on H200)
    fresh = work / "fresh"

    def first() -> tuple[float, int]:
        shutil.rmtree(fresh, ignore_errors=True)
        shutil.copytree(KIMI, fresh)
        return timed([*PATCHER, "sync", str(fresh), *LAUNCH])[:2]

    def there_and_back() -> tuple[float, int]:
        found = timed([*PATCHER, "sync", str(ckpt), *LAUNCH])[:2]
        timed([*PATCHER, "sync", str(ckpt), *ELSEWHERE])
        return found

    result = median_runs(
        runs,
        [
            ("patcher status", _step([*PATCHER, "status", str(ckpt)])),
            (
                "patcher plan (1 action pending, exit 4)",
                lambda: timed([*PATCHER, "plan", str(ckpt), *LAUNCH], ok=(4,))[:2],
            ),
            ("patcher sync (applies it; one rebuild)", there_and_back),
            ("patcher sync (first ever: proof, then the rebuild)", first),
        ],
    )
    return [
        f"plan and sync of the example, vllm==0.16.0 on 8 RTX PRO 6000 (median of {runs}):",
        "",
        "| process | median wall | peak RSS |",
        "|---|---|---|",
        *(f"| {name} | {t * 1000:.0f} ms | {m // 1024} MiB |" for name, (t, m) in result.items()),
    ]


def bench_installed(work: Path, runs: int, python: Path | None) -> list[str]:
    if python is None:
        return ["check --engine-python: not measured (give --engine-python VENV/bin/python)"]
    ckpt = work / "installed"
    shutil.copytree(KIMI, ckpt)
    cache = work / "installed-cache"
    args = [*PATCHER, "check", str(ckpt), "--engine-python", str(python), "--gpu", "12.0"]
    env = {**ENV, "PATCHER_CACHE_DIR": str(cache)}

    def cold() -> tuple[float, int]:
        shutil.rmtree(cache, ignore_errors=True)
        return timed(args, env=env)[:2]

    result = median_runs(
        runs,
        [
            ("check --engine-python, cold (the engine asked)", cold),
            ("check --engine-python, cached", lambda: timed(args, env=env)[:2]),
            (
                "check --engine vllm==0.32.0 (the recorded model)",
                _step([*PATCHER, "check", str(ckpt), "--engine", "vllm==0.32.0", "--gpu", "12.0"]),
            ),
        ],
    )
    return [
        f"the installed engine asked ({python}; median of {runs}):",
        "",
        "| process | median wall | peak RSS (the largest process of the run) |",
        "|---|---|---|",
        *(f"| {name} | {t * 1000:.0f} ms | {m // 1024} MiB |" for name, (t, m) in result.items()),
    ]


_ENGINE = """import os, sys
lines = int(os.environ.get("LINES_OUT", "0"))
chunk = (b"x" * 1023 + b"\\n") * 1024
for _ in range(lines // 1024):
    os.write(1, chunk)
"""


def bench_run(work: Path, runs: int, mebibytes: int = 1024) -> list[str]:
    """``patcher run``: the cost before the engine starts, and the output passed through."""
    ckpt = work / "run"
    shutil.copytree(KIMI, ckpt)
    timed([*PATCHER, "sync", str(ckpt), *LAUNCH])
    bin_dir = work / "bin"
    bin_dir.mkdir()
    engine = bin_dir / "vllm"
    engine.write_text(f"#!{sys.executable}\n{_ENGINE}")
    engine.chmod(0o755)
    env = {**ENV, "PATH": f"{bin_dir}{os.pathsep}{ENV['PATH']}"}
    loud = {**env, "LINES_OUT": str(mebibytes * 1024)}
    serve = ["vllm", "serve", str(ckpt), "--tensor-parallel-size", "8"]
    serve += ["--kv-cache-dtype", "bfloat16", "--max-model-len", "131072"]
    run = [*PATCHER, "run", "--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--", *serve]
    # Through a pipe to cat > /dev/null: what a terminal, a log shipper or journald reads from.
    piped = ["sh", "-c", 'exec "$@" | cat > /dev/null', "sh"]
    result = median_runs(
        runs,
        [
            ("the engine alone, exiting at once", _step([str(engine), *serve[1:]], env)),
            ("patcher run of it (sync check, plan, start, wait)", _step(run, env)),
            (f"the engine writing {mebibytes} MiB to a pipe", _step([*piped, str(engine)], loud)),
            (f"patcher run passing {mebibytes} MiB through", _step([*piped, *run], loud)),
        ],
    )
    alone, through = (t for t, _ in list(result.values())[2:])
    return [
        f"patcher run of a stand-in engine, the example on 8 RTX PRO 6000 (median of {runs}):",
        "",
        "| process | median wall | peak RSS |",
        "|---|---|---|",
        *(f"| {name} | {t * 1000:.0f} ms | {m // 1024} MiB |" for name, (t, m) in result.items()),
        "",
        f"throughput through patcher: {mebibytes * 2**20 / 1e6 / through:.0f} MB/s "
        f"(the engine alone into the pipe: {mebibytes * 2**20 / 1e6 / alone:.0f} MB/s)",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--make-tokenizer", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--megabytes", type=float, default=15.0, help=argparse.SUPPRESS)
    parser.add_argument(
        "--only",
        choices=[
            "large",
            "ops",
            "shards",
            "startup",
            "journal",
            "floor",
            "doctor",
            "diff",
            "launch",
            "installed",
            "run",
        ],
        help="run one section",
    )
    parser.add_argument("--engine-python", type=Path, help="a venv's python with vLLM (section 9)")
    parser.add_argument(
        "--sizes",
        default=",".join(f"{s:g}" for s in SIZES_MB),
        help="file sizes in MB for the large-file rows (default: %(default)s)",
    )
    args = parser.parse_args()
    if args.make_tokenizer:
        make_tokenizer(args.make_tokenizer, args.megabytes)
        return
    sizes = tuple(float(s) for s in args.sizes.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        chosen = {
            "large": lambda: bench_large_file(work, args.runs, sizes),
            "ops": lambda: bench_ops_and_storage(work, args.runs),
            "shards": lambda: bench_shards(work, args.runs),
            "startup": lambda: bench_startup(work, args.runs * 3),
            "journal": lambda: bench_journal_growth(work, args.runs),
            "floor": lambda: bench_floor(work, args.runs, tuple(x for x in sizes if x < 8)),
            "doctor": lambda: bench_doctor(work, args.runs),
            "diff": lambda: bench_diff(work, args.runs),
            "launch": lambda: bench_launch(work, args.runs),
            "installed": lambda: bench_installed(work, min(args.runs, 3), args.engine_python),
            "run": lambda: bench_run(work, args.runs),
        }
        sections = [run() for name, run in chosen.items() if args.only in (None, name)]
    where = f"installed ({SCRIPT})" if INSTALLED else "from the source tree"
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, patcher {where}\n")
    print("\n\n".join("\n".join(s) for s in sections))


if __name__ == "__main__":
    main()
