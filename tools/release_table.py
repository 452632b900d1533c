"""A reading of a package's wheels printed as a table under ``snapshots/engines/``: a line of
where it came from, a header, then one release a line, oldest first (the readers of
transformers' wheels share it)."""

from __future__ import annotations

import datetime
import re
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

from patcher.advice.catalogue import version_key

Reading = Callable[[Path], tuple[str, ...]]


def release_of(wheel: Path) -> str:
    """The release a wheel's file name gives (``transformers-5.13.0-py3-none-any.whl``)."""
    return re.sub(r"^[^-]+-([^-]+)-.*$", r"\1", wheel.name)


def member(wheel: Path, name: str) -> str:
    """The text of the file ``name`` inside ``wheel``."""
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(name).decode("utf-8", "replace")


def print_table(wheels: Iterable[str], reading: Reading, source: str, columns: str) -> int:
    """Print ``reading`` of each wheel (its release first), sorted by release, under a line
    saying what was read (``source``) and a header of the ``columns`` after the release."""
    rows = sorted((reading(Path(w)) for w in wheels), key=lambda r: version_key(r[0]))
    print(f"# {source.format(today=datetime.date.today())}")
    print(f"# release\t{columns}")
    for row in rows:
        print("\t".join(row))
    return 0
