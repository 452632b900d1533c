"""The attributes transformers' tokenizer base classes define, per release wheel, read with
``ast``: the methods, properties and class attributes of every class in its tokenizer base
modules (``tokenization_utils_base.py``'s ``SpecialTokensMixin`` and
``PreTrainedTokenizerBase``; the slow and fast bases beside it, ``tokenization_utils.py`` and
``tokenization_utils_fast.py`` before 5.0, ``tokenization_python.py`` and
``tokenization_utils_tokenizers.py`` from 5.0). An engine release written against one
transformers reads some of them (vLLM 0.11's ``get_cached_tokenizer`` reads
``all_special_tokens_extended``); a later transformers that dropped one answers the read with
its ``__getattr__``'s "X has no attribute Y", and the way out is a transformers that still
defines it (patcher/advice/tokenizer_attributes.py).

    python -m tools.read_tokenizer_attributes transformers-4.57.0-py3-none-any.whl ... > \\
        snapshots/engines/tokenizer-attributes-transformers.txt
"""

from __future__ import annotations

import ast
import re
import sys
import zipfile

# the modules of the tokenizer base classes every model's tokenizer derives from
BASES = (
    "transformers/tokenization_utils_base.py",
    "transformers/tokenization_utils.py",
    "transformers/tokenization_utils_fast.py",
    "transformers/tokenization_python.py",
    "transformers/tokenization_utils_tokenizers.py",
    "transformers/tokenization_utils_sentencepiece.py",
)


def attributes(source: str) -> set[str]:
    """The public names the module's classes define in their bodies."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(item.name)
            elif isinstance(item, ast.Assign):
                names |= {t.id for t in item.targets if isinstance(t, ast.Name)}
            elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                names.add(item.target.id)
    return {n for n in names if not n.startswith("_")}


def read(wheel: str) -> tuple[str, set[str]]:
    """The release a transformers wheel is and the names its tokenizer base defines."""
    release = re.sub(r"^transformers-([^-]+)-.*$", r"\1", wheel.rsplit("/", 1)[-1])
    names: set[str] = set()
    with zipfile.ZipFile(wheel) as archive:
        present = set(archive.namelist())
        for module in (m for m in BASES if m in present):
            names |= attributes(archive.read(module).decode())
    return release, names


def main(wheels: list[str]) -> None:
    """Print one line per release: the release and its names, sorted."""
    print("# the public names the classes of transformers' tokenizer base modules define")
    print(f"# ({', '.join(m.rsplit('/', 1)[1] for m in BASES)} where present), per release")
    print("# (python -m tools.read_tokenizer_attributes W.whl ...; wheels from PyPI)")
    for wheel in wheels:
        release, names = read(wheel)
        print(f"{release}\t{' '.join(sorted(names))}")


if __name__ == "__main__":
    main(sys.argv[1:])
