"""doctor's answer to FlashAttention called with a keyword its installed release does not take:
"TypeError: flash_attn_varlen_func() got an unexpected keyword argument 'softcap'". The engine
passes what its own release's code knows (``alibi_slopes`` for ALiBi models, ``softcap`` for
Gemma 2's logit soft-capping, ``block_table`` for the paged KV cache); the FlashAttention it
imports is older. Which distribution that is depends on the vLLM release, read from its
wheels: 0.4.0 imports ``flash_attn`` (the flash-attn package, optional: without it the
selector takes xFormers), 0.4.3 to 0.6.1 import ``vllm_flash_attn`` (vLLM's fork, pinned
exactly: the catalogue's ``requires``), and 0.6.2 on carry their own build inside the package
(``vllm.vllm_flash_attn``, the exports reading), compiled with vLLM itself
(snapshots/engines/flash-attn-keywords.txt records the imports).

Each distribution's functions and their parameters, release by release, are read from its
repository's tags (tools/read_flash_attn_keywords.py, ``flash-attn-keywords.json``): the answer
names the release that takes the keyword, never one read without it."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from patcher.advice.catalogue import at_or_below, feature_releases, features_of, version_key
from patcher.advice.engine_exports import exports
from patcher.advice.log_rules import Fix, LogContext, Rule
from patcher.advice.packaged import packaged

_FORK = "vllm-flash-attn"
_DAO = "flash-attn"
_OWN_BUILD = "vllm.vllm_flash_attn"


@dataclass(frozen=True, slots=True)
class Distribution:
    """One FlashAttention distribution read: its releases in order and, for each public
    function, each parameter's releases as a bit mask over them."""

    name: str
    releases: tuple[str, ...]
    functions: dict[str, dict[str, int]]

    def taking(self, function: str, keyword: str) -> tuple[str, ...]:
        """The releases read whose ``function`` takes ``keyword``, oldest first."""
        mask = self.functions.get(function, {}).get(keyword, 0)
        return tuple(r for i, r in enumerate(self.releases) if mask >> i & 1)


@functools.cache
def distributions() -> dict[str, Distribution]:
    """The distributions read (flash-attn, vllm-flash-attn), by name."""
    data = packaged("flash-attn-keywords.json")["distributions"]
    return {
        name: Distribution(name, tuple(found["releases"]), found["functions"])
        for name, found in data.items()
    }


# The call's own words: Python names the function and the keyword. Every entry point of both
# distributions is named flash_attn_*; one no release read has gets no package named.
UNEXPECTED = re.compile(r"\b(flash_attn\w*)\(\) got an unexpected keyword argument '(\w+)'")


def _pin(release: str) -> str | None:
    """The vllm-flash-attn a vLLM release read pins exactly, where it pins one."""
    for requirement in features_of("vllm", "requires"):
        name, _, pinned = requirement.partition("==")
        if name.lower() == _FORK and release in feature_releases("vllm", "requires", requirement):
            return pinned
    return None


def _source(version: tuple[int, ...]) -> tuple[str, str] | None:
    """The FlashAttention a vLLM release imports, from the newest release read at or below it:
    ``(reading release, "own build" | "vllm-flash-attn==P" | "flash-attn")``; None where that
    release has no FlashAttention backend."""
    read = exports("vllm")
    if read is None:
        return None
    backend = read.modules.get("vllm.attention.backends.flash_attn", 0) | read.modules.get(
        "vllm.v1.attention.backends.flash_attn", 0
    )
    release = at_or_below(read.holding(backend), version)
    if release is None:
        return None
    if release in read.holding(read.modules.get(_OWN_BUILD, 0)):
        return release, "own build"
    pinned = _pin(release)
    return release, f"{_FORK}=={pinned}" if pinned else _DAO


def _first(distribution: str, function: str, keyword: str) -> str | None:
    taking = distributions()[distribution].taking(function, keyword)
    return taking[0] if taking else None


def _upgrade(function: str, keyword: str) -> Fix | None:
    """flash-attn from the first release read whose ``function`` takes ``keyword``."""
    first = _first(_DAO, function, keyword)
    if first is None:
        return None
    return Fix(
        "dependency",
        f"pip install -U 'flash-attn>={first}'",
        note=f"flash-attn {first} is the first release whose {function} takes {keyword} "
        "(read from its tags)",
    )


