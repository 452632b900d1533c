"""The Python modules of an engine's package inside its wheel, parsed with ``ast``: the one
loop the source readers share (the files under the package, those holding a word read, those
that parse)."""

from __future__ import annotations

import ast
import zipfile
from collections.abc import Iterator


def modules(
    archive: zipfile.ZipFile, package: str, containing: tuple[str, ...] = ()
) -> Iterator[tuple[str, str, ast.Module]]:
    """Each ``.py`` file under ``package`` (``"sglang/"``) whose text holds every word of
    ``containing``, as (name, text, tree); a file that does not parse is passed over."""
    for name in archive.namelist():
        if not name.startswith(package) or not name.endswith(".py"):
            continue
        text = archive.read(name).decode("utf-8", "replace")
        if not all(word in text for word in containing):
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        yield name, text, tree
