"""torch.compile failing while the engine starts: an error of torch's own compiler stack
(``torch._dynamo.exc.*`` while Dynamo traces the model, ``torch._inductor.exc.*`` while Inductor
writes and builds its kernels), raised as the engine compiles the model before serving.

vLLM's V1 engine compiles the model with torch.compile unless ``--enforce-eager`` is set: read
in each release's ``VllmConfig`` (``snapshots/engines/torch-compile-eager.txt``): 0.8.5 to 0.11
compile (level PIECEWISE) only without it, 0.12 to 0.16 lower the optimization level to -O0
under it, whose compilation mode is NONE, and 0.17 on set the mode NONE outright. SGLang
compiles only when ``--enable-torch-compile`` asks it to. Eager mode costs the CUDA graphs too
(slower decoding), so the cause is named as well: a torch build the release was not made with
(a torch newer than the one it pins), an op of the model Inductor cannot lower, or a stale
compile cache.
"""

from __future__ import annotations

import re
import shlex

from patcher.advice.catalogue import feature_releases
from patcher.advice.diagnosis import Diagnosis
from patcher.advice.log_lines import RAISED
from patcher.advice.log_rules import Fix, LogContext, vllm_env

# The exception a traceback's last line names: torch._dynamo.exc.BackendCompilerFailed,
# TorchRuntimeError, Unsupported; torch._inductor.exc.InductorError, LoweringException.
# (The dot after "torch" unescaped, so the line filter's word is plain text of the pattern.)
# Triton's ptxas failing under Inductor ("InductorError: PTXASError: ...") is passed over too: its
# reason is ptxas's own next lines, and the engine's own Triton kernels run the same ptxas.
# BackendCompilerFailed's "backend='inductor' raised:" with the error on the next line is passed
# over: that line says what failed (Triton's C build is the machine's, not the compiler's).
FAILED = re.compile(
    r"\btorch._(dynamo|inductor)\.exc\."
    r"(?!BackendCompilerFailed: backend='\w+' raised:\s*$|InductorError: (?:[\w.]+\.)?PTXASError)"
    r"(\w+)"
)
MARKERS = ("torch._",)
# The first release whose VllmConfig the recording shows leaving the model uncompiled under
# enforce_eager (V1's default), and the reading it comes from.
EAGER_SINCE = "0.8.5.post1"
RECORDING = "snapshots/engines/torch-compile-eager.txt"

_STAGE = {
    "dynamo": "Dynamo, tracing the model",
    "inductor": "Inductor, writing and building its kernels",
}


def compile_failed(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A torch.compile error at start-up: eager mode, which skips it, and the torch the
    release pins, which is the usual cause."""
    cause = (
        f"torch.compile failed in {_STAGE[m.group(1)]} ({m.group(2)}) while the engine compiled "
        "the model at start-up: a torch build the engine release was not made with, an op of "
        "the model the compiler cannot lower, or a stale compile cache"
    )
    sglang = Fix(
        "advice",
        "leave out --enable-torch-compile",
        note="SGLang compiles the model only when that flag asks it to",
    )
    if ctx.engine == "sglang":
        return cause, [sglang]
    flags = feature_releases("vllm", "flags", "--enforce-eager")
    last = flags[-1] if flags else EAGER_SINCE
    fixes = [
        Fix(
            "flag",
            "--enforce-eager",
            note="vLLM then runs the model without torch.compile and without CUDA graphs "
            f"(slower decoding): its VllmConfig leaves the model uncompiled under it (read in "
            f"vLLM {EAGER_SINCE} to {last})",
        ),
        Fix(
            "advice",
            "or the torch the engine release pins (pip show torch, against the release's "
            "requirement), with the compile cache (~/.cache/vllm/torch_compile_cache) removed",
        ),
    ]
    if ctx.engine is None:
        fixes.append(sglang)
    return cause, fixes


# The directory vLLM's compiled artifacts live in ($VLLM_CACHE_ROOT/torch_compile_cache/HASH,
# ~/.cache/vllm by default), as a traceback's frame names a file under it.
_CACHED = re.compile(r'File "(?P<dir>[^"]*/torch_compile_cache/[^/"]+)/[^"]*\.py"')
# Errors of the code's own shape: what code generated for one graph raises when run with
# another's inputs ("not enough values to unpack (expected 13, got 12)"). A CUDA error or an
# out-of-memory raised in compiled code is the GPU's, not the cache's.
_SHAPE_ERRORS = frozenset(
    {"ValueError", "TypeError", "IndexError", "KeyError", "AttributeError", "AssertionError"}
)


def from_compile_cache(line: str, ctx: LogContext) -> Diagnosis | None:
    """An error of the code's shape raised in a file of vLLM's torch.compile cache: the code
    that failed is the cached artifact, written for another graph (another release, model or
    set of flags) or left half-written, not the engine's source. vLLM compiles anew once the
    directory is gone; VLLM_DISABLE_COMPILE_CACHE (read in the releases' envs) skips the
    cache altogether."""
    raised = RAISED.match(line)
    if raised is None or raised["kind"] not in _SHAPE_ERRORS:
        return None
    cached = _CACHED.search(ctx.frame or "")
    if cached is None:
        return None
    directory = cached.group("dir")
    fixes = [
        Fix(
            "advice",
            f"rm -rf {shlex.quote(directory)}",
            note="the cached artifact the failing code was loaded from; vLLM compiles anew",
        )
    ]
    fixes += vllm_env(
        "VLLM_DISABLE_COMPILE_CACHE=1", "compile without reading or writing the cache", ctx.version
    )
    cause = (
        f"the code that raised it is vLLM's cached torch.compile artifact ({directory}), not "
        "the engine's source: a cache that does not fit the graph this start traced (written by "
        "another release, model or set of flags, or left half-written by a crash)"
    )
    return Diagnosis("-", "compile-cache", line.strip(), cause, tuple(fixes), None)
