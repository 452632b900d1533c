"""An engine and its version, as the user names it (``vllm==0.16.0``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from patcher.errors import TargetError

EngineName = Literal["vllm", "sglang"]
Version = tuple[int, int, int]
# The oldest release each engine model covers.
OLDEST: dict[str, Version] = {"vllm": (0, 10, 0), "sglang": (0, 4, 0)}
# The newest release each engine model was read at (vLLM: recorded in snapshots/engines/). A
# later version gets that release's rules, and the answer says so.
NEWEST_READ: dict[str, Version] = {"vllm": (0, 33, 0), "sglang": (0, 5, 23)}
# A release as pip spells it: 0.16, 0.16.0, 0.16.0rc1, 0.16.0.post1, 0.32.0+cpu; no more parts.
_SPEC = re.compile(
    r"\s*(vllm|sglang)\s*(?:==|@|=|\s)\s*v?(\d{1,4})\.(\d{1,4})(?:\.(\d{1,4}))?"
    r"(?:(?:a|b|rc|\.post|\.dev)\d{1,4})*(?:\+[a-z0-9.]{1,32})?\s*"
)
_NAMED = re.compile(r"\s*([a-z][a-z0-9_-]*)\s*(?:==|@|=)\s*\S+\s*")


@dataclass(frozen=True, slots=True)
class Engine:
    """An inference engine at one version."""

    name: EngineName
    version: Version

    @property
    def version_text(self) -> str:
        """The version as ``0.16.0``."""
        return ".".join(str(part) for part in self.version)

    def __str__(self) -> str:
        return f"{self.name}=={self.version_text}"

    @property
    def beyond_read(self) -> str | None:
        """When this release is newer than any the model was read at, a note saying whose
        rules it is given; else None."""
        newest = NEWEST_READ[self.name]
        if self.version <= newest:
            return None
        text = ".".join(map(str, newest))
        return (
            f"{self.name} {self.version_text} is newer than the releases read (up to {text}); "
            f"{text}'s rules are assumed"
        )

    def at_least(self, *version: int) -> bool:
        """Whether this release is ``version`` or later."""
        return self.version >= tuple(version)


def parse_engine(text: str) -> Engine:
    """``vllm==0.16.0`` (also ``vllm@0.16``, ``sglang==0.5.23``) as an :class:`Engine`."""
    match = _SPEC.fullmatch(text.lower())
    named = _NAMED.fullmatch(text.lower())
    if not match and named and named.group(1) not in ("vllm", "sglang"):
        raise TargetError(
            f"engine {named.group(1)!r} is not in the engine model (it knows vllm and sglang)",
            hint="check against --engine vllm==X.Y.Z or --engine sglang==X.Y.Z",
        )
    if not match:
        raise TargetError(
            f"cannot read engine {text!r}",
            hint="name it as NAME==VERSION, e.g. --engine vllm==0.16.0 or --engine sglang==0.5.23",
        )
    name: EngineName = "vllm" if match.group(1) == "vllm" else "sglang"
    version = (int(match.group(2)), int(match.group(3)), int(match.group(4) or 0))
    if version < OLDEST[name]:
        oldest = ".".join(map(str, OLDEST[name]))
        raise TargetError(
            f"{name} {'.'.join(map(str, version))} is older than the engine model covers "
            f"({name} {oldest} and later)",
            hint=f"check against --engine {name}=={oldest} or later",
        )
    return Engine(name, version)
