"""The CLI's shared arguments and options, and its shell completions.

The completions import what they list when they run (deferred on purpose): every start
imports this module, and the catalog alone costs about 19 ms."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

CheckpointArg = Annotated[
    str,
    typer.Argument(
        metavar="CHECKPOINT",
        help="Checkpoint folder (holding config.json), or ORG/NAME[@REV] in the HF cache.",
    ),
]


JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]


RevisionOpt = Annotated[
    str | None,
    typer.Option(
        "--revision", metavar="REV", help="With an ORG/NAME checkpoint: branch, tag or commit."
    ),
]


def complete_engines(incomplete: str) -> list[str]:
    """Shell completion: each engine release patcher has read, newest first."""
    from patcher.engines.readings import releases_read

    found = [
        f"{name}==" + ".".join(map(str, version))
        for name in ("vllm", "sglang")
        for version in reversed(releases_read(name))
    ]
    return [spec for spec in found if spec.startswith(incomplete)]


def complete_gpus(incomplete: str) -> list[str]:
    """Shell completion: the GPU names patcher knows."""
    from patcher.engines.gpus import GPUS

    return [name for name in GPUS if name.startswith(incomplete.lower())]


EngineOpt = Annotated[
    str | None,
    typer.Option(
        "--engine",
        metavar="NAME==VERSION",
        help="Judge against this engine, e.g. vllm==0.16.0.",
        autocompletion=complete_engines,
    ),
]

EnginePythonOpt = Annotated[
    Path | None,
    typer.Option(
        "--engine-python",
        metavar="PYTHON",
        help="Ask the engine installed for this interpreter (a venv's bin/python): its own "
        "config code answers, on the CPU, for any version (cached).",
    ),
]


GpuOpt = Annotated[
    str | None,
    typer.Option(
        "--gpu",
        metavar="NAME",
        help="GPU name (rtx-pro-6000, h200, ...), compute capability (12.0), or cpu.",
        autocompletion=complete_gpus,
    ),
]


DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Show what would change; write nothing.")
]


def complete_transforms(incomplete: str) -> list[str]:
    """Shell completion: built-in transform names."""
    from patcher.transforms.catalog import builtin_transforms

    return [t.name for t in builtin_transforms() if t.name.startswith(incomplete)]


def complete_applied(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion: the transforms applied to the checkpoint typed, and their #ids."""
    from patcher.errors import PatcherError as Refused
    from patcher.store.file_status import checkpoint_status

    try:
        applied = checkpoint_status(ctx.params.get("checkpoint") or ".").applied
    except Refused:
        return []
    # Bare numbers: a shell takes an unquoted #1 for a comment.
    found = [e.transform for e in applied] + [str(e.id) for e in applied]
    return [name for name in dict.fromkeys(found) if name.startswith(incomplete)]


def complete_params(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion: NAME= for the parameters of the transform typed."""
    from patcher.errors import PatcherError as Refused
    from patcher.transforms.catalog import find_transform

    name = ctx.params.get("transform")
    if not name:
        # While an option's value is being completed, click leaves the arguments unparsed:
        # take the transform from the words typed (`patcher apply CKPT TRANSFORM ...`).
        words = [w for w in os.environ.get("COMP_WORDS", "").split() if not w.startswith("-")]
        name = words[3] if len(words) > 3 and words[1] == "apply" else ""
    try:
        transform = find_transform(name)
    except Refused:
        return []
    return [f"{p.name}=" for p in transform.params if p.name.startswith(incomplete)]


ProfileOpt = Annotated[
    Path | None,
    typer.Option(
        "--profile",
        metavar="FILE",
        help="A profile file (TOML): engine, gpu, tensor_parallel and the launch, [transforms].",
    ),
]


TpOpt = Annotated[
    int | None,
    typer.Option(
        "--tp",
        "--tensor-parallel-size",
        "-tp",
        min=1,
        metavar="N",
        help="Tensor-parallel size (GPUs per stage).",
    ),
]
PpOpt = Annotated[
    int | None,
    typer.Option(
        "--pp", "--pipeline-parallel-size", min=1, metavar="N", help="Pipeline-parallel size."
    ),
]
KvMemoryOpt = Annotated[
    str | None,
    typer.Option(
        "--kv-cache-memory",
        metavar="SIZE",
        help="The KV space per GPU (vLLM's --kv-cache-memory-bytes), e.g. 1GiB; with --gpu cpu, "
        "the only way to know it.",
    ),
]
WeightsOpt = Annotated[
    str | None,
    typer.Option(
        "--weights",
        metavar="SIZE",
        help="Weights of all GPUs together, e.g. 590GB (default: the index's total_size).",
    ),
]


def _context_words(value: str | None) -> str | None:
    """--max-model-len as vLLM reads it: N, 128k (1,000s) or 128K (1,024s), or auto/-1."""
    if value is None:
        return None
    from patcher.engines.launch_flags import parse_context

    try:
        tokens = parse_context(value)
    except ValueError:
        tokens = 0
    if tokens != "auto" and tokens < 1:
        raise typer.BadParameter(f"{value!r} is not a context: give N, 128k, 128K or auto")
    return str(tokens)


MaxModelLenOpt = Annotated[
    str | None,
    typer.Option(
        "--max-model-len",
        metavar="N",
        callback=_context_words,
        help="The context wanted: N, 128k or 128K as vLLM reads it (default: what the engine "
        "derives; auto: vLLM 0.14 and later fit it to the KV memory, and plan caps nothing).",
    ),
]
UtilizationOpt = Annotated[
    float | None,
    typer.Option(
        "--gpu-utilization",
        "--gpu-memory-utilization",
        metavar="U",
        help="gpu_memory_utilization (default: that vLLM version's, 0.9, or 0.92 from 0.20).",
    ),
]
KvCacheDtypeOpt = Annotated[
    str | None,
    typer.Option(
        "--kv-cache-dtype",
        metavar="DTYPE",
        help="The engine's --kv-cache-dtype (bfloat16, fp8, auto, ...; the version's own list). "
        "Default: not passed, so 'auto' resolves from the checkpoint.",
    ),
]
ServerFlagsArg = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="[-- SERVER_FLAGS...]",
        help="Flags always passed to the server (after --), e.g. -- --enable-prefix-caching. "
        "One naming a launch setting (-tp 8) is read as that setting.",
        show_default=False,
    ),
]
