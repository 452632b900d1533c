"""What a release's compiled extensions need, read from the ELF files in the wheel without
loading them: the GPU architectures its kernels are built for (the ``.nv_fatbin`` section) and
the newest glibc they need (``.gnu.version_r``). ``tools/read_errors.py`` records them with the
release's errors; ``tools/read_release.py`` reads the architectures of a new release."""

from __future__ import annotations

import re
import shutil
import struct
import tempfile
import zipfile
from collections import Counter
from typing import IO

# The engine's own kernels: vLLM's _C extension (``_C.abi3.so``, ``_C.cpython-3X-...so``
# before 0.5, ``_C_stable_libtorch.abi3.so`` from 0.2x).
KERNELS = re.compile(r"vllm/_C(?:_stable_libtorch)?\.(?:abi3|cpython-\d+-x86_64-linux-gnu)\.so")
_FATBIN = 0xBA55ED50  # a CUDA fat binary's magic (the .nv_fatbin section holds them)


def _section_headers(so: IO[bytes]) -> tuple[list[tuple[int, ...]], int] | None:
    """A 64-bit ELF file's section headers (name, type, flags, address, offset, size, link,
    info, alignment, entry size) and the index of the one holding the section names; None
    for any other file."""
    so.seek(0)
    ident = so.read(64)
    if ident[:4] != b"\x7fELF" or ident[4] != 2:
        return None
    (table,) = struct.unpack_from("<Q", ident, 0x28)
    entry, count, names_at = struct.unpack_from("<HHH", ident, 0x3A)
    so.seek(table)
    raw = so.read(entry * count)
    return [struct.unpack_from("<IIQQQQIIQQ", raw, i * entry) for i in range(count)], names_at


def _fatbin_archs(so: IO[bytes]) -> Counter[int]:
    """The SM version of each compiled kernel image (ELF, not PTX) in an ELF shared object's
    ``.nv_fatbin`` section, counted: a fat binary is a header (magic, version, header size,
    size) and entries (kind, version, header size, padded size, ..., the SM version at 28)."""
    read = _section_headers(so)
    if read is None:
        return Counter()
    headers, names_at = read
    so.seek(headers[names_at][4])
    names = so.read(headers[names_at][5])
    found: Counter[int] = Counter()
    for header in headers:
        name = names[header[0] : names.index(b"\0", header[0])]
        if name != b".nv_fatbin":
            continue
        so.seek(header[4])
        data = so.read(header[5])
        at = 0
        while at + 16 <= len(data):
            magic, _version, size_of_header, size = struct.unpack_from("<IHHQ", data, at)
            if magic != _FATBIN:
                at += 8  # fat binaries are 8-byte aligned
                continue
            item, end = at + size_of_header, at + size_of_header + size
            while item < end:
                kind, _v, item_header, padded = struct.unpack_from("<HHIQ", data, item)
                (sm,) = struct.unpack_from("<I", data, item + 28)
                if kind == 2:  # 1 is PTX, compiled by the driver where no image fits
                    found[sm] += 1
                item += item_header + padded
            at = end
    return found


def cuda_archs(archive: zipfile.ZipFile) -> dict[str, list[str]]:
    """The GPU architectures a vLLM release's own kernels are compiled for, keyed ``cuda_arch``
    (``"80"`` is SM 8.0): the SM versions of the kernel images in its ``_C`` extension that
    hold at least a tenth as many kernels as the best-served one (a single stray kernel of
    another SM is not a build for it). A kernel image for SM X.Y runs on X.Y and later minors
    of X; a GPU with none gets "no kernel image is available for execution on the device"
    (0.4 to 0.8 are built for 7.0 to 9.0; 0.9 adds 10.0 and 12.0; 0.2x drop 7.0)."""
    path = next((n for n in archive.namelist() if KERNELS.fullmatch(n)), None)
    if path is None:
        return {"cuda_arch": []}
    with archive.open(path) as source, tempfile.TemporaryFile() as so:
        shutil.copyfileobj(source, so, 1 << 20)
        counted = _fatbin_archs(so)
    most = max(counted.values(), default=0)
    return {"cuda_arch": [str(sm) for sm in sorted(counted) if counted[sm] * 10 >= most]}


def _glibc_needs(so: IO[bytes]) -> set[tuple[int, ...]]:
    """The glibc symbol versions (``GLIBC_2.32`` as ``(2, 32)``) an ELF shared object needs:
    the ``Vernaux`` names of its ``.gnu.version_r`` section (``SHT_GNU_verneed``), read from
    the section headers without loading the whole file."""
    read = _section_headers(so)
    if read is None:
        return set()
    headers, _names_at = read
    found: set[tuple[int, ...]] = set()
    for header in headers:
        if header[1] != 0x6FFFFFFE:  # SHT_GNU_verneed
            continue
        so.seek(headers[header[6]][4])  # sh_link: its string table
        strings = so.read(headers[header[6]][5])
        so.seek(header[4])
        data = so.read(header[5])
        at = 0
        for _ in range(header[9] or 1 << 16):  # sh_info: how many Verneed entries
            _version, aux_count, _file, aux, following = struct.unpack_from("<HHIII", data, at)
            item = at + aux
            for _ in range(aux_count):
                _hash, _flags, _other, name, next_aux = struct.unpack_from("<IHHII", data, item)
                word = strings[name : strings.index(b"\0", name)].decode("ascii", "replace")
                if word.startswith("GLIBC_") and word[6:].replace(".", "").isdigit():
                    found.add(tuple(int(p) for p in word[6:].split(".")))
                item += next_aux
            if not following:
                break
            at += following
    return found


def glibc(archive: zipfile.ZipFile, package: str = "vllm") -> dict[str, list[str]]:
    """The newest glibc the release's compiled extensions need (every ``.so`` of the package,
    ``GLIBC_X.Y`` among the symbol versions each needs), keyed ``glibc``: a machine whose glibc
    is older fails to import them with "version `GLIBC_X.Y' not found (required by
    .../vllm/_C.abi3.so)". The wheel's platform tag does not tell it (vLLM 0.5.2's manylinux1
    wheel needed 2.32)."""
    newest: tuple[int, ...] = ()
    for path in archive.namelist():
        if not (path.startswith(f"{package}/") and path.endswith(".so")):
            continue
        with archive.open(path) as source, tempfile.TemporaryFile() as so:
            shutil.copyfileobj(source, so, 1 << 20)
            newest = max([newest, *_glibc_needs(so)])
    return {"glibc": [".".join(map(str, newest))] if newest else []}
