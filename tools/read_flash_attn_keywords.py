"""The keyword parameters of FlashAttention's Python entry points, release by release, read with
``ast`` from each release tag of its two distributions' repositories:

    python -m tools.read_flash_attn_keywords DAO_GIT VLLM_FORK_GIT [VLLM_WHEEL ...] \
        > snapshots/engines/flash-attn-keywords.txt

- ``flash-attn`` (github.com/Dao-AILab/flash-attention, tags ``v2.*``):
  ``flash_attn/flash_attn_interface.py``;
- ``vllm-flash-attn`` (github.com/vllm-project/flash-attention, every tag: the releases vLLM
  0.4.3 to 0.6.1.post2 pin): ``vllm_flash_attn/flash_attn_interface.py``.

Each public top-level function's parameters are printed per tag (the snapshot), and the facts
doctor uses are written to ``patcher/advice/flash-attn-keywords.json``: for each distribution,
its releases in order and, for each function, each parameter's releases as a bit mask over that
order (bit i: ``releases[i]``, as tools/read_exports.py records modules). An engine calling
``flash_attn_varlen_func(..., softcap=...)`` against a release whose function has no
``softcap`` stops with "TypeError: flash_attn_varlen_func() got an unexpected keyword argument
'softcap'"; patcher/advice/flash_attn_keywords.py names the release that takes it.

DAO_GIT and VLLM_FORK_GIT are git directories (``fetch github:Dao-AILab/flash-attention``).
Each vLLM wheel given (``pip download --no-deps vllm==X``) adds a line to the snapshot: the
module its attention backend (``vllm/attention/backends/flash_attn.py``) imports the function
from, the evidence for which distribution a release calls (the catalogue's ``requires`` pins
``vllm-flash-attn`` and the exports reading has ``vllm.vllm_flash_attn``; doctor uses those)."""

from __future__ import annotations

import ast
import datetime
import json
import subprocess
import sys
import zipfile
from pathlib import Path

from patcher.advice.catalogue import version_key

TARGET = Path(__file__).resolve().parent.parent / "patcher" / "advice" / "flash-attn-keywords.json"
# distribution -> (repository, the tags read (a prefix), the interface module)
SOURCES = {
    "flash-attn": ("Dao-AILab/flash-attention", "v2.", "flash_attn/flash_attn_interface.py"),
    "vllm-flash-attn": (
        "vllm-project/flash-attention",
        "v",
        "vllm_flash_attn/flash_attn_interface.py",
    ),
}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def signatures(text: str) -> dict[str, list[str]]:
    """Each public top-level function of a module and its parameters, in order."""
    found: dict[str, list[str]] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            args = node.args
            found[node.name] = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    return found


def read(repo: Path, prefix: str, module: str) -> dict[str, dict[str, list[str]]]:
    """The signatures of ``module`` at each tag of ``repo`` starting with ``prefix``, by
    release (the tag without its ``v``), oldest first."""
    tags = [t for t in _git(repo, "tag").split() if t.startswith(prefix)]
    by_release: dict[str, dict[str, list[str]]] = {}
    for tag in sorted(tags, key=lambda t: version_key(t[1:])):
        try:
            text = _git(repo, "show", f"{tag}:{module}")
        except subprocess.CalledProcessError:
            continue  # a tag without the module
        by_release[tag[1:]] = signatures(text)
    return by_release


def imported_from(wheel: Path) -> tuple[str, list[str]]:
    """A vLLM wheel's release and the modules its FlashAttention backend imports
    ``flash_attn_varlen_func`` from."""
    release = wheel.name.split("-")[1]
    with zipfile.ZipFile(wheel) as archive:
        tree = ast.parse(archive.read("vllm/attention/backends/flash_attn.py"))
    modules = [
        "." * node.level + (node.module or "")
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and any(alias.name == "flash_attn_varlen_func" for alias in node.names)
    ]
    return release, modules


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    facts: dict[str, object] = {
        "source": "the repositories' tags, read with ast by tools/read_flash_attn_keywords.py "
        f"({datetime.date.today().isoformat()})",
        "distributions": {},
    }
    print(f"# {facts['source']}")
    for (name, (repository, prefix, module)), repo in zip(SOURCES.items(), argv[:2], strict=True):
        by_release = read(Path(repo), prefix, module)
        functions: dict[str, dict[str, int]] = {}
        head = _git(Path(repo), "rev-parse", "HEAD").strip()
        print(f"# {name}\tgithub.com/{repository} (at {head[:12]}, its tags)\t{module}")
        for bit, (release, found) in enumerate(by_release.items()):
            for function, params in found.items():
                print(f"{release}\t{function}\t{' '.join(params)}")
                for param in params:
                    held = functions.setdefault(function, {})
                    held[param] = held.get(param, 0) | 1 << bit
        facts["distributions"][name] = {  # type: ignore[index]
            "repository": repository,
            "releases": list(by_release),
            "functions": functions,
        }
    if argv[2:]:
        print("# vllm\tthe module vllm/attention/backends/flash_attn.py imports it from")
    for wheel in argv[2:]:
        release, modules = imported_from(Path(wheel))
        print(f"{release}\tflash_attn_varlen_func\t{' '.join(modules)}")
    TARGET.write_text(json.dumps(facts, sort_keys=True, separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
