"""The GPU architectures each vLLM release's own kernels are built for (patcher/advice/
kernels.py, read by tools/read_binaries.cuda_archs from the kernel images in the wheels'
``_C`` extension), and doctor's answers from them: a GPU no release has kernels for is no
config fix, and "no kernel image" names the releases whose build covers the GPU."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest

from patcher.advice.doctor import diagnose_text
from patcher.advice.kernels import builds, kernel_gap, stated


def _elf(images: list[tuple[int, int]]) -> bytes:
    """A 64-bit ELF shared object whose ``.nv_fatbin`` section holds one fat binary with the
    kernel images ``images`` (kind 2: compiled, 1: PTX; SM version), laid out as CUDA's
    fat binary header and entries are."""
    entries = b""
    for kind, sm in images:
        payload = b"\0" * 16
        header = struct.pack("<HHIQ", kind, 0x101, 64, len(payload))
        header += b"\0" * (28 - len(header)) + struct.pack("<I", sm)
        entries += header + b"\0" * (64 - len(header) - 0) + payload
    fatbin = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(entries)) + entries
    names = b"\0.shstrtab\0.nv_fatbin\0"
    body_at = 64
    names_at = body_at + len(fatbin)
    table_at = names_at + len(names)
    ident = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    header = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, table_at, 0, 64, 0, 0, 64, 3, 1)
    null = b"\0" * 64
    shstrtab = struct.pack("<IIQQQQIIQQ", 1, 3, 0, 0, names_at, len(names), 0, 0, 1, 0)
    nv_fatbin = struct.pack("<IIQQQQIIQQ", 11, 1, 0, 0, body_at, len(fatbin), 0, 0, 8, 0)
    return header + fatbin + names + null + shstrtab + nv_fatbin


def test_the_reader_counts_the_compiled_images_of_each_sm_and_drops_a_stray_one(
    tmp_path: Path,
) -> None:
    from tools.read_binaries import cuda_archs

    images = [(2, 80)] * 12 + [(2, 90)] * 20 + [(2, 52)] + [(1, 90)] * 5
    wheel = tmp_path / "vllm-9.9.9-cp38-abi3-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("vllm/_C.abi3.so", _elf(images))
    with zipfile.ZipFile(wheel) as archive:
        # sm_52's one image is under a tenth of sm_90's twenty; PTX is not a kernel image
        assert cuda_archs(archive) == {"cuda_arch": ["80", "90"]}


def test_the_recorded_builds_are_the_wheels_own() -> None:
    # read from the vLLM wheels' _C extensions (patcher/advice/errors-vllm.json)
    summary = builds()
    assert summary.startswith("0.4.3 to 0.8.5.post1: 7.0-9.0")
    assert "0.9.2 to 0.19.0: 7.0-12.0" in summary
    assert summary.endswith("to 0.34.0: 7.5-12.0")


@pytest.mark.parametrize(
    ("gpu", "version", "fix"),
    [
        # an RTX 5090 before its build: 0.9.2's kernels run on it, but the torch 0.9.2 and
        # 0.10.1 pin is built for CUDA 12.6 on PyPI, without SM 12.0 (torch-builds.json)
        ((12, 0), (0, 8, 5), "pip install 'vllm>=0.11.0'"),
        ((7, 0), (0, 34, 0), "pip install 'vllm>=0.4.3,<0.20.0'"),  # a V100 after its last
        ((7, 0), None, "pip install 'vllm>=0.4.3,<0.20.0'"),
        ((8, 9), (0, 34, 0), None),  # its kernels are there: another library's kernel
        ((7, 5), None, None),  # every release read has kernels for it
    ],
)
def test_a_gpu_gets_the_releases_whose_kernels_are_built_for_it(
    gpu: tuple[int, int], version: tuple[int, int, int] | None, fix: str | None
) -> None:
    found = kernel_gap(gpu, version)
    assert (found[0].text if found else None) == fix


def test_a_gpu_no_release_has_kernels_for_is_no_config_fix() -> None:
    (found,) = kernel_gap((6, 0), None) or []
    assert found.kind == "advice"
    assert found.text == (
        "no config fix: no vLLM release read has kernels for compute capability 6.0"
    )
    assert "0.4.3 to 0.8.5.post1: 7.0-9.0" in (found.note or "")


@pytest.mark.parametrize(
    ("line", "gpu"),
    [
        ("Your Tesla T4 GPU has compute capability 7.5.", (7, 5)),
        ("NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible", (12, 0)),
        ("|   0  NVIDIA GeForce RTX 5090        Off |", (12, 0)),
        ("GPU 0: Tesla V100-SXM2-32GB", (7, 0)),
        ("INFO loading weights", None),
    ],
)
def test_the_gpu_a_log_line_states_or_names(line: str, gpu: tuple[int, int] | None) -> None:
    assert stated(line) == gpu


def test_no_kernel_image_on_a_gpu_the_log_names_is_the_release_whose_build_has_it() -> None:
    found = diagnose_text(
        "INFO 05-31 10:00:00 [api_server.py:1043] vLLM API server version 0.8.5.post1\n"
        "INFO 05-31 10:00:01 [cuda.py:221] GPU 0: NVIDIA GeForce RTX 5090\n"
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    assert found.code == "hardware"
    assert [f.text for f in found.fixes] == ["pip install 'vllm>=0.11.0'"]


def test_no_kernel_image_on_an_unnamed_gpu_lists_what_each_build_covers() -> None:
    found = diagnose_text(
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"
    )
    assert found.code == "hardware"
    assert any("0.20.0 to 0.34.0: 7.5-12.0" in f.text for f in found.fixes)


def test_bfloat16_on_a_gpu_no_build_covers_is_not_answered_with_float16() -> None:
    found = diagnose_text(
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least "
        "8.0. Your Tesla P100-PCIE-16GB GPU has compute capability 6.0.\n"
    )
    assert found.code == "bfloat16-gpu"
    assert not any("--dtype" in f.text for f in found.fixes)
    assert found.fixes[0].text.startswith("no config fix")


def test_bfloat16_on_a_v100_under_a_release_without_its_kernels_names_the_last_with_them() -> None:
    found = diagnose_text(
        "INFO 11-01 10:00:00 [api_server.py:1839] vLLM API server version 0.34.0\n"
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least "
        "8.0. Your Tesla V100-SXM2-32GB GPU has compute capability 7.0.\n"
    )
    assert [f.text for f in found.fixes][::2] == [
        "--dtype half",
        "pip install 'vllm>=0.4.3,<0.20.0'",
    ]


def test_a_gpu_too_old_for_pytorchs_triton_is_no_config_fix_where_no_build_covers_it() -> None:
    # PyTorch's compiler refusing the GPU (Triton targets compute capability 7.0 and later);
    # vLLM's own kernels are built for none below 7.0 either
    found = diagnose_text(
        "INFO 02-13 01:10:14 api_server.py:840] vLLM API server version 0.7.2\n"
        "RuntimeError: Found Tesla P40 which is too old to be supported by the triton GPU "
        "compiler, which is used as the backend. Triton only supports devices of CUDA "
        "Capability >= 7.0, but your device is of CUDA capability 6.1\n"
    )
    assert found.code == "hardware"
    assert [f.text[:33] for f in found.fixes] == ["no config fix: no vLLM release re"]
    assert "6.1" in found.fixes[0].text
