"""The ``patcher`` command: parse arguments, call one library function, render the result.

Exit codes: 0 success or nothing to do; 1 refused or failed (a one-line message says why and
what to run next); 2 usage error; 3 unexpected error (a bug; PATCHER_DEBUG=1 shows the
traceback); 4 ``plan`` found changes pending; 130 interrupted.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from patcher.errors import PatcherError

if TYPE_CHECKING:
    from patcher.ops.targets import Target

EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_BUG, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_CHANGES = 4  # plan: the checkpoint is not in sync with the target (as terraform's 2)

APP_SETTINGS: dict[str, Any] = {
    "name": "patcher",
    "help": "Named, reversible, journalled edits to the config files of a model checkpoint.",
    "no_args_is_help": False,
    "invoke_without_command": True,
    "context_settings": {"help_option_names": ["-h", "--help"]},
    "pretty_exceptions_enable": False,
    "rich_markup_mode": None,
}
app = typer.Typer(**APP_SETTINGS)

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
    typer.Option("--revision", help="With an ORG/NAME checkpoint: branch, tag or commit."),
]


def _complete_engines(incomplete: str) -> list[str]:
    """Shell completion: each engine release line the engine model covers, newest first."""
    from patcher.engines.target import NEWEST_READ, OLDEST

    newest, oldest = NEWEST_READ["vllm"], OLDEST["vllm"]
    found = [f"vllm==0.{minor}.0" for minor in range(newest[1], oldest[1] - 1, -1)]
    found.append("sglang==" + ".".join(map(str, NEWEST_READ["sglang"])))
    return [spec for spec in found if spec.startswith(incomplete)]


def _complete_gpus(incomplete: str) -> list[str]:
    """Shell completion: the GPU names patcher knows."""
    from patcher.engines.gpus import GPUS

    return [name for name in GPUS if name.startswith(incomplete.lower())]


EngineOpt = Annotated[
    str | None,
    typer.Option(
        "--engine",
        metavar="NAME==VERSION",
        help="Judge against this engine, e.g. vllm==0.16.0.",
        autocompletion=_complete_engines,
    ),
]
GpuOpt = Annotated[
    str | None,
    typer.Option(
        "--gpu",
        help="GPU name (rtx-pro-6000, h200, ...) or compute capability (12.0).",
        autocompletion=_complete_gpus,
    ),
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Show what would change; write nothing.")
]


def _target(checkpoint: str, revision: str | None) -> str:
    """The checkpoint argument with ``--revision`` folded in (``ORG/NAME@REVISION``)."""
    return checkpoint if revision is None else f"{checkpoint}@{revision}"


_colour = True  # --no-color and NO_COLOR turn it off; click strips it from pipes anyway


def _paint(text: str) -> str:
    """Red removals, green additions, bold headings: for a terminal only."""
    if not _colour or os.environ.get("NO_COLOR") or not sys.stdout.isatty():
        return text
    lines = []
    for line in text.split("\n"):
        if line.startswith("+") and not line.startswith("+++"):
            line = typer.style(line, fg="green")
        elif line.startswith("-") and not line.startswith("---"):
            line = typer.style(line, fg="red")
        elif line.startswith(("applied ", "reverted ", "synced ", "rebased ", "[")):
            line = typer.style(line, bold=True)
        lines.append(line)
    return "\n".join(lines)


def _out(text: str) -> None:
    try:
        typer.echo(text if text.lstrip().startswith(("{", "[")) else _paint(text))
        sys.stdout.flush()
    except OSError as exc:
        # stdout is full or closed: say so once, and keep the exit from writing to it again.
        sys.stdout = Path(os.devnull).open("w")  # noqa: SIM115
        raise PatcherError(
            f"cannot write the output ({exc.strerror or exc})",
            hint="send the output somewhere with room, e.g. > out.txt",
        ) from None


def _err(text: str) -> None:
    if _colour and not os.environ.get("NO_COLOR") and text.startswith("error:"):
        text = typer.style("error:", fg="red", bold=True) + text[len("error:") :]
    typer.echo(text, err=True)


def _report_wait(holder: str, waited: float) -> None:
    """Progress on stderr while another process holds the checkpoint's lock."""
    end = "\r" if sys.stderr.isatty() else "\n"
    sys.stderr.write(f"waiting for the lock held by {holder} ({waited:.0f} s)...{end}")
    sys.stderr.flush()


