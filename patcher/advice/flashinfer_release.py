"""doctor's answer when a compiled kernel function is called with another number of arguments
than it takes: the caller and the kernels are of two releases. In the callee's own words
(snapshots/engines/flashinfer-call-arguments.txt):

- tvm-ffi, which FlashInfer's modules are built with from 0.4 (``function_detail.h``):
  "Mismatched number of arguments when calling: `plan(0: ffi.Tensor, ...) -> Array<int>`.
  Expected 18 but got 15 arguments";
- torch's custom operators, which older FlashInfer modules are (``pybind_utils.h``):
  "batch_prefill_with_kv_cache_...::plan() expected at most 16 argument(s) but received 17
  argument(s)", "...::plan() is missing value for argument '_15'".

vLLM and SGLang call FlashInfer's compiled ``plan`` themselves, positionally, with the count the
FlashInfer their release pins takes (vLLM 0.11.0's ``fast_plan_decode``: "Make sure we pass
exactly 15 arguments for tensor core version", beside ``flashinfer-python==0.3.1``). A
FlashInfer of another release takes another count, and the server stops as it plans its first
batch or captures its CUDA graphs. The answer is the flashinfer-python the log's release pins
(the catalogue's ``requires``, read per release); FlashInfer is known by the engine's file that
called it (``vllm/v1/attention/backends/flashinfer.py``, SGLang's ``flashinfer_backend.py``) or
by the names FlashInfer gives its attention modules (``jit/attention/modules.py``:
``batch_prefill_with_kv_cache_dtype_q_...``). Another kernel package gets the same cause and
the engine's pins as advice, no release named."""

from __future__ import annotations

import re

from patcher.advice.catalogue import Engine, at_or_below, feature_releases, features_of
from patcher.advice.log_lines import engine_file
from patcher.advice.log_rules import Fix, LogContext, Rule

# The names FlashInfer's JIT gives its attention modules (jit/attention/modules.py's get_*_uri).
MODULE_NAMES = (
    "single_decode_with_kv_cache_dtype_q_",
    "batch_decode_with_kv_cache_dtype_q_",
    "batch_mla_attention_dtype_q_",
    "batch_decode_mla_with_kv_cache_dtype_q_",
    "single_prefill_with_kv_cache_dtype_q_",
    "batch_prefill_with_kv_cache_dtype_q_",
    "batch_prefill_with_attention_sink_kv_cache_dtype_q_",
    "batch_attention_with_kv_cache_dtype_q_",
)
# tvm-ffi's words (function_detail.h): the name and signature between backquotes, then counts.
TVM_FFI = re.compile(
    r"Mismatched number of arguments when calling: `([\w.:]*)[^`]*`\. Expected (\d+) but got "
    r"(\d+) arguments"
)
# torch's (pybind_utils.h): the operator's schema name, then the count or the argument missing.
TORCH_OP = re.compile(
    r"\b([\w.]+::\w+)\(\) (?:expected at most (\d+) argument\(s\) but received (\d+) "
    r"argument\(s\)|is missing value for argument '(\w+)')"
)


def _pinned(engine: Engine, version: tuple[int, ...] | None) -> tuple[str, str] | None:
    """The flashinfer-python the newest release read of ``engine`` at or below ``version``
    pins, with that release; None where none pins one."""
    if version is None:
        return None
    pins: dict[str, str] = {}
    for requirement in features_of(engine, "requires"):
        name, _, pinned = requirement.partition("==")
        if pinned and name.lower().replace("_", "-") == "flashinfer-python":
            pins.update(dict.fromkeys(feature_releases(engine, "requires", requirement), pinned))
    answering = at_or_below(pins, version)
    return (answering, pins[answering]) if answering is not None else None


def _engine(ctx: LogContext) -> Engine | None:
    called = engine_file(ctx.frame)
    if called is not None:
        return called[0]
    return ctx.engine if ctx.engine in ("vllm", "sglang") else None  # type: ignore[return-value]


def _by_flashinfer(name: str, ctx: LogContext) -> bool:
    """Whether FlashInfer is the callee: the engine's frame that called it is its FlashInfer
    backend's file, or the name is one FlashInfer gives its modules."""
    called = engine_file(ctx.frame)
    return (called is not None and "flashinfer" in called[1]) or any(
        name.startswith(prefix) for prefix in MODULE_NAMES
    )


def argument_count(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A compiled function called with another number of arguments than it takes."""
    name = m.group(1) or "a compiled function"
    if m.group(2) is not None and m.re is TVM_FFI:
        counted = f"it takes {m.group(2)} arguments, the call passed {m.group(3)}"
    elif m.group(2) is not None:
        counted = f"it takes at most {m.group(2)} arguments, the call passed {m.group(3)}"
    else:
        counted = f"the call left out its argument {m.group(4)}"
    engine = _engine(ctx)
    named = {"vllm": "vLLM", "sglang": "SGLang"}.get(engine or "", "the engine")
    show = f"pip show {engine}" if engine else "pip show vllm, or sglang,"
    if not _by_flashinfer(name, ctx):
        return (
            f"a compiled kernel function ({name}) and its caller are of two releases: {counted}",
            [
                Fix(
                    "advice",
                    f"the kernel packages {named}'s release pins ({show} lists them), installed "
                    "again at those releases",
                )
            ],
        )
    cause = (
        f"the FlashInfer installed is another release than the one {named}'s code calls "
        f"({name}: {counted})"
    )
    # the log's release is vLLM's (the only engine whose logs name theirs): none for another
    pinned = _pinned(engine, ctx.version) if engine is not None and engine == ctx.engine else None
    if pinned is None:
        return cause, [
            Fix(
                "advice",
                f"the flashinfer-python {named}'s release pins ({show} lists it), installed at "
                "that release",
            )
        ]
    release, flashinfer = pinned
    log = ".".join(str(p) for p in ctx.version or ())
    read = "" if release.startswith(log) else f", read in {release}"
    return cause, [
        Fix(
            "dependency",
            f"pip install flashinfer-python=={flashinfer}",
            note=f"the release {named} {log} pins{read}",
        )
    ]


FLASHINFER_RELEASE_RULES: tuple[Rule, ...] = (
    ("library-release", TVM_FFI, argument_count),
    ("library-release", TORCH_OP, argument_count),
)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
FLASHINFER_RELEASE_MARKERS = (
    "Mismatched number of arguments when calling",
    "but received ",
    "is missing value for argument '",
)