_OWN_BUILD_FIX = Fix(
    "advice",
    "install vLLM's own wheel of the release again (pip install --force-reinstall "
    "vllm==<the release>), or build it again from one checkout",
    note="its compiled FlashAttention (vllm/vllm_flash_attn) is of another build than its "
    "Python code",
)


@functools.cache
def eras() -> dict[str, tuple[str, str]]:
    """The first and last vLLM release read that import each FlashAttention: "flash-attn",
    "vllm-flash-attn" (pinned), "own build"."""
    read = exports("vllm")
    found: dict[str, list[str]] = {}
    if read is None:
        return {}
    for release in read.releases:
        source = _source(version_key(release))
        if source is not None and source[0] == release:
            found.setdefault(source[1].partition("==")[0], []).append(release)
    return {era: (releases[0], releases[-1]) for era, releases in found.items()}


def _unplaced(function: str, keyword: str) -> list[Fix]:
    """No release to place the call in: the answer for each FlashAttention vLLM's releases
    took, each with the releases that take it."""
    spans = {era: f"vLLM {a}" + (f" to {b}" if b != a else "") for era, (a, b) in eras().items()}
    fixes: list[Fix] = []
    upgrade = _upgrade(function, keyword)
    if upgrade is not None:
        fixes.append(
            Fix(
                upgrade.kind,
                upgrade.text,
                note=f"where vLLM imports the flash-attn package ({spans.get(_DAO, 'none read')}) "
                f"or code outside vLLM calls it: {upgrade.note}",
            )
        )
    fork = _first(_FORK, function, keyword)
    if fork is not None and _FORK in spans:
        fixes.append(
            Fix(
                "advice",
                f"with {spans[_FORK]}: the vllm-flash-attn that release pins (pip show vllm "
                f"lists it; {fork} is the first whose {function} takes {keyword})",
            )
        )
    if "own build" in spans:
        fixes.append(
            Fix(
                _OWN_BUILD_FIX.kind,
                f"from {spans['own build'].split(' to ')[0]} on: {_OWN_BUILD_FIX.text}",
                note=_OWN_BUILD_FIX.note,
            )
        )
    return fixes


def unexpected_keyword(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """FlashAttention's function called with a keyword the installed release lacks."""
    function, keyword = m.group(1), m.group(2)
    lacking = f"whose {function} takes no {keyword}"
    said = f"the FlashAttention the engine imports is older than the engine's code, {lacking}"
    if ctx.engine == "sglang":
        return said, [
            Fix(
                "advice",
                "the kernel packages the SGLang release pins (sgl-kernel, flash-attn: pip show "
                "sglang lists its requirements), installed again at those releases",
            )
        ]
    source = _source(ctx.version) if ctx.version is not None else None
    if source is None:
        return said, _unplaced(function, keyword)
    release, imported = source
    log = ".".join(str(p) for p in ctx.version or ())
    at = f"vLLM {log}" + (
        "" if version_key(release)[:3] == ctx.version else f" (read in {release})"
    )
    if imported == "own build":
        return (
            f"{at} calls its own FlashAttention build (vllm/vllm_flash_attn), {lacking}: the "
            "compiled part and the Python code are of two builds",
            [_OWN_BUILD_FIX],
        )
    if imported == _DAO:
        upgrade = _upgrade(function, keyword)
        uninstall = Fix(
            "advice",
            "or pip uninstall flash-attn",
            note=f"{at} then takes xFormers: its selector uses FlashAttention only where "
            "flash_attn imports",
        )
        return (
            f"{at} imports flash_attn (the flash-attn package), {lacking}",
            [*([upgrade] if upgrade else []), uninstall],
        )
    pinned = imported.partition("==")[2]
    if pinned not in distributions()[_FORK].taking(function, keyword):
        return said, _unplaced(function, keyword)  # not the pinned call: another caller
    return (
        f"{at} imports vllm_flash_attn, pinned at {pinned}; the one installed is another "
        f"release, {lacking}",
        [
            Fix(
                "dependency",
                f"pip install vllm-flash-attn=={pinned}",
                note=f"the release vLLM {release} pins; its {function} takes {keyword} (read)",
            )
        ],
    )


FLASH_ATTN_KEYWORD_RULES: tuple[Rule, ...] = (("library-release", UNEXPECTED, unexpected_keyword),)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
FLASH_ATTN_KEYWORD_MARKERS = ("got an unexpected keyword argument '",)
