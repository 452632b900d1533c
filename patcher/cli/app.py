"""The ``patcher`` command: parse arguments, call one library function, render the result.

Exit codes: 0 success or nothing to do; 1 refused or failed (a one-line message says why and
what to run next); 2 usage error; 3 unexpected error (a bug; PATCHER_DEBUG=1 shows the
traceback); 4 ``plan`` found changes pending; 130 interrupted.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from patcher import progress
from patcher.cli import engine_commands, journal_commands, output
from patcher.cli.output import EXIT_OK, boundary
from patcher.version import __version__

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


def _version(value: bool) -> None:
    if value:
        typer.echo(f"patcher {__version__}")
        raise typer.Exit(EXIT_OK)


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
    output.colour = not no_color
    progress.wait_reporter = output.report_wait
    progress.wait_done = output.report_wait_done
    progress.fetch_reporter = output.report_fetch
    progress.unlocked_reporter = output.report_unlocked
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())  # a bare `patcher`: help on stdout, exit 0
        raise typer.Exit(EXIT_OK)


COMMANDS: dict[str, Any] = {
    "list": journal_commands.list_command,
    "show": journal_commands.show,
    "apply": journal_commands.apply,
    "revert": journal_commands.revert,
    "status": journal_commands.status,
    "diff": journal_commands.diff,
    "reapply": journal_commands.reapply,
    "rebase": journal_commands.rebase,
    "set": journal_commands.set_command,
    "unset": journal_commands.unset_command,
    "forget": journal_commands.forget,
    "restore": journal_commands.restore,
    "check": engine_commands.check,
    "overrides": engine_commands.overrides,
    "doctor": engine_commands.doctor,
    "plan": engine_commands.plan,
    "sync": engine_commands.sync,
    "kv-budget": engine_commands.kv_budget_command,
    "run": engine_commands.run,
}


def bounded(command: Callable[..., None]) -> Callable[..., None]:
    """``command`` inside the one exception boundary (``output.boundary``): a known failure
    exits 1 with its message (and JSON with ``--json``), an interrupt 130, a bug 3. typer
    reads the command's own signature through ``functools.wraps``."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> None:
        with boundary(bool(kwargs.get("as_json"))):
            command(*args, **kwargs)

    return run


app.callback()(_main)
for _name, _command in COMMANDS.items():
    app.command(_name)(bounded(_command))


def global_options_anywhere(args: list[str]) -> list[str]:
    """``--no-color`` and ``--json`` wherever they are typed: ``--no-color`` after the command
    moves before it (it is the app's), ``--json`` before the command moves after it (it is
    each command's). Nothing after ``--`` (the engine's command line of ``run``) is touched."""
    cut = args.index("--") if "--" in args else len(args)
    head, tail = args[:cut], args[cut:]
    no_color = "--no-color" in head
    head = [a for a in head if a != "--no-color"]
    at = next((i for i, a in enumerate(head) if a in COMMANDS), None)
    if at is not None and "--json" in head[:at]:
        head = [a for a in head[:at] if a != "--json"] + head[at:] + ["--json"]
    return (["--no-color"] if no_color else []) + head + tail


def main() -> None:
    """Entry point of the ``patcher`` command."""
    # Valid JSON may hold integers of any length (the editor keeps their spelling); Python
    # refuses to parse more than 4,300 digits unless told otherwise.
    sys.set_int_max_str_digits(0)
    sys.argv[1:] = global_options_anywhere(sys.argv[1:])
    words = [a for a in sys.argv[1:] if a != "--no-color"]
    name = words[0] if words else None
    if name in COMMANDS and "_PATCHER_COMPLETE" not in os.environ:
        # typer builds every command's parameters on each start: for one command, build
        # that one only (the same function, options and help), which keeps start-up lean.
        single = typer.Typer(**APP_SETTINGS)
        single.callback()(_main)
        single.command(name)(bounded(COMMANDS[name]))
        single()
        return
    app()
