"""The journal's fields checked before use: every type and shape an entry and a file record
may hold. The journal is a file anyone may edit; a value it should not hold is damage (a
ValueError naming the field, which the loader turns into "journal is damaged"), never a wrong
action or a crash further on."""

from __future__ import annotations

import functools
import re
from typing import Any

from patcher.store.checkpoint import name_problem
from patcher.text.pointers import PointerError, split_pointer

STATES = ("pending", "applied", "reverting", "reverted", "reapplying")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_OPS = frozenset({"add", "remove", "replace", "move", "copy", "test"})
_MAX_PATH = 1024  # bytes; a config file's path in a checkpoint is a few dozen
_MAX_PART = 255  # bytes, a file name on Linux filesystems


def expect(ok: bool, what: str) -> None:
    """Raise ValueError(``what``) unless ``ok``."""
    if not ok:
        raise ValueError(what)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_digest(value: Any) -> bool:
    return isinstance(value, str) and _DIGEST.fullmatch(value) is not None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_pointer(value: Any) -> bool:
    return isinstance(value, str) and _pointer_ok(value)


# Cached: a journal names the same few files and pointers in entry after entry, and every
# command reads it whole (apply and revert read it twice).
@functools.lru_cache(maxsize=4096)
def _pointer_ok(value: str) -> bool:
    try:
        split_pointer(value)
    except PointerError:
        return False
    return True


def _ops(raw: Any, what: str) -> None:
    expect(
        isinstance(raw, list)
        and all(
            isinstance(op, dict) and op.get("op") in _OPS and _is_pointer(op.get("path"))
            for op in raw
        ),
        f"{what} is not a list of operations on JSON pointers",
    )


def _record_path(value: Any) -> None:
    """A file a journal may name: a short relative path inside the checkpoint, no '..', not
    in .patcher/, no weight file (``name_problem``), each part a name a filesystem holds."""
    problem = _path_problem(value) if isinstance(value, str) else " is not a name"
    if problem is not None:  # the message is made only for a bad path: journals are long
        raise ValueError(f"file path {_shown(value)}{problem}")


@functools.lru_cache(maxsize=1024)
def _path_problem(value: str) -> str | None:
    """What is wrong with ``value`` as a recorded path (the message's tail), None: nothing."""
    if not value.isprintable():
        return " is not a name"
    problem = name_problem(value)
    if problem is not None:
        return f": {problem[0]}"
    encoded = value.encode("utf-8", "surrogatepass")
    if len(encoded) > _MAX_PATH or any(len(p) > _MAX_PART for p in encoded.split(b"/")):
        return " is longer than a filesystem holds"
    return None


def check_file(raw: Any) -> None:
    """Check a file record's fields (ValueError naming the first that is wrong)."""
    expect(isinstance(raw, dict), "a file record is not an object")
    _record_path(raw["path"])
    expect(raw["kind"] in ("json", "text"), "kind is not json or text")
    link = raw.get("link")
    expect(
        link is None or (isinstance(link, str) and 0 < len(link) <= 4096 and link.isprintable()),
        f"link {_shown(link)} is not a path",
    )
    for key in ("before", "after"):
        expect(_is_digest(raw[key]), f"bad {key}")
    _ops(raw["forward"], "forward")
    _ops(raw["inverse"], "inverse")
    for key in ("before_size", "after_size", "before_mtime_ns"):
        expect(raw.get(key) is None or _is_int(raw[key]), f"{key} is not a whole number")


def check_entry(raw: Any) -> None:
    """Check an entry's own fields (its file records: :func:`check_file`)."""
    expect(isinstance(raw, dict), "an entry is not an object")
    if raw["state"] not in STATES:
        raise ValueError(f"unknown state {_shown(raw['state'])}")
    expect(_is_int(raw["id"]), "id is not a number")
    expect(isinstance(raw["params"], dict), "params is not an object")
    expect(isinstance(raw["files"], list), "files is not a list")
    expect(_is_digest(raw["definition"]), "bad definition")
    for key in ("transform", "source", "time", "tool_version"):
        expect(isinstance(raw[key], str), f"{key} is not a string")
    expect(raw.get("reverted_time") is None or isinstance(raw["reverted_time"], str), "bad time")
    for key in ("targets", "sources"):
        hashes = raw.get(key, {})
        expect(
            isinstance(hashes, dict)
            and all(isinstance(k, str) and _is_digest(v) for k, v in hashes.items()),
            f"{key} is not an object of hashes",
        )
    expect(raw.get("target") is None or isinstance(raw["target"], dict), "bad target")
