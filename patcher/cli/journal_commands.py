"""The commands on a checkpoint's journal: list and show transforms, apply, revert, status,
diff, reapply, rebase. Each parses, calls one library function and renders.

Each command imports its library function when it runs (deferred on purpose): a start then
loads only that command's layers. Importing every command's library at the top would add
about 100 ms to ``patcher status`` (1.5x ``import typer`` is its budget; 2026-12-01).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from patcher.cli.options import (
    CheckpointArg,
    DryRunOpt,
    EngineOpt,
    JsonOpt,
    RevisionOpt,
    complete_applied,
    complete_params,
    complete_transforms,
)
from patcher.cli.output import (
    EXIT_REFUSED,
    EXIT_USAGE,
    checkpoint_arg,
    err,
    out,
)


def list_command(as_json: JsonOpt = False) -> None:
    """List the built-in transforms."""
    from patcher.cli import render
    from patcher.transforms.catalog import builtin_transforms

    transforms = builtin_transforms()
    if as_json:
        out(render.to_json([t.to_json() for t in transforms]))
    else:
        out(render.transform_list_text(transforms))


def show(
    name: Annotated[
        str,
        typer.Argument(
            metavar="NAME",
            help="Transform name, or a transform file path.",
            autocompletion=complete_transforms,
        ),
    ],
    engine: EngineOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Explain one transform: files, why, when to undo, evidence, engine flag, parameters.

    With --engine, also whether its engine flag works on that version.
    """
    from patcher.advice.overrides import flags_verdict
    from patcher.cli import render
    from patcher.engines.engine import parse_engine
    from patcher.transforms.catalog import find_transform

    transform = find_transform(name)
    verdict = flags_verdict(transform, parse_engine(engine)) if engine else None
    out(
        render.to_json(transform.to_json(verdict))
        if as_json
        else render.transform_text(transform, verdict)
    )


def apply(
    checkpoint: CheckpointArg,
    transform: Annotated[
        str,
        typer.Argument(
            metavar="TRANSFORM",
            help="Built-in transform name, or a .toml file.",
            autocompletion=complete_transforms,
        ),
    ],
    assignments: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Set a parameter (repeatable).",
            autocompletion=complete_params,
        ),
    ] = None,
    dry_run: DryRunOpt = False,
    overlay: Annotated[
        Path | None,
        typer.Option(
            "--overlay",
            metavar="DIR",
            help="Leave CKPT untouched: write an overlay folder instead.",
        ),
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
    on a YaRN config under vLLM before 0.30) is refused, naming the flag that works.
    """
    from patcher.cli import render
    from patcher.ops.apply import apply
    from patcher.transforms.params import parse_assignments

    result = apply(
        checkpoint_arg(checkpoint, revision),
        transform,
        parse_assignments(assignments or []),
        dry_run=dry_run,
        overlay=overlay,
        engine=engine,
        stack=stack,
    )
    out(
        render.to_json(result.to_json())
        if as_json
        # The undo names the overlay when there is one: CKPT itself has no journal.
        else render.apply_text(result, None if overlay else checkpoint_arg(checkpoint, revision))
    )
    if not as_json:
        for warning in result.warnings:
            err(f"warning: {warning}")


def revert(
    checkpoint: CheckpointArg,
    name: Annotated[
        str | None,
        typer.Argument(
            metavar="NAME_OR_N",
            help="Transform name, or entry number N as status lists it (1; '#1' quoted).",
            autocompletion=complete_applied,
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
            else "say what to revert: a NAME (or an entry number N), --last or --all"
        )
        err(f"usage error: {problem}")
        raise typer.Exit(EXIT_USAGE)
    from patcher.cli import render
    from patcher.ops.revert import revert

    result = revert(
        checkpoint_arg(checkpoint, revision),
        name,
        last=last,
        every=every,
        force=force,
        dry_run=dry_run,
    )
    out(render.to_json(result.to_json()) if as_json else render.revert_text(result))


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
    from patcher.cli import render
    from patcher.store.file_status import checkpoint_status

    result = checkpoint_status(checkpoint_arg(checkpoint, revision))
    out(render.to_json(result.to_json()) if as_json else render.status_text(result))
    if check and any(f.state not in ("patched", "reverted") for f in result.files):
        raise typer.Exit(EXIT_REFUSED)


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
    exit_code: Annotated[
        bool,
        typer.Option("--exit-code", help="Exit 1 when there are differences (as git diff)."),
    ] = False,
    revision: RevisionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Compare with the originals in the journal (offline), or with --upstream, with the Hub.

    With --upstream, every difference is attributed to the applied transform that explains
    it; exit code 1 when some difference is explained by none. With --exit-code, exit 1 when
    there is any difference at all.
    """
    if repo is not None and not upstream:
        err("usage error: a repository can only be given with --upstream")
        raise typer.Exit(EXIT_USAGE)
    from patcher.cli import render

    if upstream:
        from patcher.ops.upstream import diff_upstream

        found = diff_upstream(checkpoint_arg(checkpoint, revision), repo)
        out(render.to_json(found.to_json()) if as_json else render.upstream_text(found))
    else:
        from patcher.ops.diff import diff

        result = diff(checkpoint_arg(checkpoint, revision), structural=as_json)
        out(render.to_json(result.to_json()) if as_json else render.diff_text(result))
    if upstream and (found.unexplained or (exit_code and found.files)):
        raise typer.Exit(EXIT_REFUSED)
    if not upstream and exit_code and result.files:
        raise typer.Exit(EXIT_REFUSED)


