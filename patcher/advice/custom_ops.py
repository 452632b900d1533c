"""doctor's answer when vLLM's compiled extension has no op its Python calls: PyTorch's
``AttributeError: '_OpNamespace' '_C' object has no attribute 'rms_norm'`` (the op looked up in
``torch.ops._C``, ``_C_cache_ops``, ``_moe_C``...), which vLLM's own wrapper
(``_custom_ops.py``, ``hint_on_error``: 0.5.0.post1 on, read) logs as "Possibly you have built or
installed an obsolete version of vllm. Please try a clean build and install of vllm, or remove
old built files such as vllm/*cpython*.so and build/". The extension and the Python files are
then of different builds: a source tree whose ``.so`` files were built from older sources, a
release's files left beside another's, or a build made for another device (a CPU or "empty"
build has none of the CUDA ops). Where an earlier line says the extension failed to import
("Failed to import from vllm._C with ..."), that line's rule answers first (glibc, CUDA
libraries, a source tree with no build).
"""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix, LogContext, Rule

# vLLM's wrapper's own words, logged on a line of their own.
OBSOLETE = re.compile(r"Possibly you have built or installed an obsolete version of vllm")
# PyTorch's words for an op its registry does not hold, in one of vLLM's op namespaces.
MISSING_OP = re.compile(r"'_OpNamespace' '(_\w*C\w*)' object has no attribute '(\w+)'")
# Why an op is missing from the extension that did import.
_BUILDS = (
    "the extension and vLLM's Python files are of different builds (a source tree's .so files "
    "built from older sources, files of another release left behind, or a build for another "
    "device)"
)


def _reinstall(ctx: LogContext) -> list[Fix]:
    release = ".".join(map(str, ctx.version)) if ctx.version else "VERSION"
    return [
        Fix(
            # a command to run as printed only where the log names its release
            "dependency" if ctx.version else "advice",
            f"pip install --force-reinstall --no-cache-dir 'vllm=={release}'",
            note="vLLM's own remedy (_custom_ops.py): a clean install, so that its compiled "
            "extension and its Python files are of one release; VERSION: the release you run"
            if release == "VERSION"
            else "vLLM's own remedy (_custom_ops.py): a clean install of the release the log "
            "names, so that its compiled extension and its Python files are of one build",
        ),
        Fix(
            "advice",
            "or, for vLLM built from a source tree: remove vllm/*.so and build/ there and "
            "build again (a CUDA build, not VLLM_TARGET_DEVICE=cpu or empty, for CUDA ops), or "
            "start the server from outside the tree",
        ),
    ]


def obsolete_build(_m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """vLLM's wrapper saying its compiled extension lacks an op: the build is not the one its
    Python files expect."""
    if ctx.extension_failed:  # no fix here: the import failure's own line answers
        return "vLLM's compiled extension did not import (an earlier line)", []
    return (
        f"vLLM's compiled extension (vllm/_C*.so) has no op its Python code calls: {_BUILDS}",
        _reinstall(ctx),
    )


def missing_op(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """``'_OpNamespace' '_C' object has no attribute 'X'``: op X is not in the loaded
    extension."""
    namespace, op = m.group(1), m.group(2)
    if ctx.extension_failed:  # no fix here: the import failure's own line answers
        return "vLLM's compiled extension did not import (an earlier line)", []
    return (
        f"vLLM called the compiled op {namespace}.{op}, which the extension it loaded does "
        f"not register: {_BUILDS}",
        _reinstall(ctx),
    )


CUSTOM_OPS_RULES: tuple[Rule, ...] = (
    ("obsolete-build", OBSOLETE, obsolete_build),
    ("obsolete-build", MISSING_OP, missing_op),
)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
CUSTOM_OPS_MARKERS = ("obsolete version", "_OpNamespace")
