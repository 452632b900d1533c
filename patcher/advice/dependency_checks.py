"""doctor's answers when a library beside the engine refuses, as it is imported, the release of
another installed beside it. Neither is the checkpoint's or a flag's: the engine imports the
library for its kernels (or its model code), and the server stops before it starts. Read from
the libraries' own wheels (tools/read_dependency_checks.py,
snapshots/engines/dependency-checks.txt):

- FlashInfer (``flashinfer/jit/env.py``) raises when the ``flashinfer-cubin`` package (its
  precompiled kernels) or ``flashinfer-jit-cache`` (its ahead-of-time modules, a CUDA suffix
  after the version) is another release than the ``flashinfer-python`` installed: "flashinfer-
  cubin version (0.6.13) does not match flashinfer version (0.6.14)". Read in 0.5.0 to 0.7.1 for
  the cubins, 0.5.0 to 0.6.18.post1 for the jit cache; from 0.7.2 it warns and ignores the
  package. ``FLASHINFER_DISABLE_VERSION_CHECK`` skips the check. Without the package, FlashInfer
  downloads its own release's cubins to its cache as it needs them (``_get_cubin_dir``) and
  compiles what the jit cache would have held. PyPI carries flashinfer-cubin up to 0.6.13 only
  (``pip index versions``, recorded beside the wheels): a later one is not there to install.
- kernels (``kernels/layer/layer.py``) refuses, from 0.15.1 (the first release on PyPI to;
  0.15.0 was not published), a kernel repository named with neither a version nor a revision:
  "Either a revision or a version must be specified." transformers up to 5.12.1 builds its
  hub-kernel mapping that way as ``integrations/hub_kernels.py`` is imported (every model's
  modeling file imports it); 5.13.0 on names a version for each and requires kernels 0.15.2 or
  later. So with transformers before 5.13 and kernels 0.15.1 or later, importing a model fails.
- transformers (``utils/versions.py``, read in 4.55 to 5.25) checks, as it is imported, the
  release of each of its own dependencies against its requirement (``dependency_versions_check
  .py``: tokenizers, huggingface-hub, safetensors, accelerate ...) and refuses another:
  "tokenizers>=0.21,<0.22 is required for a normal functioning of this module, but found
  tokenizers==0.22.1." (a caller's ``require_version`` says the same of its own requirement, and
  of one not installed: "The 'X' distribution was not found and is required by this
  application"). The requirement is in the message; installing it is the fix, whatever the
  engine (every engine imports transformers for its model configs).
"""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix, LogContext, Rule

# The FlashInfer releases read whose import refuses another release of each package.
CUBIN_CHECKED = ("0.5.0", "0.7.1")
JIT_CACHE_CHECKED = ("0.5.0", "0.6.18.post1")
BYPASS = "FLASHINFER_DISABLE_VERSION_CHECK"
# flashinfer-cubin's releases on PyPI, oldest first, as recorded (2026-12-07).
CUBIN_ON_PYPI = tuple(
    "0.4.0 0.4.1 0.5.0 0.5.1 0.5.2 0.5.3 0.6.0 0.6.1 0.6.2 0.6.3 0.6.4 0.6.5 0.6.6 0.6.7 "
    "0.6.7.post1 0.6.7.post2 0.6.7.post3 0.6.8 0.6.8.post1 0.6.9 0.6.10 0.6.10.post1 0.6.11 "
    "0.6.11.post1 0.6.11.post2 0.6.11.post3 0.6.12 0.6.13".split()
)
# kernels: the first release read that refuses an unversioned repository, the last before it.
KERNELS_REFUSES_FROM = "0.15.1"
KERNELS_LAST_ACCEPTING = "0.14.1"
# transformers: the first release read whose hub_kernels.py names a version for each.
TRANSFORMERS_VERSIONED_FROM = "5.13.0"

# The message, not a warning that quotes it (FlashInfer 0.7.2 on: "Ignoring incompatible
# flashinfer-cubin package ...: flashinfer-cubin version ...").
MISMATCHED = re.compile(
    r"^(?!.*Ignoring incompatible).*?\b(flashinfer-cubin|flashinfer-jit-cache) version "
    r"\(([^)\s]+)\) does not match flashinfer version \(([^)\s]+)\)"
)
# The message, not the raise a traceback echoes above it (its source line), nor kernels'
# other refusal ("..., not both.": a caller that named both).
UNVERSIONED = re.compile(r"(?<![(\"'])Either a revision or a version must be specified\.")
# transformers' utils/versions.py: a requirement (a name, extras, then an operator: the
# refusal of another release always has one) and the release found; the source line a
# traceback echoes holds "{requirement}", no requirement.
_REQUIREMENT = r"[A-Za-z0-9][\w.-]*(?:\[[\w,.-]+\])?"
REQUIRED = re.compile(
    rf"(?<![\w{{])({_REQUIREMENT}[<>=!~]\S*?) is required for a normal functioning of this "
    r"module, but found ([\w.-]+)==(\S+?)\.?(?=\s|$)"
)
ABSENT = re.compile(
    rf"The '({_REQUIREMENT}(?:[<>=!~][^']*)?)' distribution was not found and is required by "
    "this application"
)


