"""What the CLI prints and how it fails: stdout and stderr (colour on a terminal only), progress
on stderr, and the one exception boundary with the documented exit codes."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import typer

from patcher.errors import PatcherError
from patcher.text.secrets import mask

EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_BUG, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_CHANGES = 4  # plan: the checkpoint is not in sync with the target (as terraform's 2)
# check: no problem found, but whether the engine starts is unknown (a release not read, a
# case the engine model does not cover): never the 0 of "starts: yes".
EXIT_UNKNOWN = 5


colour = True  # --no-color and NO_COLOR turn it off; click strips it from pipes anyway


def checkpoint_arg(checkpoint: str, revision: str | None) -> str:
    """The checkpoint argument with ``--revision`` folded in (``ORG/NAME@REVISION``)."""
    return checkpoint if revision is None else f"{checkpoint}@{revision}"


def paint(text: str) -> str:
    """Red removals, green additions, bold headings: for a terminal only."""
    if not colour or os.environ.get("NO_COLOR") or not sys.stdout.isatty():
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


def out(text: str) -> None:
    # A lone surrogate (a JSON file's "\ud800" escape, shown in a diff) cannot be written as
    # UTF-8: it is shown as its escape, never a crash after the work is done.
    text = mask(text.encode("utf-8", "backslashreplace").decode("utf-8"))
    try:
        typer.echo(text if text.lstrip().startswith(("{", "[")) else paint(text))
        sys.stdout.flush()
    except OSError as exc:
        # stdout is full or closed: say so once, and keep the exit from writing to it again.
        sys.stdout = Path(os.devnull).open("w")  # noqa: SIM115
        raise PatcherError(
            f"cannot write the output ({exc.strerror or exc})",
            hint="send the output somewhere with room, e.g. > out.txt",
        ) from None


def err(text: str) -> None:
    text = mask(text)
    if colour and not os.environ.get("NO_COLOR") and text.startswith("error:"):
        text = typer.style("error:", fg="red", bold=True) + text[len("error:") :]
    typer.echo(text, err=True)


def report_wait(holder: str, waited: float) -> None:
    """Progress on stderr while another process holds the checkpoint's lock."""
    end = "\r" if sys.stderr.isatty() else "\n"
    sys.stderr.write(f"waiting for the lock held by {holder} ({waited:.0f} s)...{end}")
    sys.stderr.flush()


def report_unlocked(lock_file: str, reason: str) -> None:
    """Say on stderr that the command goes on without the checkpoint's lock."""
    err(
        f"warning: {lock_file}: the filesystem refuses file locks ({reason}); going on "
        "without one: every write still checks the bytes it expects"
    )


def report_fetch(repo: str, path: str, index: int, total: int) -> None:
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


def report_wait_done() -> None:
    """Keep the last wait line on a terminal: what follows starts on a line of its own."""
    if sys.stderr.isatty():
        sys.stderr.write("\n")
        sys.stderr.flush()


@contextlib.contextmanager
def boundary(as_json: bool = False) -> Iterator[None]:
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
            typer.echo(mask(json.dumps({"error": error}, indent=2)))
        err(f"error: {exc.message}")
        if exc.detail:
            err(exc.detail.rstrip("\n"))
        raise typer.Exit(EXIT_REFUSED) from None
    except KeyboardInterrupt:
        err("interrupted")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except Exception as exc:
        if os.environ.get("PATCHER_DEBUG"):
            import traceback

            err(traceback.format_exc())
        err(
            f"unexpected error: {type(exc).__name__}: {exc} (a bug in patcher; rerun with "
            "PATCHER_DEBUG=1 for a traceback)"
        )
        raise typer.Exit(EXIT_BUG) from None
