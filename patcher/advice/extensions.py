"""doctor's answer to a compiled extension that does not load: ``ImportError: X.so: undefined
symbol: _ZN3c10...``. A C++ extension (vLLM's and SGLang's kernels, FlashAttention's) is built
against one torch; under another, the torch symbols it calls are gone. The engines' wheels pin
the torch they are built against (``Requires-Dist: torch==X``, read per release into the
catalogue's ``torch_pin``), so the answer is that torch, or the extension rebuilt for the torch
installed. A kernel package an engine release pins exactly beside its torch (SGLang's
``sgl-kernel==X`` and ``torch==Y``, read per release into ``requires``) is a prebuilt wheel of
that pair: reinstalling it builds nothing, the engine release installed again brings both."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from patcher.advice.catalogue import (
    Engine,
    at_or_below,
    feature_by_release,
    feature_releases,
    features_of,
    version_key,
)
from patcher.advice.log_rules import Fix, LogContext

# the engines whose wheels were read: their packages' own extensions
_ENGINES: dict[str, Engine] = {"vllm": "vllm", "sglang": "sglang"}


def _package(path: str) -> str:
    """The package an extension module belongs to: its folder inside site-packages, or, for a
    top-level module (``flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so``), its name up to
    the first build tag."""
    file = PurePosixPath(path)
    parts = file.parts
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            inside = parts[parts.index(marker) + 1 :]
            return inside[0] if len(inside) > 1 else re.split(r"\.|_\d|_cuda", file.name)[0]
    return file.parent.name or file.name.split(".")[0]


def _pinned_by(package: str) -> tuple[Engine, list[str]] | None:
    """The engine whose releases read pin ``package`` exactly (``sgl-kernel==0.2.8``), with
    each such release's ``package X with torch Y`` pair; None where no engine pins it."""
    name = package.replace("_", "-").lower()
    for engine in _ENGINES.values():
        pins = [p for p in features_of(engine, "requires") if p.lower().startswith(name + "==")]
        if not pins:
            continue
        torch = feature_by_release(engine, "torch_pin")
        pairs = sorted(
            (
                (release, pin.split("==", 1)[1])
                for pin in pins
                for release in feature_releases(engine, "requires", pin)
            ),
            key=lambda pair: version_key(pair[0]),
        )
        shown = [f"{engine} {r}: {name} {v} with torch {torch.get(r, '?')}" for r, v in pairs]
        return engine, shown
    return None


def torch_pin(engine: Engine, version: tuple[int, ...] | None) -> str | None:
    """The torch the log's release of ``engine`` pins (the newest read at or below it)."""
    pinned = feature_by_release(engine, "torch_pin")
    answering = at_or_below(pinned, version) if version is not None else None
    return pinned[answering] if answering is not None else None


def _triton_backend(path: str) -> tuple[str, list[Fix]]:
    """Triton's TensorRT-LLM backend (``libtriton_tensorrtllm.so``) missing a TensorRT-LLM
    symbol: the backend and the TensorRT-LLM beside it are of two releases."""
    return (
        f"Triton's TensorRT-LLM backend ({PurePosixPath(path).name}) was built against another "
        "TensorRT-LLM release than the one installed beside it",
        [
            Fix(
                "advice",
                "nvcr.io/nvidia/tritonserver:<yy.mm>-trtllm-python-py3 of one release, whose "
                "backend and TensorRT-LLM are built together (the backend's own docs)",
                note="the engines built with that TensorRT-LLM release",
            ),
            Fix("advice", "or build the backend against the TensorRT-LLM installed"),
        ],
    )


def _tensorrt_llm_torch() -> list[Fix]:
    """TensorRT-LLM's extension under another torch: its wheels are only prebuilt (NVIDIA's
    index, pypi.nvidia.com; pypi.org holds a source stub that fetches them), each requiring
    the torch it was built against, so nothing is rebuilt: the torch its wheel requires is
    installed, which ``pip check`` names from the installed wheel's own requirement."""
    return [
        Fix(
            "advice",
            "pip check, then pip install the torch it names for tensorrt-llm",
            note="the torch the installed TensorRT-LLM wheel requires (its Requires-Dist); "
            "a torch installed after it replaced that one",
        ),
        Fix(
            "advice",
            "or pip install --force-reinstall --extra-index-url https://pypi.nvidia.com "
            "tensorrt_llm==<the release installed>",
            note="the release again, with the torch it requires: TensorRT-LLM's wheels are "
            "prebuilt, so a rebuild against the torch installed is not pip's to make",
        ),
    ]


def undefined_symbol(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """``ImportError: ....so: undefined symbol: S``: the extension was built against another
    torch (a torch symbol, ``_ZN3c10``/``_ZN2at``/``torch``) or another library."""
    path, symbol = m.group(1), m.group(2)
    package = _package(path)
    if "/backends/" in path and "tensorrt_llm" in symbol:
        return _triton_backend(path)
    torch_symbol = re.match(r"_ZN\d*(?:c10|at|torch)", symbol) is not None
    against = "another torch than the one installed" if torch_symbol else "other libraries"
    cause = (
        f"{package}'s compiled extension ({PurePosixPath(path).name}) was built against {against}"
    )
    engine = _ENGINES.get(package.split("-")[0].replace("_", ""))
    if engine is not None:
        pin = torch_pin(engine, ctx.version)
        fixes = [
            Fix(
                "dependency",
                f"pip install 'torch=={pin}'",
                note=f"the torch {engine} {'.'.join(map(str, (ctx.version or ())[:3]))} is "
                "built against (its wheel's requirement)",
            )
            if pin
            else Fix(
                "advice",
                f"pip install --force-reinstall {engine}==<the release installed>",
                note="the release installed again, with the torch its wheel pins",
            ),
            Fix("advice", f"or build {engine} from source against the torch installed"),
        ]
        return cause, fixes
    pinned = _pinned_by(package)
    if pinned is not None and torch_symbol:
        engine, pairs = pinned
        newest = ", ".join(pairs[-3:])
        return (
            f"{cause}: it is a prebuilt wheel {engine} pins beside the torch it was built with "
            f"(read: {newest}), so reinstalling it alone builds nothing",
            [
                Fix(  # the release is not in the log: prose, not a command to paste
                    "advice",
                    f"pip install --force-reinstall '{engine}[all]==<the release installed>'",
                    note=f"the {package.replace('_', '-')} and the torch that release pins, "
                    "together",
                ),
                Fix("advice", f"or build {package} from source against the torch installed"),
            ],
        )
    if package == "tensorrt_llm" and torch_symbol:
        return cause, _tensorrt_llm_torch()
    name = "flash-attn" if package.startswith("flash_attn") else package
    fixes = [
        Fix(
            "dependency",
            f"pip install --force-reinstall --no-build-isolation {name}",
            note="built again against the torch installed",
        )
    ]
    if name == "flash-attn":
        fixes.append(
            Fix(
                "advice",
                "or pip uninstall flash-attn",
                note="vLLM's wheels carry their own FlashAttention build from 0.6 "
                "(vllm/vllm_flash_attn, read)",
            )
        )
    return cause, fixes
