"""doctor's answers when the machine lacks what the engine needs: a GPU it can reach, the
libraries beside the engine at the versions its release requires (requirements.py), the
engine itself where Python runs, room on disk. In their own words: torch's refusals
(``torch/cuda/__init__.py``'s ``_check_driver`` and ``_lazy_init``: "The NVIDIA driver on your
system is too old", "Found no NVIDIA driver", "Torch not compiled with CUDA enabled"; its C++
"No CUDA GPUs are available"), the dynamic loader's "cannot open shared object file", Python's
"Error while finding module specification", an engine imported without its compiled
extension, a full disk, torch's build refusing the GPU (kernels.py, torch_builds.py), an
HTTP proxy answering for the server's own address (proxies.py), a Python newer than the release
admits (pythons.py), the engine's command or a module of it not found, CUDA forked, vLLM
finding no device type ("Failed to infer device type"), and a kernel library of another release
than the engine calls (flash_attn_keywords.py, flashinfer_release.py). None is the checkpoint's
or a flag's."""

from __future__ import annotations

import re

from patcher.advice import catalogue
from patcher.advice.bnb_checkpoint import BNB_CHECKPOINT_MARKERS, BNB_CHECKPOINT_RULES
from patcher.advice.catalogue import version_key
from patcher.advice.custom_all_reduce import CUSTOM_ALL_REDUCE_MARKERS, CUSTOM_ALL_REDUCE_RULES
from patcher.advice.custom_ops import CUSTOM_OPS_MARKERS, CUSTOM_OPS_RULES
from patcher.advice.dependency_checks import DEPENDENCY_CHECK_MARKERS, DEPENDENCY_CHECK_RULES
from patcher.advice.driver_calls import DRIVER_CALL_MARKERS, DRIVER_CALL_RULES
from patcher.advice.engine_exports import LIBRARIES, exports, module_elsewhere
from patcher.advice.extensions import torch_pin
from patcher.advice.flash_attn_keywords import FLASH_ATTN_KEYWORD_MARKERS, FLASH_ATTN_KEYWORD_RULES
from patcher.advice.flashinfer_images import FLASHINFER_IMAGE_MARKERS, FLASHINFER_IMAGE_RULES
from patcher.advice.flashinfer_jit import (
    BUILD_FAILED,
    FLASHINFER_JIT_MARKERS,
    REFUSED,
    kernel_unbuilt,
    no_arch,
)
from patcher.advice.flashinfer_release import FLASHINFER_RELEASE_MARKERS, FLASHINFER_RELEASE_RULES
from patcher.advice.glibc import GLIBC_MARKERS, GLIBC_RULES
from patcher.advice.kernels import torch_refuses
from patcher.advice.log_rules import Fix, LogContext, Rule
from patcher.advice.logging_config import LOGGING_MARKERS, LOGGING_RULES
from patcher.advice.module_names import MODULE_NAME_MARKERS, MODULE_NAME_RULES
from patcher.advice.nccl_transports import (
    FAILED,
    PEER,
    UNHANDLED,
    peer_unsupported,
    transport_failed,
    unhandled,
)
from patcher.advice.proxies import PROXIED_REQUEST, WARMUP_REFUSED, proxied_request, warmup_refused
from patcher.advice.ptxas_archs import PTXAS_MARKERS, PTXAS_RULES
from patcher.advice.pythons import FIRSTLINENO, python_too_new
from patcher.advice.rendezvous import RENDEZVOUS_MARKERS, RENDEZVOUS_RULES
from patcher.advice.requirements import ATTRIBUTE_MISSING, missing_attribute, missing_name
from patcher.advice.seccomp import SECCOMP_MARKERS, SECCOMP_RULES
from patcher.advice.shared_memory import SHARED_MEMORY_MARKERS, SHARED_MEMORY_RULES
from patcher.advice.torch_builds import TORCH_REFUSES
from patcher.advice.torch_compile import FAILED as COMPILE_FAILED
from patcher.advice.torch_compile import MARKERS as COMPILE_MARKERS
from patcher.advice.torch_compile import compile_failed
from patcher.advice.torchvision_ops import TORCHVISION_MARKERS, TORCHVISION_RULES
from patcher.advice.triton_build import COMMAND as TRITON_COMMAND
from patcher.advice.triton_build import MARKERS as TRITON_MARKERS
from patcher.advice.triton_build import (
    NO_COMPILER,
    NO_HEADER,
    NO_LIBCUDA,
    build_failed,
    missing_header,
    missing_libcuda,
    no_compiler,
)