def mismatched(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """flashinfer-cubin or flashinfer-jit-cache of another release than flashinfer-python."""
    package, installed, flashinfer = m.group(1), m.group(2), m.group(3)
    bypass = Fix(
        "env",
        f"{BYPASS}=1",
        note=f"the switch the message names: FlashInfer then uses the {package} {installed} "
        f"installed with flashinfer {flashinfer}",
    )
    if package == "flashinfer-cubin" and flashinfer in CUBIN_ON_PYPI:
        first = Fix(
            "dependency",
            f"pip install 'flashinfer-cubin=={flashinfer}'",
            note="the cubins of the FlashInfer release installed, the one the engine's own "
            "requirement chose",
        )
    elif package == "flashinfer-cubin":
        latest = CUBIN_ON_PYPI[-1]
        first = Fix(
            "dependency",
            "pip uninstall -y flashinfer-cubin",
            note=f"flashinfer-cubin {flashinfer} is not on PyPI (it has releases up to "
            f"{latest}); without the package FlashInfer downloads its own release's cubins to "
            "its cache as it needs them, from FLASHINFER_CUBINS_REPOSITORY (flashinfer/jit/"
            "cubin_loader.py), so the machine needs to reach it",
        )
    else:
        first = Fix(
            "dependency",
            "pip uninstall -y flashinfer-jit-cache",
            note="an optional package of precompiled modules (from FlashInfer's own index, "
            "one per CUDA: 0.6.14+cu129); without it FlashInfer compiles the kernels it "
            "uses as they are first needed",
        )
    since, until = CUBIN_CHECKED if package == "flashinfer-cubin" else JIT_CACHE_CHECKED
    return (
        f"FlashInfer refused, as it was imported, the {package} installed beside it: "
        f"{package} {installed} is not flashinfer {flashinfer}'s release (flashinfer/jit/"
        f"env.py checks it at import, FlashInfer {since} to {until}); the engine imports "
        "FlashInfer for its kernels, so it stops. No config edit helps",
        [first, bypass],
    )


def unversioned(_m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """kernels 0.15.1 on refusing the unversioned kernel repositories transformers up to 5.12
    builds at import."""
    return (
        f"the kernels library installed ({KERNELS_REFUSES_FROM} or later) refuses a kernel "
        "repository named with neither a version nor a revision (kernels/layer/layer.py), and "
        f"transformers before {TRANSFORMERS_VERSIONED_FROM} names its own hub kernels that "
        "way as a model's code is imported (transformers/integrations/hub_kernels.py): the "
        "model cannot be imported. No config edit helps",
        [
            Fix(
                "dependency",
                f"pip install 'kernels<{KERNELS_REFUSES_FROM}'",
                note=f"kernels {KERNELS_LAST_ACCEPTING}, the last release before the refusal; "
                f"transformers {TRANSFORMERS_VERSIONED_FROM} and later name a version for "
                "each kernel (and require kernels 0.15.2 or later), where the engine's "
                "requirement admits them",
            )
        ],
    )


def _install(requirement: str, package: str) -> Fix:
    """The requirement as pip installs it; Python itself is no package pip installs."""
    if package.lower() == "python":
        spec = requirement[len(package) :]
        return Fix("advice", f"a Python {spec} (the venv or image's own interpreter)")
    return Fix(
        "dependency",
        f"pip install '{requirement}'",
        note="the requirement the check names; pip installs a release that satisfies it",
    )


def required(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """transformers' import-time check refusing the release of a dependency installed."""
    requirement, package, found = m.group(1), m.group(2), m.group(3)
    return (
        f"{package} {found} is installed, and the code being imported requires "
        f"{requirement}: transformers checks its own dependencies this way as it is imported "
        "(utils/versions.py, dependency_versions_check.py), and the engine imports transformers "
        "for every model, so it stops. No config edit helps",
        [_install(requirement, package)],
    )


def absent(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """A requirement checked as code is imported (transformers' ``require_version``) that is
    not installed at all."""
    requirement = m.group(1)
    package = re.split(r"[<>=!~\[]", requirement, maxsplit=1)[0]
    return (
        f"{package} is not installed, and the code being imported requires {requirement} "
        "(a requirement checked as it is imported: transformers' utils/versions.py). No config "
        "edit helps",
        [_install(requirement, package)],
    )


DEPENDENCY_CHECK_RULES: tuple[Rule, ...] = (
    ("library-release", MISMATCHED, mismatched),
    ("library-release", UNVERSIONED, unversioned),
    ("library-release", REQUIRED, required),
    ("library-release", ABSENT, absent),
)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
DEPENDENCY_CHECK_MARKERS = (
    "does not match flashinfer version",
    "a revision or a version must be specified",
    "is required for a normal functioning of this module, but found ",
    "' distribution was not found and is required by ",
)
