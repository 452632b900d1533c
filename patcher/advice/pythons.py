"""Which Pythons each engine release installs on: its wheel's ``Requires-Python``, read per
release (the catalogue's ``requires_python``, tools/read_metadata.requirements).

Python 3.13 gives every class a ``__firstlineno__``, and its ``inspect.findsource`` looks the
attribute up first: on a class built without it (a dataclass made at run time), 3.13 raises
``KeyError: '__firstlineno__'`` and then ``OSError: source code not available``. vLLM's command
line reads its settings' docstrings with ``inspect``, so a release written before 3.13
(``Requires-Python: <3.13``), installed on 3.13 anyway, fails as it builds its parser. The way
out is a release whose wheel admits the Python, or the Python the release admits.
"""

from __future__ import annotations

import re

from patcher.advice.catalogue import Engine, feature_by_release, releases, span_of
from patcher.advice.log_rules import Fix, LogContext

# the attribute CPython 3.13 added to every class (inspect.findsource reads it first)
FIRSTLINENO = re.compile(r"KeyError: '__firstlineno__'")
_BOUND = re.compile(r"(<=|<|>=|>|==|!=|~=)\s*(\d+)\.(\d+)")


def admits(specifier: str, python: tuple[int, int]) -> bool:
    """Whether a ``Requires-Python`` specifier (``<3.13,>=3.9``) admits ``python``, by its
    major.minor bounds."""
    for op, major, minor in _BOUND.findall(specifier):
        bound = (int(major), int(minor))
        if not {
            "<": python < bound,
            "<=": python <= bound,
            ">": python > bound,
            ">=": python >= bound,
            "==": python == bound,
            "!=": python != bound,
            "~=": python >= bound,
        }[op]:
            return False
    return True


def first_admitting(engine: Engine, python: tuple[int, int]) -> str | None:
    """The first release of the last unbroken run of releases read whose wheel admits
    ``python``: an early release that bounds nothing (``>=3.8``) is no evidence for a Python
    that later releases exclude (vLLM 0.8.5 to 0.10.1 say ``<3.13``; 0.11.0 on admit it).
    None where every release read admits it (no release read excludes it: an upgrade is no
    fix) or the newest does not."""
    declared = feature_by_release(engine, "requires_python")
    span = span_of(engine, lambda r: r in declared and admits(declared[r], python))
    if span is None or span[1] is not None or span[0] == next(iter(releases(engine))):
        return None
    return span[0]


def python_too_new(_m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """Python 3.13's ``inspect`` on an engine release written for older Pythons."""
    python = (3, 13)
    fixes = [
        Fix(
            "advice",
            "or the Python the release installed declares (pip show ENGINE; its wheel's "
            "Requires-Python): a 3.12 environment",
        )
    ]
    for engine in reversed(ctx.engines()):
        first = first_admitting(engine, python)
        if first is not None:
            fixes.insert(
                0,
                Fix(
                    "dependency",
                    f"pip install '{engine}>={first}'",
                    note=f"the first {engine} release read whose wheel admits Python 3.13 "
                    "(Requires-Python)",
                ),
            )
    return (
        "Python 3.13 runs an engine release written before it: 3.13's inspect looks up "
        "__firstlineno__, which the classes the release builds at run time lack",
        fixes,
    )