def _report_unlocked(lock_file: str, reason: str) -> None:
    """Say on stderr that the command goes on without the checkpoint's lock."""
    _err(
        f"warning: {lock_file}: the filesystem refuses file locks ({reason}); going on "
        "without one: every write still checks the bytes it expects"
    )


def _report_fetch(repo: str, path: str, index: int, total: int) -> None:
    """Progress on stderr while upstream files are fetched; on a terminal only (one line,
    redrawn, then erased)."""
    if not sys.stderr.isatty():
        return
    if total == 0:
        sys.stderr.write("\r\x1b[K")
    elif index == 0:
        sys.stderr.write(f"\r\x1b[Kresolving {repo} ({path})...")
    else:
        sys.stderr.write(f"\r\x1b[Kfetching {path} from {repo} ({index}/{total})...")
    sys.stderr.flush()


def _report_wait_done() -> None:
    """Keep the last wait line on a terminal: what follows starts on a line of its own."""
    if sys.stderr.isatty():
        sys.stderr.write("\n")
        sys.stderr.flush()


@contextlib.contextmanager
def _boundary(as_json: bool = False) -> Iterator[None]:
    """The one exception boundary: known failures exit 1 with their message, others exit 3.
    With ``--json`` a known failure is also JSON on stdout:
    ``{"error": {"message", "file", "pointer", "hint", "exit_code"}}``."""
    try:
        yield
    except typer.Exit:
        raise
    except PatcherError as exc:
        if as_json:
            import json

            error = {
                "message": exc.message,
                "file": exc.file,
                "pointer": exc.pointer,
                "hint": exc.hint,
                "exit_code": exc.exit_code,
            }
            typer.echo(json.dumps({"error": error}, indent=2))
        _err(f"error: {exc.message}")
        if exc.detail:
            _err(exc.detail.rstrip("\n"))
        raise typer.Exit(EXIT_REFUSED) from None
    except KeyboardInterrupt:
        _err("interrupted")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as exc:
        if os.environ.get("PATCHER_DEBUG"):
            import traceback

            _err(traceback.format_exc())
        _err(
            f"unexpected error: {type(exc).__name__}: {exc} (a bug in patcher; rerun with "
            "PATCHER_DEBUG=1 for a traceback)"
        )
        raise typer.Exit(EXIT_BUG) from None


def _version(value: bool) -> None:
    if value:
        from patcher.version import __version__

        typer.echo(f"patcher {__version__}")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _main(
    ctx: typer.Context,
    version: Annotated[  # noqa: ARG001 (handled by its eager callback)
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
    no_color: Annotated[
        bool, typer.Option("--no-color", help="No colour, even on a terminal (also NO_COLOR).")
    ] = False,
) -> None:
    """Named, reversible, journalled edits to the config files of a model checkpoint."""
    global _colour
    _colour = not no_color
    from patcher import progress

    progress.wait_reporter = _report_wait
    progress.wait_done = _report_wait_done
    progress.fetch_reporter = _report_fetch
    progress.unlocked_reporter = _report_unlocked
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())  # a bare `patcher`: help on stdout, exit 0
        raise typer.Exit(EXIT_OK)


def _complete_transforms(incomplete: str) -> list[str]:
    """Shell completion: built-in transform names."""
    from patcher.transforms.catalog import builtin_transforms

    return [t.name for t in builtin_transforms() if t.name.startswith(incomplete)]


