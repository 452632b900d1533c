"""What a release's wheel metadata (``.dist-info/METADATA``) states: the torch its kernels
are built against, the packages it requires and the Pythons it installs on.
``tools/read_errors.py`` records them with the release's errors."""

from __future__ import annotations

import re
import zipfile


def torch_pin(archive: zipfile.ZipFile) -> dict[str, list[str]]:
    """The torch a release's compiled kernels are built against, keyed ``torch_pin``: its
    wheel's ``Requires-Dist: torch==X`` (METADATA). An extension built against another torch
    fails to import with "undefined symbol: _ZN3c10..." (a C++ symbol of torch's), and that
    pin is the torch it needs."""
    metadata = next((n for n in archive.namelist() if n.endswith(".dist-info/METADATA")), None)
    if metadata is None:
        return {"torch_pin": []}
    text = archive.read(metadata).decode("utf-8", "replace")
    pinned = re.search(r"^Requires-Dist: torch\s*==\s*([\w.+]+)", text, re.MULTILINE)
    return {"torch_pin": [pinned.group(1)] if pinned else []}


def requirements(archive: zipfile.ZipFile) -> dict[str, list[str]]:
    """The packages a release requires, each with its version specifier as the wheel states it
    (``Requires-Dist: flashinfer_python==0.2.3; extra == "srt"``: ``flashinfer_python==0.2.3``),
    keyed ``requires``: the version of a library an engine release was written against, which
    a name it imports from that library and cannot find says is another; and the Pythons it
    installs on (``Requires-Python``), keyed ``requires_python``."""
    metadata = next((n for n in archive.namelist() if n.endswith(".dist-info/METADATA")), None)
    if metadata is None:
        return {"requires": [], "requires_python": []}
    text = archive.read(metadata).decode("utf-8", "replace")
    # the Pythons the release installs on (``Requires-Python: <3.13,>=3.9``)
    python = re.search(r"^Requires-Python: (.+)$", text, re.MULTILINE)
    found = set()
    for line in re.findall(r"^Requires-Dist: (.+)$", text, re.MULTILINE):
        requirement = line.split(";")[0].strip()
        named = re.match(r"([A-Za-z0-9][\w.-]*)(?:\[[^\]]*\])?\s*\(?([^)]*)\)?", requirement)
        if named is not None and named.group(2).strip():
            found.add(named.group(1) + named.group(2).replace(" ", ""))
    return {
        "requires": sorted(found),
        "requires_python": [python.group(1).replace(" ", "")] if python else [],
    }
