"""doctor on Triton's C helper failing to build with the machine's compiler (read from triton
3.2.0 and 3.5.0, snapshots/engines/triton-c-build.txt): the compiler, the C library's headers,
the Python headers or libcuda.so, never eager mode, which the engines' own Triton kernels do
not escape."""

from __future__ import annotations

from patcher.advice.doctor import diagnose_text
from tests.conftest import SNAPSHOTS

COMMAND = (
    "CalledProcessError: Command '['/usr/bin/gcc', '/tmp/tmpuca253mo/main.c', '-O3', '-shared', "
    "'-fPIC', '-o', '/tmp/tmpuca253mo/cuda_utils.cpython-311-x86_64-linux-gnu.so', '-lcuda', "
    "'-L/usr/lib/x86_64-linux-gnu', '-I/usr/include/python3.11']' returned non-zero exit status 1."
)
WORKER = "(VllmWorkerProcess pid=802) ERROR 04-23 00:04:19 multiproc_worker_utils.py:240] "


def test_the_recording_holds_what_the_answers_say() -> None:
    text = (SNAPSHOTS / "engines" / "triton-c-build.txt").read_text()
    for release in ("3.2.0", "3.5.0"):
        assert f"{release} triton/runtime/build.py" in text
        assert f"{release} triton/backends/nvidia/driver.py" in text
    for said in (
        'os.environ.get("CC")',
        'shutil.which("gcc")',
        "Failed to find C compiler",
        "py_include_dir",
        "libcuda_dirs",
        "libcuda.so.1",
        "TRITON_LIBCUDA_PATH",
    ):
        assert said in text, said


def test_inductor_s_failure_quoting_triton_s_build_is_the_machine_s_not_compile_s() -> None:
    log = (
        f"{WORKER}torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
        f"{WORKER}{COMMAND}\n"
        f'{WORKER}Set TORCH_LOGS="+dynamo" and TORCHDYNAMO_VERBOSE=1 for more information\n'
    )
    found = diagnose_text(log)
    assert found.code == "triton-build"
    assert not any("enforce-eager" in f.text for f in found.fixes)
    texts = " ".join(f.text for f in found.fixes)
    assert "build-essential" in texts and "python3-dev" in texts and "TRITON_LIBCUDA_PATH" in texts


def test_the_compiler_s_own_words_name_the_one_thing_missing() -> None:
    python = diagnose_text(
        "/tmp/tmpab/main.c:5:10: fatal error: Python.h: No such file or directory\n" + COMMAND
    )
    assert python.code == "triton-build"
    assert [f.text for f in python.fixes][0].startswith("install the headers of the Python")
    assert len(python.fixes) == 1
    libc = diagnose_text("/tmp/tmpab/main.c:1:10: fatal error: stdlib.h: No such file or directory")
    assert "build-essential" in libc.fixes[0].text and len(libc.fixes) == 1
    libcuda = diagnose_text(
        "/usr/bin/ld: cannot find -lcuda: No such file or directory\n" + COMMAND
    )
    assert "TRITON_LIBCUDA_PATH" in libcuda.fixes[0].text and len(libcuda.fixes) == 1


def test_another_build_s_missing_header_is_not_triton_s() -> None:
    found = diagnose_text(
        "/root/.cache/flashinfer/generated/batch_prefill.cu:3:10: fatal error: "
        "cuda_runtime.h: No such file or directory"
    )
    assert found.code != "triton-build"
    # the C library's own header, as a report quotes it without the file: the machine's lack
    # whichever build asked for it (xinference#2925's kind)
    bare = diagnose_text("fatal error: stdlib.h: No such file or directory")
    assert "build-essential" in bare.fixes[0].text and "Triton's helper" in bare.cause


def test_a_compile_error_with_its_cause_inline_is_still_torch_compile() -> None:
    found = diagnose_text(
        f"{WORKER}torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised: TypeError: "
        "'int' object is not iterable\n"
    )
    assert found.code == "torch-compile" and found.fixes[0].text == "--enforce-eager"
