"""Reading an engine's log: the lines, cut to a bound, without colours or process prefixes.

vLLM prefixes each line of a worker with ``(EngineCore_DP0 pid=…) ERROR date [file:line]``,
torchrun with ``[rank0]:``, SGLang with ``[date TP0]``; terminals add ANSI colours. doctor and
``run`` read the engine's words beneath them, and a runaway line costs bounded memory.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable, Iterator
from typing import Any, Literal

# Never echoed: CSI (colours), OSC (titles, clipboard writes), other ESC sequences, C0/C1.
ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)
PREFIX = re.compile(
    # docker compose's "service  | " before each line of a container's log
    r"^\s*(?:[\w.-]+\s+\|\s)?"
    # the collector's own stamp: docker or kubectl --timestamps (RFC 3339), or the systemd
    # journal's "Aug 19 18:34:30 host unit[pid]: "
    # (Buildkite's log view brackets it: "[2026-07-18T22:18:04Z] ")
    r"(?:\[?\d{4}-\d\d-\d\dT[\d:]+(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?\s+"
    r"|[A-Z][a-z]{2} [ \d]\d [\d:]{8} \S+ [\w.@-]+\[\d+\]:\s)?"
    r"(?:\[rank\d+\]:\s*|\[\d{4}-\d\d-\d\d [\d:]+(?: [A-Z]{2}\d+)*\]\s*)?"
    # a process prefix: vLLM's (EngineCore_DP0 pid=N), and any other process name a runtime
    # built on it gives its own (vllm-omni's StageEngineCoreProc); V0's multiprocessing
    # workers name their rank before the pid. Ray prints each worker's lines under
    # "(ACTOR_OR_TASK pid=N, ip=A)", the name left out where it has none and the address where
    # the worker runs on the driver's node (ray/_private/worker.py, print_worker_logs); vLLM's
    # own prefix follows it where the engine runs in a Ray actor
    r"(?:\((?:[A-Za-z_][\w.:-]*(?:\s+rank=\d+)?\s+)?pid=\d+(?:,\s*ip=[\w.:-]+)?\)\s*){0,2}"
    r"(?:(?:ERROR|WARNING|INFO|DEBUG|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+"
    # the file and line, bracketed; vLLM before 0.8 closed the bracket only ("core.py:210] ")
    r"(?:\[[^\]]*\]|[\w.]+:\d+\])\s?"
    # or the file and line alone, where a report quotes the line without level and date
    r"|\[\w+\.py:\d+\]\s)?"
)
WRAPPERS = (
    "Engine core initialization failed",
    "Worker failed with error",
    # huggingface_hub's @strict (transformers 5's config classes): the cause is the next line
    "Class validation error for validator",
    # transformers 4's lazy modules (utils/import_utils.py, _LazyModule._get_module): the
    # import's own error is the next line
    "because of the following error (look up to see its",
    # vLLM 0.7-0.8's engine core logging its traceback whole: the error is its last line
    "EngineCore hit an exception: Traceback",
)
# The line an exception is printed on (``ValueError: ...``), the root of a traceback.
RAISED = re.compile(
    r"^\s*(?:[\w.]+\.)?(?P<kind>[A-Z]\w*(?:Error|Exception|Exit)|Fallback)"
    r"(?:\([^)]*\))?: (?P<message>.+)"
)
# TensorRT-LLM's C++ checks (TLLM_CHECK_WITH_INFO): "[TensorRT-LLM][ERROR] Assertion failed: MSG
# (file.cpp:LINE)", the root where no Python exception follows.
CPP_ASSERTION = re.compile(r"\[TensorRT-LLM\]\[ERROR\] Assertion failed: \S")
# A line can hold an engine's error only with one of these (a raised exception, or a log call
# at error level); every other line is passed over with one search each.
ERRORISH = ("rror", "xception", "ERROR", "CRITICAL", "Fallback")
# A line vLLM logged at warning level ("WARNING 08-27 13:59:59 file.py:15] "): the engine said
# so and went on, so an exception after it is the root of the failure, not this line.
WARNED = re.compile(r"\bWARNING\s+\d\d-\d\d \d\d:\d\d:\d\d")
# SGLang's log prefix: "[2026-12-04 10:00:00 TP0] ".
# vLLM's process prefixes (V1's front end, engine core and workers): the log is vLLM's.
VLLM_PREFIX = re.compile(r"\((?:Worker|EngineCore|APIServer|VllmWorker)\S*\s+pid=\d+\)")
SGLANG_PREFIX = re.compile(r"\[\d{4}-\d\d-\d\d [\d:]+(?: [A-Z]{2}\d+)*\] ")
# Source lines a traceback echoes: they hold a message's text but are not the message.
SOURCE = re.compile(r"^\s*(?:raise |assert |logger\.|log\.|File \"|\^|~|\w+ = f?[\"'])")


_Trie = dict[str, "_Trie"]


def any_of(words: Iterable[str]) -> re.Pattern[str]:
    """A pattern that finds any of ``words``, built as a trie (shared starts factored out):
    Python's ``re`` tries each branch of a plain alternation at every position, and doctor
    runs this on every line of a log (40% faster on a 16 MB log; docs/benchmark.md)."""
    root: _Trie = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: _Trie) -> str:
        branches = [re.escape(c) + emit(child) for c, child in sorted(node.items()) if c]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return re.compile(emit(root))


# The characters most frequent in logs, the most frequent first: a filter branch that starts
# on one of them is tried at nearly every position of a line (docs/benchmark.md).
_COMMON = " etaoinsrhldcumfp_.:/-=,0123456789gwybv"


def _rare_tail(word: str, least: int = 4) -> str:
    """``word`` from its rarest character on, at least ``least`` characters long: a line that
    holds the word holds this part of it too."""
    if len(word) <= least:
        return word

    def rarity(at: int) -> tuple[int, int]:
        char = word[at]
        return (_COMMON.index(char) if char in _COMMON else len(_COMMON), -at)

    return word[max(range(len(word) - least + 1), key=rarity) :]


class Filter:
    """:func:`any_of` ``words`` in two steps: first a pattern of each word's rarest part (a
    line that holds a word always matches it, and its branches start on rare characters, so
    it is tried at few positions of a line), then, on a match only, the words themselves."""

    def __init__(self, words: Iterable[str]) -> None:
        kept = tuple(words)
        self.fast = any_of(_rare_tail(w) for w in kept)
        self.exact = any_of(kept)

    def search(self, line: str) -> re.Match[str] | None:
        """The first of the words in ``line``, as ``re.Pattern.search`` finds it."""
        return self.exact.search(line) if self.fast.search(line) else None


def uncoloured(line: str) -> str:
    """``line`` without terminal control sequences (a fast path when it has none)."""
    return ANSI.sub("", line) if "\x1b" in line else line


def shown(line: str) -> str:
    """A log line as doctor may print it: no terminal control sequence, no control character."""
    body = line.rstrip("\r\n")
    return body if body.isprintable() else ANSI.sub("", body)


# An engine's error line is well under this; past it a line is cut, so that a hostile or
# runaway line (megabytes without a newline) costs bounded memory and bounded matching time.
LINE_LIMIT = 8192


def bounded(lines: Iterable[str]) -> Iterator[str]:
    """Each line cut to ``LINE_LIMIT`` characters; from a stream, the rest of a long line is
    read past in pieces, never held whole. A text file over a binary buffer is read in
    chunks of what is there (``read1``: a live pipe answers as soon as a line arrives),
    decoded and split by line in C, several times cheaper per line than ``readline``."""
    buffer = getattr(lines, "buffer", None)
    if buffer is not None and hasattr(buffer, "read1"):
        encoding = getattr(lines, "encoding", None) or "utf-8"
        yield from _chunked(buffer, encoding, getattr(lines, "errors", None) or "strict")
        return
    readline = getattr(lines, "readline", None)
    if readline is None:
        for line in lines:
            yield line[:LINE_LIMIT]
        return
    while True:
        line = readline(LINE_LIMIT)
        if not line:
            return
        yield line
        while len(line) == LINE_LIMIT and not line.endswith("\n"):
            line = readline(LINE_LIMIT)  # the rest of an overlong line: skipped


_CHUNK = 1 << 20


def _chunked(buffer: Any, encoding: str, errors: str) -> Iterator[str]:
    """The lines of a byte stream in ``encoding`` (``splitlines``: universal newlines and a few more
    separators), each cut to ``LINE_LIMIT``, an overlong line's rest skipped as it arrives."""
    decode = codecs.getincrementaldecoder(encoding)(errors).decode
    partial, skipping = "", False
    while True:
        data = buffer.read1(_CHUNK)
        text = decode(data, final=not data)
        pieces = (partial + text).splitlines(keepends=True)
        partial = ""
        if pieces and data and not pieces[-1].endswith(("\n", "\r")):
            partial = pieces.pop()  # the line goes on in the next chunk
        for piece in pieces:
            if skipping:
                skipping = False  # the end of an overlong line
                continue
            yield piece[:LINE_LIMIT]
        if len(partial) > LINE_LIMIT:  # an overlong line so far: keep its start only
            if not skipping:
                yield partial[:LINE_LIMIT]
            partial, skipping = "", True
        if not data:
            if partial and not skipping:
                yield partial[:LINE_LIMIT]
            return


# an engine's own file in a traceback's frame line (File ".../site-packages/vllm/config.py", ...)
_ENGINE_FILE = re.compile(r"[/\\]((vllm|sglang)/[\w/]+\.py)\"")


def engine_file(frame: str | None) -> tuple[Literal["vllm", "sglang"], str] | None:
    """The engine and its file (``vllm/config.py``) a traceback's frame line names, or None
    where the frame is not an engine's own."""
    found = _ENGINE_FILE.search(frame or "")
    if found is None:
        return None
    return ("sglang" if found.group(2) == "sglang" else "vllm"), found.group(1)
