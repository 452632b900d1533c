"""An engine and its version, as the user names it (``vllm==0.16.0``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from patcher.errors import TargetError

EngineName = Literal["vllm", "sglang"]
Version = tuple[int, int, int]
# The oldest release each engine model takes at all (older ones are refused); which releases
# were read, and whose rules answer for the others, is patcher.engines.readings'.
OLDEST: dict[str, Version] = {"vllm": (0, 10, 0), "sglang": (0, 4, 0)}
# A release as pip spells it: 0.16, 0.16.0, 0.16.0rc1, 0.16.0.post1, 0.32.0+cpu; no more parts.
_SPEC = re.compile(
    r"\s*(vllm|sglang)\s*(?:==|@|=|\s)\s*v?(\d{1,4})\.(\d{1,4})(?:\.(\d{1,4}))?"
    r"((?:(?:a|b|rc|\.post|\.dev)\d{1,4})*)(?:\+[a-z0-9.]{1,32})?\s*"
)
_PRE = re.compile(r"(?:a|b|rc|\.dev)\d+")
_NAMED = re.compile(r"\s*([a-z][a-z0-9_-]*)\s*(?:==|@|=)\s*\S+\s*")


@dataclass(frozen=True, slots=True)
class Engine:
    """An inference engine at one version."""

    name: EngineName
    version: Version
    pre: str = ""  # a pre-release or dev tag (rc1, .dev3), which no reading covers

    @property
    def version_text(self) -> str:
        """The version as ``0.16.0``."""
        return ".".join(str(part) for part in self.version)

    def __str__(self) -> str:
        return f"{self.name}=={self.version_text}{self.pre}"

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
    pre = "".join(_PRE.findall(match.group(5)))
    return Engine(name, version, pre)