_GPU_VISIBLE = Fix(
    "advice",
    "make the GPUs visible to the process: in Docker, docker run --gpus all (the NVIDIA "
    "container toolkit installed); CUDA_VISIBLE_DEVICES unset or naming GPUs nvidia-smi lists",
)


def driver_too_old(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """torch built for a newer CUDA than the installed driver runs."""
    found = int(m.group(1))
    cuda = f"{found // 1000}.{found % 1000 // 10}"
    return (
        f"the NVIDIA driver runs CUDA up to {cuda}, older than the CUDA this torch was built "
        "for: no config edit helps",
        [
            Fix("advice", "a newer NVIDIA driver (nvidia-smi shows the CUDA it runs)"),
            Fix(
                "advice",
                f"or a torch and engine built for CUDA {cuda} or older (the engine's wheels "
                "for that CUDA)",
            ),
        ],
    )


def driver_older(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """The CUDA runtime's own refusal of a driver older than the CUDA the code was built with:
    the runtime library (error 35) or the PTX a kernel was compiled to (error 222;
    snapshots/engines/cuda-driver-errors.txt)."""
    built = "the PTX a kernel was compiled to" if "PTX" in m.group(0) else "its runtime library"
    return (
        f"the NVIDIA driver is older than the CUDA that built the code ({built}): no config "
        "edit helps",
        [
            Fix(
                "advice",
                "a newer NVIDIA driver: the CUDA nvidia-smi shows at least the one the torch "
                "and engine wheels were built for",
                note="python -c 'import torch; print(torch.version.cuda)' shows torch's",
            ),
            Fix(
                "advice",
                "or a torch and engine built for the CUDA the driver runs (the engine's wheels "
                "for that CUDA)",
            ),
        ],
    )


def no_gpu(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """The process sees no GPU, or torch has no CUDA at all."""
    if "not compiled with CUDA" in m.group(0):
        pin = torch_pin(ctx.engines()[0], ctx.version) if ctx.engine else None
        build = f"torch {pin}" if pin else "the torch the engine pins (pip show vllm lists it)"
        return (
            "the torch installed is a CPU-only build: the engine's CUDA kernels cannot run",
            [
                Fix(
                    "advice",
                    f"install the CUDA build of {build}, from the PyTorch index of the CUDA the "
                    "driver runs (https://download.pytorch.org/whl/cuXYZ)",
                ),
            ],
        )
    return (
        "the process sees no GPU: no driver inside it, no device passed to the container, or "
        "CUDA_VISIBLE_DEVICES naming none",
        [_GPU_VISIBLE],
    )


def no_platform(_m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """vLLM found no platform to run on (vllm/platforms/__init__.py: each platform plugin's
    check fails, and every platform method then raises NotImplementedError)."""
    return (
        "vLLM detected no platform: its CUDA check found no GPU through NVML, and the vLLM "
        "installed is not its CPU build (the version it reads from its package metadata has "
        "no 'cpu'); every device call then raises NotImplementedError",
        [
            _GPU_VISIBLE,
            Fix(
                "advice",
                "to run on the CPU: vLLM's CPU build (its version ends in +cpu; built with "
                "VLLM_TARGET_DEVICE=cpu), not the CUDA wheel",
            ),
            Fix(
                "advice",
                "a source checkout run in place: pip install -e . in it, so that the package "
                "metadata vLLM reads its build from exists",
            ),
        ],
    )


def _imports_pynvml_itself() -> tuple[str, ...]:
    """The vLLM releases read that import NVML's binding through their own ``import_pynvml``
    (0.7.2 on: it loads nvidia-ml-py's ``pynvml.py`` by path), from the exports reading."""
    read = exports("vllm")
    if read is None:
        return ()
    return tuple(
        dict.fromkeys(
            r
            for module in ("vllm.utils", "vllm.utils.import_utils")
            for r in read.holding(read.name_mask(module, "import_pynvml"))
        )
    )


def no_device_type(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """vLLM's DeviceConfig found no device type (``device="auto"`` on no platform): its CUDA
    check, which counts GPUs through NVML's Python binding, failed. Before 0.7.2 vLLM imported
    that binding as ``import pynvml``, and the ``pynvml`` package before 12.0 installs a module of
    that name which shadows nvidia-ml-py's (vLLM 0.7.2's ``import_pynvml`` docstring); any
    failure there counts as no GPU."""
    _cause, fixes = no_platform(m, ctx)
    cause = (
        "vLLM could not tell the device type: its CUDA check found no GPU through NVML "
        "(pynvml), so no platform was detected"
    )
    own = _imports_pynvml_itself()
    # the message's wording says which releases raised it where the log names none (0.8.3 on
    # add "please set the environment variable `VLLM_LOGGING_LEVEL=DEBUG`")
    worded = catalogue.match(m.string, "vllm")
    version = ctx.version or (version_key(worded.template.releases[0]) if worded else None)
    bare = version is None or not own or version < version_key(own[0])
    if bare:
        pynvml = Fix(
            "dependency",
            "pip install -U 'pynvml>=12'",
            note="a pynvml package before 12.0 installs its own pynvml module, which shadows "
            f"nvidia-ml-py's; vLLM before {own[0] if own else 'its own import'} imports it as "
            "is (python -c 'import pynvml; print(pynvml.__file__)' ends in __init__.py when it "
            "is that one)",
        )
        known_old = ctx.version is not None and bool(own)
        fixes = [pynvml, *fixes] if known_old else [fixes[0], pynvml, *fixes[1:]]
    if worded is not None and "VLLM_LOGGING_LEVEL" in worded.template.text:
        fixes.append(
            Fix(
                "env",
                "VLLM_LOGGING_LEVEL=DEBUG",
                note="the message's own: the log then says why each platform's check failed",
            )
        )
    return cause, fixes


def missing_library(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """The dynamic loader cannot find a CUDA library the engine's extensions link."""
    library = m.group(1)
    if library.startswith(("libcuda.so", "libnvidia-ml.so")):
        return (
            f"{library} is the NVIDIA driver's own library: the process runs where no driver "
            "is visible",
            [_GPU_VISIBLE],
        )
    runtime = re.match(r"lib(\w+?)\.so\.(\d+)", library)
    major = runtime.group(2) if runtime else "12"
    return (
        f"{library} (a CUDA {major} library) is not installed where the engine runs: the "
        "engine and torch were built for CUDA "
        f"{major}, the environment lacks its runtime libraries",
        [
            Fix(
                "advice",
                f"install the engine's wheel for CUDA {major} with its torch (pip pulls the "
                "nvidia-* runtime packages), or the CUDA toolkit's libraries on LD_LIBRARY_PATH",
            )
        ],
    )


def no_extension(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """An engine imported without its compiled extension."""
    module = m.group(1)
    engine = module.split(".")[0]
    return (
        f"{module} is {engine}'s compiled extension: this {engine} was imported from a source "
        "folder (the current directory is its repository) or installed without a build",
        [
            Fix(
                "advice",
                f"start the server from another directory, or install {engine}'s wheel "
                f"(pip install {engine}) rather than the source tree",
            )
        ],
    )


def engine_missing(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """``python -m vllm...`` where the Python that runs has no such module: the engine not
    installed in its environment, a folder of the engine's name shadowing it, or a module path
    no release has."""
    module, missing = m.group(1), m.group(2)
    engine = module.split(".")[0]
    if missing == engine:
        return (
            f"the Python that ran has no {engine} installed: another environment than the "
            f"one {engine} was installed into",
            [
                Fix(
                    "advice",
                    f"run it with that environment's python (or activate it), or pip install "
                    f"{engine} into this one",
                )
            ],
        )
    if module.startswith(missing + ".") and missing.count(".") == 1:
        return (
            f"{engine} was found but not its {missing}: a folder named {engine} in the "
            "current directory shadows the installed package, or the install is broken",
            [
                Fix(
                    "advice",
                    f"start it from another directory, or pip install --force-reinstall {engine}",
                )
            ],
        )
    return (
        f"{module} is no module of the {engine} installed",
        [
            Fix(
                "advice",
                "the server's module: python -m vllm.entrypoints.openai.api_server, or vllm "
                "serve; SGLang's: python -m sglang.launch_server",
            )
        ],
    )


def engine_module_missing(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A module of the engine's own package missing: a release without that module, where the
    releases read show others have it (a plugin written for another release;
    engine_exports.py), else the ``vllm`` Python found is not the release installed (a source
    folder of that name in the working directory)."""
    module = m.group(1)
    engine = module.split(".")[0]
    elsewhere = module_elsewhere(module, ctx)
    if elsewhere is not None:
        return elsewhere
    return (
        f"the {engine} Python imports has no {module}: a {engine} source folder in the working "
        "directory shadows the installed release, or a plugin or script written for another "
        f"release of {engine} asks for it",
        [
            Fix(
                "advice",
                f"start it from another directory; python -c 'import {engine}; "
                f"print({engine}.__file__, {engine}.__version__)' tells which {engine} it finds",
            ),
            Fix(
                "advice",
                f"or the {engine} release the plugin or script names (pip check lists a plugin's "
                "requirement)",
            ),
        ],
    )


def library_module_missing(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A module of a library the engine imports (``LIBRARIES``) missing from the release of
    it installed (``outlines.fsm.regex`` under outlines 0.1): the library's releases read that
    have it; nothing where every release read has it or none does."""
    return module_elsewhere(m.group(1), ctx) or ("", [])


def engine_command(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """A launcher ran the engine's command (``vllm serve``) and the OS found no such program."""
    command = m.group(1)
    package = {"trtllm-serve": "tensorrt_llm"}.get(command, command)
    return (
        f"the command {command} is not on the PATH of the process that ran it: {package} is not "
        "installed in that environment, or its environment's bin folder is not on PATH",
        [
            Fix(
                "advice",
                f"pip install {package} into the environment the launcher runs in, or activate "
                f"the one it is installed in (which {command} tells where it is)",
            )
        ],
    )


def forked_cuda(_m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """torch refuses CUDA in a process forked after its parent initialized CUDA (torch's
    ``_lazy_init``): vLLM's workers start by fork unless told to spawn."""
    fixes = [
        Fix(
            "advice",
            "with vLLM in your own script (LLM(...)), create it under "
            "`if __name__ == '__main__':` and touch no CUDA before it",
        )
    ]
    if ctx.engine != "sglang":  # SGLang starts its processes by spawn itself
        fixes.insert(
            0,
            Fix(
                "env",
                "VLLM_WORKER_MULTIPROC_METHOD=spawn",
                note="vLLM's workers started by spawn: a fresh process with no CUDA of its "
                "parent's",
            ),
        )
    return (
        "CUDA was initialized in the parent before the engine's workers were forked, and a "
        "forked process cannot initialize it again",
        fixes,
    )


def disk_full(_m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """``[Errno 28] No space left on device``."""
    return (
        "a disk the server writes to is full: the Hub cache the weights download into, the "
        "shared memory the workers exchange tensors through (/dev/shm), or the temporary folder",
        [
            Fix("advice", "df -h on the cache (HF_HOME), /dev/shm and /tmp"),
            Fix("advice", "HF_HOME set to a cache folder on a disk with room for the weights"),
            Fix("advice", "in Docker, --ipc=host or --shm-size 16g for /dev/shm"),
        ],
    )


# The rules (engine_rules.RULES takes them after its own): the torch, loader and OS words above.
ENVIRONMENT_RULES: tuple[Rule, ...] = (
    *MODULE_NAME_RULES,
    (
        "cuda-driver",
        re.compile(r"The NVIDIA driver on your system is too old \(found version (\d+)\)"),
        driver_too_old,
    ),
    (
        "cuda-driver",
        re.compile(
            r"CUDA driver version is insufficient for CUDA runtime version|"
            r"the provided PTX was compiled with an unsupported toolchain"
        ),
        driver_older,
    ),
    (
        "no-gpu",
        re.compile(
            r"No CUDA GPUs are available|Found no NVIDIA driver on your system|"
            r"Torch not compiled with CUDA enabled"
        ),
        no_gpu,
    ),
    (
        "cuda-library",
        re.compile(r"(lib[\w.+-]+\.so(?:\.\d+)*): cannot open shared object file"),
        missing_library,
    ),
    (
        "engine-extension",
        re.compile(r"No module named '((?:vllm|sglang)\._C|sgl_kernel\.\w+)'"),
        no_extension,
    ),
    (
        "engine-missing",
        re.compile(
            r"(?:Error while finding module specification for )?'((?:vllm|sglang)[\w.]*)' "
            r"\(ModuleNotFoundError: No module named '([\w.]+)'\)"
        ),
        engine_missing,
    ),
    (
        "engine-module",
        re.compile(r"No module named '((?:vllm|sglang)\.(?!_C\b)[\w.]+)'"),
        engine_module_missing,
    ),
    (
        "library-module",
        re.compile(rf"No module named '((?:{'|'.join(LIBRARIES)})\.[\w.]+)'"),
        library_module_missing,
    ),
    (
        "engine-command",
        re.compile(r"\[Errno 2\] No such file or directory: '(vllm|sglang|trtllm-serve)'"),
        engine_command,
    ),
    ("python-version", FIRSTLINENO, python_too_new),
    (
        "cuda-forked",
        re.compile(r"Cannot re-initialize CUDA in forked subprocess"),
        forked_cuda,
    ),
    (
        "library-version",
        re.compile(r"cannot import name '(\w+)' from '([\w.]+)'"),
        missing_name,
    ),
    ("library-version", ATTRIBUTE_MISSING, missing_attribute),
    ("disk-full", re.compile(r"\[Errno 28\] No space left on device"), disk_full),
    (
        "engine-platform",
        re.compile(r"No platform detected, vLLM is running on UnspecifiedPlatform"),
        no_platform,
    ),
    # the message, not the raise a traceback echoes above it
    ("engine-platform", re.compile(r"(?<![(\"'])Failed to infer device type"), no_device_type),
    ("torch-build", TORCH_REFUSES, torch_refuses),
    ("flashinfer-arch", REFUSED, no_arch),
    ("flashinfer-build", BUILD_FAILED, kernel_unbuilt),
    *FLASHINFER_IMAGE_RULES,
    *DRIVER_CALL_RULES,
    # before torch.compile's: Inductor's error quotes the compile command Triton ran
    ("triton-build", NO_HEADER, missing_header),
    ("triton-build", NO_LIBCUDA, missing_libcuda),
    ("triton-build", NO_COMPILER, no_compiler),
    ("triton-build", TRITON_COMMAND, build_failed),
    ("torch-compile", COMPILE_FAILED, compile_failed),
    *SHARED_MEMORY_RULES,
    *SECCOMP_RULES,
    *LOGGING_RULES,
    *CUSTOM_OPS_RULES,
    *RENDEZVOUS_RULES,
    *TORCHVISION_RULES,
    *GLIBC_RULES,
    *PTXAS_RULES,
    *CUSTOM_ALL_REDUCE_RULES,
    *BNB_CHECKPOINT_RULES,
    *DEPENDENCY_CHECK_RULES,
    *FLASH_ATTN_KEYWORD_RULES,
    *FLASHINFER_RELEASE_RULES,
    ("nccl-transport", FAILED, transport_failed),
    ("nccl-transport", PEER, peer_unsupported),
    ("nccl-unhandled", UNHANDLED, unhandled),
    ("server-proxy", WARMUP_REFUSED, warmup_refused),
    ("server-proxy", PROXIED_REQUEST, proxied_request),
)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
ENVIRONMENT_MARKERS = (
    "NVIDIA driver on your system",
    "driver version is insufficient",
    "unsupported toolchain",
    "No CUDA GPUs",
    "no NVIDIA driver",
    "not compiled with CUDA",
    "cannot open shared object file",
    "No module named '",
    "No space left on device",
    "cannot import name '",
    "' has no attribute '",
    "Error while finding module specification",
    "is not compatible with the current PyTorch",
    "which is of ",
    "AssertionError: res=<Response ",
    "No platform detected",
    "Failed to infer device type",
    "Cannot re-initialize CUDA in forked",
    "No such file or directory: '",
    "KeyError: '__firstlineno__'",
    *FLASHINFER_JIT_MARKERS,
    *FLASHINFER_IMAGE_MARKERS,
    *DRIVER_CALL_MARKERS,
    "NCCL WARN ",
    "NCCL error",
    '"GET http://',
    *COMPILE_MARKERS,
    *TRITON_MARKERS,
    *SHARED_MEMORY_MARKERS,
    *SECCOMP_MARKERS,
    *LOGGING_MARKERS,
    *CUSTOM_OPS_MARKERS,
    *CUSTOM_ALL_REDUCE_MARKERS,
    *BNB_CHECKPOINT_MARKERS,
    *FLASH_ATTN_KEYWORD_MARKERS,
    *FLASHINFER_RELEASE_MARKERS,
    *RENDEZVOUS_MARKERS,
    *TORCHVISION_MARKERS,
    *GLIBC_MARKERS,
    *PTXAS_MARKERS,
    *DEPENDENCY_CHECK_MARKERS,
    *MODULE_NAME_MARKERS,
)