def _complete_applied(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion: the transforms applied to the checkpoint typed, and their #ids."""
    from patcher.errors import PatcherError as Refused
    from patcher.store.file_status import checkpoint_status

    try:
        applied = checkpoint_status(ctx.params.get("checkpoint") or ".").applied
    except Refused:
        return []
    found = [e.transform for e in applied] + [f"#{e.id}" for e in applied]
    return [name for name in dict.fromkeys(found) if name.startswith(incomplete)]


def _complete_params(ctx: typer.Context, incomplete: str) -> list[str]:
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


@app.command("list")
def list_command(as_json: JsonOpt = False) -> None:
    """List the built-in transforms."""
    with _boundary(as_json):
        from patcher.cli import render
        from patcher.transforms.catalog import builtin_transforms

        transforms = builtin_transforms()
        if as_json:
            _out(render.to_json([t.to_json() for t in transforms]))
        else:
            _out(render.transform_list_text(transforms))


@app.command()
def show(
    name: Annotated[
        str,
        typer.Argument(
            metavar="NAME",
            help="Transform name, or a transform file path.",
            autocompletion=_complete_transforms,
        ),
    ],
    engine: EngineOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Explain one transform: files, why, when to undo, evidence, engine flag, parameters.

    With --engine, also whether its engine flag works on that version.
    """
    with _boundary(as_json):
        from patcher.advice.overrides import flags_verdict
        from patcher.cli import render
        from patcher.engines.target import parse_engine
        from patcher.transforms.catalog import find_transform

        transform = find_transform(name)
        verdict = flags_verdict(transform, parse_engine(engine)) if engine else None
        _out(
            render.to_json(transform.to_json(verdict))
            if as_json
            else render.transform_text(transform, verdict)
        )


@app.command()
def apply(
    checkpoint: CheckpointArg,
    transform: Annotated[
        str,
        typer.Argument(
            metavar="TRANSFORM",
            help="Built-in transform name, or a .toml file.",
            autocompletion=_complete_transforms,
        ),
    ],
    assignments: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Set a parameter (repeatable).",
            autocompletion=_complete_params,
        ),
    ] = None,
    dry_run: DryRunOpt = False,
    overlay: Annotated[
        Path | None,
        typer.Option("--overlay", help="Leave CKPT untouched: write an overlay folder instead."),
    ] = None,
    revision: RevisionOpt = None,
    engine: EngineOpt = None,
    stack: Annotated[
        bool,
        typer.Option(
            "--stack",
            help="Applied already with other parameters: add a second entry on top instead of "
            "replacing the first.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Apply a transform and record it in the checkpoint's journal.

    With --engine, a transform whose effect that engine would not see (e.g. set-context-length
    on a YaRN config under vLLM before 0.33) is refused, naming the flag that works.
    """
    with _boundary(as_json):
        from patcher.cli import render
        from patcher.ops.applying import apply_transform
        from patcher.transforms.params import parse_assignments

        result = apply_transform(
            _target(checkpoint, revision),
            transform,
            parse_assignments(assignments or []),
            dry_run=dry_run,
            overlay=overlay,
            engine=engine,
            stack=stack,
        )
        _out(
            render.to_json(result.to_json())
            if as_json
            # The undo names the overlay when there is one: CKPT itself has no journal.
            else render.apply_text(result, None if overlay else _target(checkpoint, revision))
        )
        if not as_json:
            for warning in result.warnings:
                _err(f"warning: {warning}")


@app.command()
def revert(
    checkpoint: CheckpointArg,
    name: Annotated[
        str | None,
        typer.Argument(
            metavar="NAME_OR_#N",
            help="Transform name, or entry #N, to revert.",
            autocompletion=_complete_applied,
        ),
    ] = None,
    last: Annotated[bool, typer.Option("--last", help="Revert the last applied.")] = False,
    every: Annotated[bool, typer.Option("--all", help="Revert everything, latest first.")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Undo what still matches in hand-edited files.")
    ] = False,
    dry_run: DryRunOpt = False,
    revision: RevisionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Undo applied transforms: byte for byte when the files are as patcher left them."""
    chosen = [
        what
        for what, given in (("NAME", name is not None), ("--last", last), ("--all", every))
        if given
    ]
    if len(chosen) != 1:
        problem = (
            f"{' and '.join(chosen)} cannot be combined: say one of them"
            if chosen
            else "say what to revert: a NAME (or #N), --last or --all"
        )
        _err(f"usage error: {problem}")
        raise typer.Exit(EXIT_USAGE)
    with _boundary(as_json):
        from patcher.cli import render
        from patcher.ops.reverting import revert_transforms

        result = revert_transforms(
            _target(checkpoint, revision),
            name,
            last=last,
            every=every,
            force=force,
            dry_run=dry_run,
        )
        _out(render.to_json(result.to_json()) if as_json else render.revert_text(result))


@app.command()
def status(
    checkpoint: CheckpointArg,
    check: Annotated[
        bool,
        typer.Option("--check", help="Exit 1 when a file drifted from what the journal says."),
    ] = False,
    revision: RevisionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the applied transforms and the state of every journalled file.

    With --check, exit 1 when a journalled file is changed, missing, a new upstream, back to
    its original while its transform is applied, or half-done, so CI can gate on drift.
    """
    with _boundary(as_json):
        from patcher.cli import render
        from patcher.store.file_status import checkpoint_status

        result = checkpoint_status(_target(checkpoint, revision))
        _out(render.to_json(result.to_json()) if as_json else render.status_text(result))
    if check and any(f.state not in ("patched", "reverted") for f in result.files):
        raise typer.Exit(EXIT_REFUSED)


@app.command()
def diff(
    checkpoint: CheckpointArg,
    repo: Annotated[
        str | None,
        typer.Argument(
            metavar="REPO", help="With --upstream: ORG/NAME[@REVISION] (inferred when it can be)."
        ),
    ] = None,
    upstream: Annotated[
        bool, typer.Option("--upstream", help="Compare with the repository on the Hub.")
    ] = False,
    revision: RevisionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Compare with the originals in the journal (offline), or with --upstream, with the Hub.

    With --upstream, every difference is attributed to the applied transform that explains
    it; exit code 1 when some difference is explained by none.
    """
    if repo is not None and not upstream:
        _err("usage error: a repository can only be given with --upstream")
        raise typer.Exit(EXIT_USAGE)
    with _boundary(as_json):
        from patcher.cli import render

        if upstream:
            from patcher.ops.upstream import diff_upstream

            found = diff_upstream(_target(checkpoint, revision), repo)
            _out(render.to_json(found.to_json()) if as_json else render.upstream_text(found))
        else:
            from patcher.ops.offline_diff import diff_checkpoint

            result = diff_checkpoint(_target(checkpoint, revision), structural=as_json)
            _out(render.to_json(result.to_json()) if as_json else render.diff_text(result))
    if upstream and found.unexplained:
        raise typer.Exit(EXIT_REFUSED)


@app.command()
def reapply(
    checkpoint: CheckpointArg, revision: RevisionOpt = None, as_json: JsonOpt = False
) -> None:
    """Put the journal's transforms back after a re-download restored upstream files."""
    with _boundary(as_json):
        from patcher.cli import render
        from patcher.ops.reapplying import reapply_transforms

        result = reapply_transforms(_target(checkpoint, revision))
        _out(render.to_json(result.to_json()) if as_json else render.reapply_text(result))


@app.command()
def rebase(
    checkpoint: CheckpointArg,
    to: Annotated[
        str | None,
        typer.Option("--to", help="With ORG/NAME: the revision to carry the journal to."),
    ] = None,
    revert_old: Annotated[
        bool,
        typer.Option("--revert-old", help="With ORG/NAME: also revert the old patched revision."),
    ] = False,
    revision: RevisionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The journalled files hold a new upstream version: re-apply the transforms onto it.

    Per transform: re-applied, no longer needed (upstream made the same change), or a conflict
    (upstream changed a member it edits: exit 1, the three values shown, nothing changed).
    With ORG/NAME in the Hugging Face cache, carries the journal of the patched revision to
    the one refs/main (or --to) names; the old revision is left as it is unless --revert-old.
    """
    with _boundary(as_json):
        from patcher.cli import render
        from patcher.ops.rebasing import rebase_checkpoint

        result = rebase_checkpoint(_target(checkpoint, revision), to=to, revert_old=revert_old)
        _out(render.to_json(result.to_json()) if as_json else render.rebase_text(result))


@app.command()
def check(
    checkpoint: CheckpointArg,
    engine: EngineOpt = None,
    gpu: GpuOpt = None,
    revision: RevisionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Report known problems and the transform for each; exit 1 when any is found.

    With --engine (and --gpu), also show what that engine derives from the files
    (max_model_len, the KV-cache dtype 'auto' resolves to, quantization, MLA, the attention
    backends that accept the config) and the errors its config stage would raise.
    """
    with _boundary(as_json):
        from patcher.advice.check import check_checkpoint
        from patcher.cli import render

        report = check_checkpoint(_target(checkpoint, revision), engine=engine, gpu=gpu)
        _out(render.to_json(report.to_json()) if as_json else render.check_text(report))
    if report.findings:
        raise typer.Exit(EXIT_REFUSED)


@app.command()
def overrides(
    checkpoint: CheckpointArg,
    engine: EngineOpt = None,
    revision: RevisionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the vLLM --hf-overrides and flags equivalent to the applied transforms.

    With --engine, only flags that version accepts (--kv-cache-dtype bfloat16 needs vLLM 0.15).
    """
    with _boundary(as_json):
        from patcher.advice.overrides import engine_overrides
        from patcher.cli import render

        result = engine_overrides(_target(checkpoint, revision), engine=engine)
        _out(render.to_json(result.to_json()) if as_json else render.overrides_text(result))


@app.command()
def doctor(
    log: Annotated[
        str,
        typer.Argument(metavar="LOG", help="A failed vLLM or SGLang start-up log ('-': stdin)."),
    ],
    checkpoint: Annotated[
        str | None,
        typer.Option("--checkpoint", help="The checkpoint, to fill in the suggested commands."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Find the root error in a failed engine start-up log and name the fix.

    Exit 0 when the failure is recognised, 1 when it is not.
    """
    with _boundary(as_json):
        import io
        import sys

        from patcher.advice.doctor import diagnose, diagnose_lines
        from patcher.cli import render

        if log == "-":
            stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
            result = diagnose_lines(stdin, checkpoint=checkpoint or "CKPT")
        else:
            result = diagnose(log, checkpoint=checkpoint)
        _out(render.to_json(result.to_json()) if as_json else render.doctor_text(result))
    if not result.recognised:
        raise typer.Exit(EXIT_REFUSED)


ProfileOpt = Annotated[
    Path | None,
    typer.Option(
        "--profile", help="A profile file (TOML): engine, gpu, tensor_parallel, [transforms]."
    ),
]
TpOpt = Annotated[int | None, typer.Option("--tp", min=1, help="Tensor-parallel size.")]


def _make_target(
    profile: Path | None, engine: str | None, gpu: str | None, tp: int | None
) -> Target:
    from patcher.ops.targets import make_target

    return make_target(engine=engine, gpu=gpu, tensor_parallel=tp, profile=profile)


@app.command()
def plan(
    checkpoint: CheckpointArg,
    profile: ProfileOpt = None,
    engine: EngineOpt = None,
    gpu: GpuOpt = None,
    tp: TpOpt = None,
    revision: RevisionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show what sync would do for a target: apply, revert or re-apply, with the reason.

    Exit 0 when the checkpoint is in sync, 4 when changes are pending, 1 on an error.
    """
    with _boundary(as_json):
        from patcher.cli import render
        from patcher.ops.planning import plan_checkpoint

        result = plan_checkpoint(
            _target(checkpoint, revision), _make_target(profile, engine, gpu, tp)
        )
        _out(render.to_json(result.to_json()) if as_json else render.plan_text(result))
    if not result.in_sync:
        raise typer.Exit(EXIT_CHANGES)


@app.command()
def sync(
    checkpoint: CheckpointArg,
    profile: ProfileOpt = None,
    engine: EngineOpt = None,
    gpu: GpuOpt = None,
    tp: TpOpt = None,
    dry_run: DryRunOpt = False,
    revision: RevisionOpt = None,
    overlay: Annotated[
        Path | None,
        typer.Option(
            "--overlay",
            help="Leave CHECKPOINT untouched (a read-only model store): sync an overlay "
            "folder of links and patched copies instead, made if needed.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Make the checkpoint what the target needs: revert, re-apply and apply as planned.

    A second sync does nothing. If a step fails, the steps already done are undone.
    """
    with _boundary(as_json):
        from patcher.cli import render
        from patcher.ops.planning import sync_checkpoint

        result = sync_checkpoint(
            _target(checkpoint, revision),
            _make_target(profile, engine, gpu, tp),
            dry_run=dry_run,
            overlay=overlay,
        )
        _out(render.to_json(result.to_json()) if as_json else render.sync_text(result))


class KvDtype(StrEnum):
    """KV-cache element type for kv-budget."""

    auto = "auto"
    fp8 = "fp8"
    bf16 = "bf16"


@app.command("kv-budget")
def kv_budget_command(
    checkpoint: CheckpointArg,
    gpu: GpuOpt = None,
    gpu_memory: Annotated[
        str | None,
        typer.Option("--gpu-memory", help="Memory per GPU: 96GiB, 80GB (default: --gpu's)."),
    ] = None,
    weights: Annotated[
        str | None,
        typer.Option(
            "--weights", help="Weights of all GPUs together (default: the index's total_size)."
        ),
    ] = None,
    tp: Annotated[int, typer.Option("--tp", min=1, help="Tensor-parallel size.")] = 1,
    kv_dtype: Annotated[
        KvDtype, typer.Option("--kv-dtype", help="KV element type.")
    ] = KvDtype.auto,
    engine: EngineOpt = None,
    utilization: Annotated[
        float | None,
        typer.Option(
            "--gpu-utilization",
            help="gpu_memory_utilization (default: 0.9, or 0.92 from vLLM 0.20 with --engine).",
        ),
    ] = None,
    allowance: Annotated[
        str,
        typer.Option("--allowance", help="Per-GPU memory for activations, CUDA graphs, NCCL."),
    ] = "1GiB",
    revision: RevisionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Estimate KV-cache bytes per token and the longest context that fits; exit 1 when the
    config's own context does not fit."""
    with _boundary(as_json):
        from patcher.advice.kvbudget import kv_budget
        from patcher.cli import render

        budget = kv_budget(
            _target(checkpoint, revision),
            gpu_memory_gib=gpu_memory,
            gpu=gpu,
            weights_gib=weights,
            tp=tp,
            kv_dtype=kv_dtype.value,
            utilization=utilization,
            engine=engine,
            allowance_gib=allowance,
        )
        _out(render.to_json(budget.to_json()) if as_json else render.kv_budget_text(budget))
    if budget.config_context is not None and not budget.fits:
        raise typer.Exit(EXIT_REFUSED)


COMMANDS: dict[str, Any] = {
    "list": list_command,
    "show": show,
    "apply": apply,
    "revert": revert,
    "status": status,
    "diff": diff,
    "reapply": reapply,
    "rebase": rebase,
    "check": check,
    "overrides": overrides,
    "doctor": doctor,
    "plan": plan,
    "sync": sync,
    "kv-budget": kv_budget_command,
}


def main() -> None:
    """Entry point of the ``patcher`` command."""
    # Valid JSON may hold integers of any length (the editor keeps their spelling); Python
    # refuses to parse more than 4,300 digits unless told otherwise.
    sys.set_int_max_str_digits(0)
    name = sys.argv[1] if len(sys.argv) > 1 else None
    if name in COMMANDS and "_PATCHER_COMPLETE" not in os.environ:
        # typer builds every command's parameters on each start: for one command, build
        # that one only (the same function, options and help), which keeps start-up lean.
        single = typer.Typer(**APP_SETTINGS)
        single.callback()(_main)
        single.command(name)(COMMANDS[name])
        single()
        return
    app()
