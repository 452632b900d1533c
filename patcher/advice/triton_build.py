"""Triton building its C helpers with the machine's C compiler, and failing.

The first time a Triton kernel runs (the engines' attention and MoE kernels, torch.compile's
Inductor kernels), Triton builds small C modules (its CUDA driver utilities, ``cuda_utils``,
and each kernel's launcher) from a ``main.c`` with the host compiler. Read in triton 3.2.0 and
3.5.0 (``snapshots/engines/triton-c-build.txt``): ``triton/runtime/build.py`` takes ``$CC``,
else clang or gcc, and raises "Failed to find C compiler" without one; it links ``-lcuda`` from
the directories ``libcuda_dirs()`` names (``TRITON_LIBCUDA_PATH``, else where ``ldconfig -p``
finds ``libcuda.so.1``) and includes the running Python's headers (``Python.h``, sysconfig's
include directory). So the failure is the machine's: the compiler, the C library's headers,
the Python headers, or ``libcuda.so`` where the linker looks. Eager mode does not avoid it:
the engines' own Triton kernels build the same helpers.
"""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix, LogContext

# subprocess's refusal of Triton's compile command: the compiler, then the main.c it writes
# (cuda_utils.c on Windows builds).
COMMAND = re.compile(r"Command '\['[^']*', '[^']*\b(?:main|cuda_utils)\.c'")
NO_COMPILER = re.compile(r"Failed to find C compiler")
# The compiler's own words, printed above the command: a header it did not find, the driver
# library the linker did not.
# Python's own header or the C library's: whatever the build (Triton's main.c, another JIT's
# source), the machine lacks them; a header of anything else is that package's.
NO_HEADER = re.compile(
    r"fatal error: ((?:Python|std(?:lib|io|def|int|arg|bool)|string|limits|math|errno|unistd|"
    r"dlfcn)\.h): No such file or directory"
)
TRITON_SOURCE = re.compile(r"\b(?:main|cuda_utils)\.c:\d+:\d+: fatal error")
NO_LIBCUDA = re.compile(r"cannot find -lcuda\b")
MARKERS = ("Command '", "Failed to find C compiler", "fatal error: ", "cannot find -lcuda")

_CAUSE = (
    "Triton builds a C helper (its CUDA driver utilities or a kernel's launcher) with the "
    "machine's C compiler the first time a Triton kernel runs, and the build failed: {}; "
    "no engine flag avoids it (--enforce-eager does not: the engine's own Triton kernels build "
    "the same helper)"
)
_PYTHON_HEADERS = Fix(
    "advice",
    "install the headers of the Python that runs the engine (Debian/Ubuntu: apt-get install "
    "python3-dev, for that Python's version; or a Python build that ships them)",
    note="Triton includes Python.h from that Python's include directory (sysconfig)",
)
_C_TOOLCHAIN = Fix(
    "advice",
    "install a C compiler with the C library's headers (Debian/Ubuntu: apt-get install "
    "build-essential), or point CC at one",
    note="Triton takes $CC, else clang or gcc (triton/runtime/build.py)",
)
_LIBCUDA = Fix(
    "advice",
    "make libcuda.so (not only libcuda.so.1) visible to the linker: TRITON_LIBCUDA_PATH=DIR, a "
    "directory that holds it (the CUDA toolkit's lib64/stubs), or a libcuda.so link beside the "
    "driver's libcuda.so.1",
    note="Triton links -lcuda from TRITON_LIBCUDA_PATH, else where ldconfig -p finds libcuda.so.1",
)


def missing_header(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """A header the compiler did not find: Python's, or the C library's."""
    header = m.group(1)
    what = (
        "the Python headers are not installed"
        if header == "Python.h"
        else f"the compiler found no {header} (the C library's headers are not installed)"
    )
    cause = (
        _CAUSE.format(what)
        if TRITON_SOURCE.search(m.string)
        else f"a C build the engine runs as it starts (Triton's helper, a JIT kernel): {what}"
    )
    return cause, [_PYTHON_HEADERS if header == "Python.h" else _C_TOOLCHAIN]


def missing_libcuda(_m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """The linker found no libcuda.so."""
    return _CAUSE.format("the linker found no libcuda.so"), [_LIBCUDA]


def no_compiler(_m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """No C compiler on the machine."""
    return _CAUSE.format("there is no C compiler"), [_C_TOOLCHAIN]


def build_failed(_m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """The compile command failed, its own error not in the log: what it needs, in turn."""
    return _CAUSE.format("the compiler's own error, printed above the command, names what"), [
        _C_TOOLCHAIN,
        _PYTHON_HEADERS,
        _LIBCUDA,
    ]
