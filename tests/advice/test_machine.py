"""What the machine lacks, in torch's, the loader's and the OS's words: a driver older than
torch's CUDA, no GPU visible, a CPU-only torch, a CUDA library not installed, an engine
without its compiled extension, a full disk (patcher/advice/machine.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from patcher.advice.doctor import diagnose_text
from tests.conftest import SNAPSHOTS

# One line per rule (test_doctor's marker test takes them with its own cases).
ENVIRONMENT_LINES = [
    "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please "
    "update your GPU driver by downloading and installing a new version from the URL",
    "RuntimeError: No CUDA GPUs are available",
    "AssertionError: Torch not compiled with CUDA enabled",
    "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory",
    "ModuleNotFoundError: No module named 'vllm._C'",
    "OSError: [Errno 28] No space left on device",
    "/usr/bin/python3: Error while finding module specification for "
    "'vllm.entrypoints.openai.api_server' (ModuleNotFoundError: No module named 'vllm')",
    "ImportError: cannot import name 'StructuralTagItem' from 'xgrammar'",
    "AttributeError: module 'vllm.envs' has no attribute 'VLLM_USE_V1'",
    "huggingface_hub.errors.GatedRepoError: 401 Client Error. Cannot access gated repo for url "
    "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct/resolve/main/config.json.",
    # SGLang's warmup (http_server.py) answered by a proxy, as its assertion and as urllib3 logs it
    "AssertionError: res=<Response [502]>, res.text=''",
    '[2025-08-13 11:01:03] http://172.16.37.200:3138 "GET http://0.0.0.0:25600/get_model_info '
    'HTTP/1.1" 403 3582',
    # torch.compile's Inductor failing as vLLM compiles the model (vllm#28982's kind)
    "torch._inductor.exc.InductorError: AssertionError: type(self)=<class "
    "'torch._inductor.scheduler.Scheduler'>",
    # Triton's C helper built with the host compiler: gcc's words, and subprocess's refusal
    "/tmp/tmpab12/main.c:5:10: fatal error: Python.h: No such file or directory",
    "/usr/bin/ld: cannot find -lcuda: No such file or directory",
    "RuntimeError: Failed to find C compiler. Please specify via CC environment variable.",
    "subprocess.CalledProcessError: Command '['/usr/bin/gcc', '/tmp/tmpab12/main.c', '-O3', "
    "'-shared', '-fPIC', '-o', '/tmp/tmpab12/cuda_utils.so', '-lcuda']' returned non-zero exit "
    "status 1.",
    # /dev/shm too small: NCCL's segment (src/os/linux.cc), and SIGBUS in a process
    "node1:1203:1203 [0] misc/shmutils.cc:72 NCCL WARN Error: failed to extend "
    "/dev/shm/nccl-vzIpS6 to 9637892 bytes",
    "Fatal Python error: Bus error",
    # libstdc++'s terminate handler for a std::system_error of EPERM (a seccomp profile)
    "  what():  Operation not permitted",
    # a module of a library the engine imports, which the installed release of it lacks
    "ModuleNotFoundError: No module named 'outlines.fsm.regex'",
    # vllm/platforms/__init__.py: no platform plugin's check passed
    "INFO 05-09 15:43:15 __init__.py:211] No platform detected, vLLM is running on "
    "UnspecifiedPlatform",
    # a module of the engine's own package, a launcher's engine command, torch's fork refusal,
    # Python 3.13's inspect on an older release
    "ModuleNotFoundError: No module named 'vllm.benchmarks.serve'",
    "FileNotFoundError: [Errno 2] No such file or directory: 'vllm'",
    "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
    "multiprocessing, you must use the 'spawn' start method",
    "KeyError: '__firstlineno__'",
    # flashinfer/jit/core.py: no architecture of sm75 or newer to compile for
    "RuntimeError: FlashInfer requires GPUs with sm75 or higher",
    # NCCL's warning from a transport's source file, and torch's wrapper of its failure
    "node4:279:279 [1] transport/nvls.cc:254 NCCL WARN Cuda failure 401 'the operation cannot "
    "be performed in the present state'",
    "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
    # flashinfer/jit/cpp_ext.py's run_ninja over one kernel's folder, named by its URI
    "subprocess.CalledProcessError: Command '['ninja', '-v', '-C', '/root/.cache/flashinfer/90/"
    "cached_ops', '-f', '/root/.cache/flashinfer/90/cached_ops/batch_prefill_with_kv_cache_"
    "dtype_q_bf16_dtype_kv_bf16_dtype_o_bf16_dtype_idx_i32_head_dim_qk_128_head_dim_vo_128_"
    "posenc_0_use_swa_False_use_logits_cap_False_f16qk_False/build.ninja']' returned non-zero "
    "exit status 1.",
    # vLLM's CUDACHECK in its custom all-reduce (csrc/custom_all_reduce.cuh): a CUDA IPC call
    "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:455 'invalid argument'",
    # vllm/config.py's DeviceConfig with no platform detected (0.6.2 to 0.8.2's words)
    "RuntimeError: Failed to infer device type",
]

# the CUDA runtime's own words for a driver older than the CUDA the code was built with
# (snapshots/engines/cuda-driver-errors.txt)
CUDA_DRIVER_LINES = [
    "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version",
    "RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain.",
]


def _line(words: str) -> str:
    """The case line of ENVIRONMENT_LINES holding ``words``."""
    return next(line for line in ENVIRONMENT_LINES if words in line)


@pytest.mark.parametrize(
    ("line", "code"),
    list(
        zip(
            ENVIRONMENT_LINES,
            [
                "cuda-driver",
                "no-gpu",
                "no-gpu",
                "cuda-library",
                "engine-extension",
                "disk-full",
                "engine-missing",
                "library-version",
                "library-version",
                "hub-access",
                "server-proxy",
                "server-proxy",
                "torch-compile",
                "triton-build",
                "triton-build",
                "triton-build",
                "triton-build",
                "shared-memory",
                "shared-memory",
                "container-seccomp",
                "library-module",
                "engine-platform",
                "engine-module",
                "engine-command",
                "cuda-forked",
                "python-version",
                "flashinfer-arch",
                "nccl-transport",
                "nccl-unhandled",
                "flashinfer-build",
                "custom-all-reduce",
                "engine-platform",
            ],
            strict=True,
        )
    ),
)
def test_each_lack_of_the_machine_has_its_answer(line: str, code: str) -> None:
    found = diagnose_text(line + "\n")
    assert found.code == code
    assert found.fixes
    assert not any(f.kind == "transform" for f in found.fixes)  # never the checkpoint's


def test_the_driver_s_cuda_is_read_from_its_version() -> None:
    found = diagnose_text(ENVIRONMENT_LINES[0] + "\n")
    assert "CUDA up to 11.4" in found.cause


def test_the_driver_s_own_library_is_a_gpu_not_visible_and_a_runtime_is_an_install() -> None:
    driver = diagnose_text("OSError: libcuda.so.1: cannot open shared object file: No such file\n")
    assert "--gpus all" in driver.fixes[0].text
    runtime = diagnose_text(ENVIRONMENT_LINES[3] + "\n")
    assert "CUDA 12" in runtime.fixes[0].text


def test_a_cpu_only_torch_under_a_named_release_names_its_pinned_torch() -> None:
    found = diagnose_text(
        "INFO 02-10 17:06:00 [api_server.py:1] vLLM API server version 0.9.2\n"
        + ENVIRONMENT_LINES[2]
        + "\n"
    )
    assert "torch 2.7.0" in found.fixes[0].text  # vllm 0.9.2's wheel: torch==2.7.0


def test_another_module_missing_is_not_the_engine_extension_s() -> None:
    found = diagnose_text("ModuleNotFoundError: No module named 'flash_attn'\n")
    assert found.code != "engine-extension"


def test_the_engine_not_installed_a_shadowing_folder_and_a_wrong_module_are_told_apart() -> None:
    spec = "/env/bin/python: Error while finding module specification for '{}' "
    spec += "(ModuleNotFoundError: No module named '{}')\n"
    absent = diagnose_text(spec.format("vllm.entrypoints.openai.api_server", "vllm"))
    assert "no vllm installed" in absent.cause
    shadowed = diagnose_text(spec.format("vllm.entrypoints.openai_server", "vllm.entrypoints"))
    assert "shadows the installed package" in shadowed.cause


def test_a_warmup_answered_by_a_proxy_exempts_the_server_s_own_address() -> None:
    log = (
        "[2025-10-22 10:27:27] INFO:     Uvicorn running on http://127.0.0.1:9316 (Press CTRL+C "
        "to quit)\n"
        "[2025-10-22 10:29:28] Initialization failed. warmup error: Traceback (most recent call "
        "last):\n"
        '  File "/x/sglang/srt/entrypoints/http_server.py", line 1407, in _execute_server_warmup\n'
        '    assert res.status_code == 200, f"{res=}, {res.text=}"\n'
        "AssertionError: res=<Response [403]>, res.text='<html>\\n<head><title>403 Forbidden"
        "</title></head>'\n"
    )
    found = diagnose_text(log)
    assert found.code == "server-proxy"
    assert "HTTP 403" in found.cause and "403 Forbidden" in found.cause
    assert found.fixes[0].kind == "env" and "127.0.0.1" in found.fixes[0].text


def test_a_proxied_request_to_another_host_exempts_that_host_and_a_200_is_no_failure() -> None:
    line = '"GET http://10.0.0.5:30000/get_model_info HTTP/1.1" {} 3582\n'
    found = diagnose_text(line.format(403))
    assert found.code == "server-proxy" and "10.0.0.5" in found.fixes[0].text
    assert diagnose_text(line.format(200)).code != "server-proxy"


def test_a_lazy_import_s_wrapper_gives_way_to_the_error_on_the_next_line() -> None:
    # transformers 4's _LazyModule._get_module: the import's own error follows the wrapper
    found = diagnose_text(
        "RuntimeError: Failed to import transformers.models.bert.modeling_bert because of the "
        "following error (look up to see its traceback):\n"
        "/usr/local/lib/python3.12/dist-packages/flash_attn_2_cuda.cpython-312-x86_64-linux-gnu"
        ".so: undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationE\n"
    )
    assert found.code == "undefined-symbol"
    assert "flash-attn" in found.fixes[0].text


def test_python_3_13_under_a_release_that_excludes_it_names_the_first_that_admits_it() -> None:
    # Requires-Python read per release: 0.8.5.post1 to 0.10.1 say <3.13, 0.11.0 on admit 3.13
    # (0.4.3 to 0.7.3 bound nothing, which is no evidence)
    found = diagnose_text(
        '  File "/v/lib/python3.13/site-packages/vllm/entrypoints/cli/main.py", line 46\n'
        "KeyError: '__firstlineno__'\n"
    )
    assert found.fixes[0].text == "pip install 'vllm>=0.11.0'"
    # vLLM's entry point in the traceback says whose log it is: no SGLang release named
    assert all("sglang" not in f.text for f in found.fixes)


def test_the_fork_refusal_is_vllm_s_variable_only_under_vllm() -> None:
    vllm = diagnose_text(_line("Cannot re-initialize CUDA") + "\n")
    assert vllm.fixes[0].text == "VLLM_WORKER_MULTIPROC_METHOD=spawn"
    sglang = diagnose_text(
        "[2025-01-01 00:00:00] server_args=ServerArgs(model_path='m')\n"
        + _line("Cannot re-initialize CUDA")
        + "\n"
    )
    assert sglang.code == "cuda-forked"
    assert all("VLLM_" not in f.text for f in sglang.fixes)


def test_a_module_of_the_engine_missing_is_not_its_compiled_extension() -> None:
    assert diagnose_text(ENVIRONMENT_LINES[4] + "\n").code == "engine-extension"
    assert diagnose_text(_line("vllm.benchmarks.serve") + "\n").code == "engine-module"


def test_a_transport_s_warning_names_its_switch_and_the_wrapper_alone_asks_for_it() -> None:
    shm = diagnose_text(
        "h:1:1 [0] transport/shm.cc:120 NCCL WARN Call to posix_fallocate failed\n"
        "RuntimeError: NCCL error: unhandled system error\n"
    )
    assert shm.code == "nccl-transport"
    assert [f.text for f in shm.fixes] == ["NCCL_SHM_DISABLE=1"]
    nvls = diagnose_text(
        "transport/nvls.cc:287 NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory\n"
    )
    assert [f.text for f in nvls.fixes] == ["NCCL_NVLS_ENABLE=0"]
    alone = diagnose_text(_line("NCCL error: unhandled cuda error") + "\n")
    assert [f.kind for f in alone.fixes] == ["advice"]  # no switch guessed
    assert "NCCL_DEBUG=INFO" in alone.fixes[0].text


def test_a_system_error_alone_names_the_shared_memory_its_set_up_asks_for() -> None:
    # ncclSystemError: a system call failed; NCCL's segment in /dev/shm (ncclOsShmOpen,
    # read from its source) is the one every communicator on a machine makes
    from tests.conftest import SNAPSHOTS

    assert "ncclSystemError" in (SNAPSHOTS / "engines" / "nccl-shm.txt").read_text()
    for line in (
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
        "torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
        "NCCLUtils.hpp:268, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL "
        "version 2.21.5",
    ):
        found = diagnose_text(line + "\n")
        assert found.code == "nccl-unhandled"
        assert "NCCL_DEBUG=INFO" in found.fixes[0].text
        assert "--ipc=host" in found.fixes[1].text and found.fixes[1].kind == "advice"
    # a CUDA error is not a system call's: nothing about shared memory
    cuda = diagnose_text("RuntimeError: NCCL error: unhandled cuda error\n")
    assert all("shm" not in f.text and "shared memory" not in f.text for f in cuda.fixes)


def test_each_transport_s_switch_is_the_one_nccl_s_source_reads() -> None:
    from pathlib import Path

    from patcher.advice.nccl_transports import SWITCHES

    recorded = (
        Path(__file__).parents[2] / "snapshots" / "engines" / "nccl-transport-switches.txt"
    ).read_text()
    for switch, _ in SWITCHES.values():
        name = switch.split("=")[0]
        # NCCL_PARAM(X, "NAME") reads NCCL_NAME; paths.cc reads "NCCL_P2P_DISABLE" whole
        assert f'"{name.removeprefix("NCCL_")}"' in recorded or f'"{name}"' in recorded, name


def test_the_cuda_runtime_s_refusal_of_an_older_driver_is_a_newer_driver() -> None:
    snapshot = Path(__file__).parents[2] / "snapshots" / "engines" / "cuda-driver-errors.txt"
    strings = re.findall(r'string: "([^"]+)"', snapshot.read_text())
    assert len(strings) == 2  # cudaErrorInsufficientDriver, cudaErrorUnsupportedPtxVersion
    for words in strings:
        found = diagnose_text(f"RuntimeError: CUDA error: {words}\n")
        assert found.code == "cuda-driver", words
        assert found.fixes[0].text.startswith("a newer NVIDIA driver")
        assert "no config edit helps" in found.cause


def test_the_custom_all_reduce_refusing_keeps_the_graphs_and_names_the_allocator() -> None:
    # SGLang's kernel names its file and line under the error (sgl-kernel's custom_all_reduce)
    found = diagnose_text(
        "[2025-10-22 08:00:00] server_args=ServerArgs(model_path='m', tp_size=4)\n"
        "RuntimeError: invalid argument\n"
        "/sgl-kernel/csrc/allreduce/custom_all_reduce.cuh:350\n"
        "Exception: Capture cuda graph failed: invalid argument\n"
    )
    assert found.code == "custom-all-reduce"
    assert found.fixes[0].text == "--disable-custom-all-reduce"
    assert "SGLang" in found.fixes[0].note
    assert "expandable_segments" in found.fixes[1].text
    # vLLM 0.4's CUDACHECK printed no "Cuda error"
    old = diagnose_text(
        "Failed: /home/runner/work/vllm/vllm/csrc/custom_all_reduce.cuh:310 'invalid argument'\n"
    )
    assert old.code == "custom-all-reduce" and "vLLM" in old.fixes[0].note


PLATFORM = (SNAPSHOTS / "engines" / "vllm-platform-detection.txt").read_text()


def test_a_release_that_imports_pynvml_as_is_gets_pynvml_12_first() -> None:
    # 0.6.2 and 0.7.1 "import pynvml" and count any failure as no GPU; 0.7.2 loads
    # nvidia-ml-py's module by path (import_pynvml), its docstring naming pynvml < 12.0
    assert "        import pynvml\n        pynvml.nvmlInit()" in PLATFORM
    assert "TL;DR: if users have pynvml<12.0 installed, it will cause problems." in PLATFORM
    assert 'raise RuntimeError("Failed to infer device type")' in PLATFORM
    old = diagnose_text(
        "INFO 02-06 10:00:00 api_server.py:1] vLLM API server version 0.7.1\n"
        "RuntimeError: Failed to infer device type\n"
    )
    assert old.code == "engine-platform"
    assert old.fixes[0].text == "pip install -U 'pynvml>=12'"
    new = diagnose_text(
        "INFO 02-06 10:00:00 api_server.py:1] vLLM API server version 0.7.3\n"
        "RuntimeError: Failed to infer device type\n"
    )
    assert not any("pynvml" in f.text for f in new.fixes)
    assert new.fixes[0].text.startswith("make the GPUs visible")


def test_the_later_wording_names_its_releases_and_the_echoed_raise_is_not_the_error() -> None:
    later = diagnose_text(
        "RuntimeError: Failed to infer device type, please set the environment variable "
        "`VLLM_LOGGING_LEVEL=DEBUG` to turn on verbose logging to help debug the issue.\n"
    )
    assert later.code == "engine-platform"
    assert not any("pynvml" in f.text for f in later.fixes)  # 0.8.3 on: import_pynvml
    assert later.fixes[-1].text == "VLLM_LOGGING_LEVEL=DEBUG"
    echoed = diagnose_text(
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/config.py", line 1626, in '
        "__init__\n"
        '    raise RuntimeError("Failed to infer device type")\n'
        "RuntimeError: Failed to infer device type\n"
    )
    assert echoed.error == "RuntimeError: Failed to infer device type"
