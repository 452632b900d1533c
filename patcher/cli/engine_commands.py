"""The commands that judge a checkpoint for an engine: check, overrides, doctor, plan, sync
and kv-budget. Each parses, calls one library function and renders.

Each command imports its library function when it runs (deferred on purpose): a start then
loads only that command's layers. Importing every command's library at the top would add
about 100 ms to ``patcher status`` (1.5x ``import typer`` is its budget; 2026-12-01).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from patcher.cli.options import (
    CheckpointArg,
    DryRunOpt,
    EngineOpt,
    EnginePythonOpt,
    GpuOpt,
    JsonOpt,
    KvCacheDtypeOpt,
    KvMemoryOpt,
    MaxModelLenOpt,
    PpOpt,
    ProfileOpt,
    RevisionOpt,
    ServerFlagsArg,
    TpOpt,
    UtilizationOpt,
    WeightsOpt,
)
from patcher.cli.output import (
    EXIT_CHANGES,
    EXIT_REFUSED,
    EXIT_UNKNOWN,
    checkpoint_arg,
    err,
    out,
)

if TYPE_CHECKING:
    from patcher.engines.target import Target


def check(
    checkpoint: CheckpointArg,
    engine: EngineOpt = None,
    engine_python: EnginePythonOpt = None,
    gpu: GpuOpt = None,
    tp: TpOpt = None,
    kv_cache_memory: KvMemoryOpt = None,
    kv_cache_dtype: KvCacheDtypeOpt = None,
    revision: RevisionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Report known problems and the transform for each; exit 1 when any is found, 5 when
    none is but whether the engine starts is unknown (a release patcher has not read).

    With --engine (and --gpu), also show what that engine derives from the files
    (max_model_len, the KV-cache dtype 'auto' resolves to, quantization, MLA, the attention
    backends that accept the config) and the errors its config stage would raise. With --tp
    (or --kv-cache-memory) too, whether the context fits in the KV cache after the weights.
    With --engine-python, the engine installed there answers with its own config code.
    """
    from patcher.advice.check import check_checkpoint
    from patcher.cli import render

    report = check_checkpoint(
        checkpoint_arg(checkpoint, revision),
        engine=engine,
        gpu=gpu,
        tensor_parallel=tp,
        kv_cache_memory=kv_cache_memory,
        kv_cache_dtype=kv_cache_dtype,
        engine_python=engine_python,
    )
    out(render.to_json(report.to_json()) if as_json else render.check_text(report))
    if report.findings:
        raise typer.Exit(EXIT_REFUSED)
    if report.engine is not None and report.engine.verdict == "unknown":
        raise typer.Exit(EXIT_UNKNOWN)