def reapply(
    checkpoint: CheckpointArg, revision: RevisionOpt = None, as_json: JsonOpt = False
) -> None:
    """Put the journal's transforms back after a re-download restored upstream files."""
    from patcher.cli import render
    from patcher.ops.reapply import reapply

    result = reapply(checkpoint_arg(checkpoint, revision))
    out(render.to_json(result.to_json()) if as_json else render.reapply_text(result))


def rebase(
    checkpoint: CheckpointArg,
    to: Annotated[
        str | None,
        typer.Option(
            "--to", metavar="REV", help="With ORG/NAME: the revision to carry the journal to."
        ),
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
    from patcher.cli import render
    from patcher.ops.rebase import rebase

    result = rebase(checkpoint_arg(checkpoint, revision), to=to, revert_old=revert_old)
    out(render.to_json(result.to_json()) if as_json else render.rebase_text(result))


FileArg = Annotated[
    str, typer.Argument(metavar="FILE", help="A config file of the checkpoint: config.json, ...")
]
PointerArg = Annotated[
    str,
    typer.Argument(metavar="POINTER", help="A JSON pointer (RFC 6901): /max_position_embeddings"),
]


def set_command(
    checkpoint: CheckpointArg,
    file: FileArg,
    pointer: PointerArg,
    value: Annotated[
        str,
        typer.Argument(
            metavar="VALUE",
            help="JSON (65536, true, [1, 2], '\"text\"', null); anything else is a string.",
        ),
    ],
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Set one JSON member, as a journalled entry of its own (revert undoes it byte for byte).

    For what the catalog does not cover: patcher set CKPT config.json /eos_token_id 2. The
    entry is named set-FILE-POINTER; setting the same member again replaces it.
    """
    from patcher.cli import render
    from patcher.ops.one_off import set_member

    result = set_member(checkpoint_arg(checkpoint, None), file, pointer, value, dry_run=dry_run)
    out(
        render.to_json(result.to_json())
        if as_json
        else render.apply_text(result, checkpoint_arg(checkpoint, None))
    )


def unset_command(
    checkpoint: CheckpointArg,
    file: FileArg,
    pointer: PointerArg,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove one JSON member, as a journalled entry of its own (revert puts it back)."""
    from patcher.cli import render
    from patcher.ops.one_off import unset_member

    result = unset_member(checkpoint_arg(checkpoint, None), file, pointer, dry_run=dry_run)
    out(
        render.to_json(result.to_json())
        if as_json
        else render.apply_text(result, checkpoint_arg(checkpoint, None))
    )


def forget(
    checkpoint: CheckpointArg,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Forget even when a file is not the upstream bytes (edited, missing, "
            "half-done): the only copy of those bytes is deleted.",
        ),
    ] = False,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove .patcher/ (journal, lock, stored originals) once nothing is applied.

    Refused while a transform is applied (revert --all first), and while a journalled file is
    not the upstream bytes patcher kept (--force deletes them anyway). Keep .patcher/ out of an
    upload or a copy of the weights (hf upload --exclude '.patcher/*', rsync --exclude .patcher).
    """
    from patcher.cli import render
    from patcher.ops.forget import forget

    result = forget(checkpoint_arg(checkpoint, None), dry_run=dry_run, force=force)
    out(render.to_json(result.to_json()) if as_json else render.forget_text(result))


def restore(
    checkpoint: CheckpointArg,
    file: Annotated[
        str | None,
        typer.Argument(metavar="[FILE]", help="Only this file (default: every one edited since)."),
    ] = None,
    upstream: Annotated[
        bool,
        typer.Option(
            "--upstream",
            help="Put the upstream bytes back instead: revert every entry that patched the "
            "file, discarding the hand edit.",
        ),
    ] = False,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Put back the bytes patcher left over a hand edit or a deletion of a patched file.

    The way out when a hand edit blocks revert and sync. --dry-run shows the diff of what it
    would discard. With --upstream, the upstream bytes instead (the entries that patched the
    file are reverted).
    """
    from patcher.cli import render
    from patcher.ops.restore import restore, restore_upstream

    ckpt = checkpoint_arg(checkpoint, None)
    if upstream:
        back = restore_upstream(ckpt, file, dry_run=dry_run)
        out(render.to_json(back.to_json()) if as_json else render.revert_text(back))
        return
    result = restore(ckpt, file, dry_run=dry_run)
    out(render.to_json(result.to_json()) if as_json else render.restore_text(result))
