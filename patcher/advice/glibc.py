"""doctor's answer when a compiled extension needs a newer C library than the machine has:
"version `GLIBC_2.32' not found (required by .../vllm/_C.abi3.so)". The dynamic loader checks
each symbol version the extension needs against the system's libc. The glibc each vLLM
release's extensions need is read from its wheel (every ``.so`` of the package, the
``GLIBC_X.Y`` versions of its ``.gnu.version_r``: the catalogue's ``glibc``; the platform tag
does not tell it, vLLM 0.5.2's manylinux1 wheel needed 2.32)."""

from __future__ import annotations

import re

from patcher.advice.catalogue import feature_by_release, version_key
from patcher.advice.log_rules import Fix, LogContext, Rule

MISSING = re.compile(r"version .GLIBC_(\d+(?:\.\d+)+). not found \(required by ([^)\s]+)\)")
# The package a site-packages path is in ("/usr/lib/python3/dist-packages/vllm/_C.abi3.so").
_PACKAGE = re.compile(r"(?:site|dist)-packages/([A-Za-z_]\w*)/")


def _needs() -> dict[str, str]:
    """The newest glibc each vLLM release read needs, by release."""
    return feature_by_release("vllm", "glibc")


def _releases_below(needed: tuple[int, ...]) -> list[str]:
    """The vLLM releases read whose extensions need an older glibc than ``needed``, in order."""
    below = (r for r, newest in _needs().items() if version_key(newest) < needed)
    return sorted(below, key=version_key)


def _runs(releases: list[str]) -> str:
    """The releases as runs of consecutive releases read, each with the glibc it needs."""
    needs = _needs()
    everything = sorted(needs, key=version_key)
    runs: list[list[str]] = []
    for release in releases:
        last = runs[-1][-1] if runs else ""
        if last and everything.index(release) == everything.index(last) + 1:
            if needs[last] == needs[release]:
                runs[-1].append(release)
                continue
        runs.append([release])
    return ", ".join(
        f"{run[0]}{f' to {run[-1]}' if len(run) > 1 else ''} ({needs[run[0]]})" for run in runs
    )


def glibc_missing(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A compiled extension built against a newer glibc than the system's."""
    needed, path = m.group(1), m.group(2)
    package = _PACKAGE.search(path)
    owner = package.group(1) if package else path.rsplit("/", 1)[-1]
    fixes = [
        Fix(
            "advice",
            f"a system or container image whose glibc is {needed} or newer",
            note="ldd --version shows the machine's",
        )
    ]
    older = _releases_below(version_key(needed)) if owner == "vllm" else []
    later = [r for r in older if ctx.version is not None and version_key(r) > ctx.version]
    if later:
        fixes.append(
            Fix(
                "dependency",
                f"pip install 'vllm=={later[0]}'",
                note=f"the first release read after the log's whose extensions need glibc older "
                f"than {needed} (read from its wheel's .so files)",
            )
        )
    elif older:
        fixes.append(
            Fix(
                "advice",
                f"or a vLLM release whose extensions need an older glibc (read from each "
                f"wheel's .so files): {_runs(older)}",
                note="the torch a release requires needs a glibc of its own as well",
            )
        )
    return (
        f"{owner}'s compiled extension needs glibc {needed}, newer than this system's C library",
        fixes,
    )


GLIBC_RULES: tuple[Rule, ...] = (("glibc-too-old", MISSING, glibc_missing),)
GLIBC_MARKERS = ("GLIBC_",)