def overrides(
    checkpoint: CheckpointArg,
    engine: EngineOpt = None,
    revision: RevisionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the vLLM --hf-overrides and flags equivalent to the applied transforms.

    With --engine, only flags that version accepts (--kv-cache-dtype bfloat16 needs vLLM 0.15).
    """
    from patcher.advice.overrides import engine_overrides
    from patcher.cli import render

    result = engine_overrides(checkpoint_arg(checkpoint, revision), engine=engine)
    out(render.to_json(result.to_json()) if as_json else render.overrides_text(result))


def doctor(
    log: Annotated[
        str,
        typer.Argument(metavar="LOG", help="A failed vLLM or SGLang start-up log ('-': stdin)."),
    ],
    checkpoint: Annotated[
        str | None,
        typer.Option(
            "--checkpoint",
            metavar="CKPT",
            help="The checkpoint, to fill in the suggested commands.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Find the root error in a failed engine start-up log and name the fix.

    Exit 0 when the failure is recognised, 1 when it is not.
    """
    import io
    import sys

    from patcher.advice.doctor import diagnose, diagnose_lines
    from patcher.cli import render

    if log == "-":
        stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
        result = diagnose_lines(stdin, checkpoint=checkpoint or "CKPT")
    else:
        result = diagnose(log, checkpoint=checkpoint)
    out(render.to_json(result.to_json()) if as_json else render.doctor_text(result))
    if not result.recognised:
        raise typer.Exit(EXIT_REFUSED)


def target_from(options: Mapping[str, Any]) -> Target:
    """The target of plan and sync, built once from their one group of options (``ctx.params``,
    by the options' parameter names; the flags after ``--`` are ``server_flags``)."""
    from patcher.engines.target import make_target

    context = options.get("max_model_len")
    return make_target(
        engine=options.get("engine"),
        gpu=options.get("gpu"),
        tensor_parallel=options.get("tp"),
        profile=options.get("profile"),
        pipeline_parallel=options.get("pp"),
        kv_cache_memory=options.get("kv_cache_memory"),
        weights=options.get("weights"),
        max_model_len=context if context in (None, "auto") else int(context),
        gpu_memory_utilization=options.get("utilization"),
        kv_cache_dtype=options.get("kv_cache_dtype"),
        flags=options.get("server_flags") or None,
        engine_python=options.get("engine_python"),
    )


def plan(
    ctx: typer.Context,
    checkpoint: CheckpointArg,
    server_flags: ServerFlagsArg = None,
    profile: ProfileOpt = None,
    engine: EngineOpt = None,
    gpu: GpuOpt = None,
    tp: TpOpt = None,
    pp: PpOpt = None,
    kv_cache_memory: KvMemoryOpt = None,
    weights: WeightsOpt = None,
    max_model_len: MaxModelLenOpt = None,
    utilization: UtilizationOpt = None,
    kv_cache_dtype: KvCacheDtypeOpt = None,
    engine_python: EnginePythonOpt = None,
    prune: PruneOpt = False,
    revision: RevisionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show what sync would do for a target (apply, revert or re-apply, with the reason) and
    how to start the server there: its flags, with --max-model-len where the context does not
    fit, and its command line. Flags after -- are passed to the server as given.

    Exit 0 when the checkpoint is in sync, 4 when changes are pending, 1 on an error (what
    sync would refuse, plan refuses).
    """
    from patcher.cli import render
    from patcher.ops.sync import plan

    result = plan(
        checkpoint_arg(checkpoint, revision),
        target_from(ctx.params),
        prune=prune,
    )
    out(render.to_json(result.to_json()) if as_json else render.plan_text(result))
    if result.launch is not None and result.launch.problem is not None:
        raise typer.Exit(EXIT_REFUSED)  # no go-ahead: the server cannot start there
    if not result.in_sync:
        raise typer.Exit(EXIT_CHANGES)


def sync(
    ctx: typer.Context,
    checkpoint: CheckpointArg,
    server_flags: ServerFlagsArg = None,
    profile: ProfileOpt = None,
    engine: EngineOpt = None,
    gpu: GpuOpt = None,
    tp: TpOpt = None,
    pp: PpOpt = None,
    kv_cache_memory: KvMemoryOpt = None,
    weights: WeightsOpt = None,
    max_model_len: MaxModelLenOpt = None,
    utilization: UtilizationOpt = None,
    kv_cache_dtype: KvCacheDtypeOpt = None,
    engine_python: EnginePythonOpt = None,
    prune: PruneOpt = False,
    dry_run: DryRunOpt = False,
    revision: RevisionOpt = None,
    overlay: Annotated[
        Path | None,
        typer.Option(
            "--overlay",
            metavar="DIR",
            help="Leave CHECKPOINT untouched (a read-only model store): sync an overlay "
            "folder of links and patched copies instead, made if needed.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Make the checkpoint what the target needs: revert, re-apply and apply as planned.

    A second sync does nothing. If a step fails, the steps already done are undone.
    """
    from patcher.cli import render
    from patcher.ops.sync import sync

    result = sync(
        checkpoint_arg(checkpoint, revision),
        target_from(ctx.params),
        dry_run=dry_run,
        overlay=overlay,
        prune=prune,
    )
    out(render.to_json(result.to_json()) if as_json else render.sync_text(result))


PruneOpt = Annotated[
    bool,
    typer.Option(
        "--prune",
        help="Also revert transforms applied by hand that the target does not need (by "
        "default sync keeps them: it owns only what a target brought in).",
    ),
]


class KvDtype(StrEnum):
    """KV-cache element type for kv-budget."""

    auto = "auto"
    fp8 = "fp8"
    bf16 = "bf16"
    bfloat16 = "bfloat16"
    float16 = "float16"
    fp8_e4m3 = "fp8_e4m3"
    fp8_e5m2 = "fp8_e5m2"


def kv_budget_command(
    checkpoint: CheckpointArg,
    gpu: GpuOpt = None,
    gpu_memory: Annotated[
        str | None,
        typer.Option(
            "--gpu-memory", metavar="SIZE", help="Memory per GPU: 96GiB, 80GB (default: --gpu's)."
        ),
    ] = None,
    weights: Annotated[
        str | None,
        typer.Option(
            "--weights",
            metavar="SIZE",
            help="Weights of all GPUs together (default: the index's total_size).",
        ),
    ] = None,
    tp: TpOpt = None,
    pp: PpOpt = None,
    kv_dtype: Annotated[
        KvDtype,
        typer.Option(
            "--kv-dtype",
            "--kv-cache-dtype",
            help="KV element type (auto: what the engine resolves from the checkpoint).",
        ),
    ] = KvDtype.auto,
    engine: EngineOpt = None,
    utilization: Annotated[
        float | None,
        typer.Option(
            "--gpu-utilization",
            metavar="U",
            help="gpu_memory_utilization (default: 0.9, or 0.92 from vLLM 0.20 with --engine).",
        ),
    ] = None,
    allowance: Annotated[
        str,
        typer.Option(
            "--allowance", metavar="SIZE", help="Per-GPU memory for activations, CUDA graphs, NCCL."
        ),
    ] = "1GiB",
    kv_cache_memory: KvMemoryOpt = None,
    engine_python: EnginePythonOpt = None,
    revision: RevisionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Estimate KV-cache bytes per token and the longest context that fits; exit 1 when the
    config's own context does not fit."""
    from patcher.advice.kvbudget import kv_budget
    from patcher.cli import render

    budget = kv_budget(
        checkpoint_arg(checkpoint, revision),
        gpu_memory=gpu_memory,
        gpu=gpu,
        weights=weights,
        tensor_parallel=tp or 1,
        pipeline_parallel=pp or 1,
        kv_dtype=kv_dtype.value,
        gpu_memory_utilization=utilization,
        engine=engine,
        allowance=allowance,
        kv_cache_memory=kv_cache_memory,
        engine_python=engine_python,
    )
    out(render.to_json(budget.to_json()) if as_json else render.kv_budget_text(budget))
    if budget.config_context is not None and not budget.fits:
        raise typer.Exit(EXIT_REFUSED)


def run(
    command: Annotated[
        list[str],
        typer.Argument(
            metavar="-- ENGINE_COMMAND...",
            help="The server's command line after --: 'vllm serve CKPT [flags]' or "
            "'python -m sglang.launch_server --model-path CKPT [flags]'.",
        ),
    ],
    profile: ProfileOpt = None,
    engine: EngineOpt = None,
    gpu: GpuOpt = None,
    check: Annotated[
        bool, typer.Option("--check", help="Only verify the checkpoint is in sync; never write.")
    ] = False,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
    stop_timeout: Annotated[
        float,
        typer.Option(
            "--stop-timeout",
            metavar="SECONDS",
            min=0,
            help="After SIGTERM, SIGINT or SIGHUP, how long the engine gets to shut down "
            "before its process group is killed.",
        ),
    ] = 30.0,
    startup_lock: Annotated[
        float,
        typer.Option(
            "--startup-lock",
            metavar="SECONDS",
            min=0,
            help="While the engine starts, patcher writers (a revert from another shell) wait: "
            "until the engine says it serves, or at most this long.",
        ),
    ] = 900.0,
) -> None:
    """Sync the checkpoint for the launch, add the planned flags and start the engine.

    The target comes from the command line (parallel sizes, --max-model-len,
    --kv-cache-memory-bytes), the engine's version (from its own interpreter) and the GPU
    (nvidia-smi; a +cpu vLLM build is the CPU target); --engine, --gpu or --profile override.
    A flag of yours that contradicts the plan is refused, naming both values. The engine runs
    in its own process group and never outlives patcher; its stdout and stderr are passed
    through byte for byte and each signal reaches it once. When it fails, doctor reads what it
    printed. The exit code is the engine's (128+N when a signal N ended it; 1 when patcher
    refuses before starting it).
    """
    from patcher.cli import render
    from patcher.ops.run import plan_run

    prepared = plan_run(
        command, engine=engine, gpu=gpu, profile=profile, check=check, dry_run=dry_run
    )
    if dry_run:
        out(
            render.to_json(prepared.to_json())
            if as_json
            else render.run_text(prepared) + "\ndry run: nothing was written or started"
        )
        return
    err(render.run_text(prepared))
    from patcher.ops.run import hold_for_start, start_engine

    sys.stdout.flush()
    sys.stderr.flush()

    def closed(stream: str) -> None:
        if stream == "stdout":
            err("patcher: stdout was closed; the engine's stdout is closed too")

    held = hold_for_start(prepared, startup_lock)
    ended = start_engine(
        prepared,
        stop_timeout=stop_timeout,
        on_closed=closed,
        on_ready=None if held is None else held.release,
        ready_timeout=startup_lock,
    )
    if ended.diagnosis is not None and ended.diagnosis.recognised:
        from patcher.cli import render

        err(f"patcher: {prepared.argv[0]} exited with {ended.code}; doctor reads its output:")
        err(render.doctor_text(ended.diagnosis))
    raise typer.Exit(ended.code)
