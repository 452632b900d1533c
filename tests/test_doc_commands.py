"""Every patcher command the README and the docs show parses with patcher's own CLI: the
subcommand exists, each option is one it takes, values have the types it wants, and the
required arguments are there. A renamed flag or a dropped option fails here, not in a user's
shell. (tests/test_readme.py runs the story's commands on the bundled example.)"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command

from patcher.cli.app import app

try:  # typer 0.29 carries its own click
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover - an older typer on the registry's click
    from click.exceptions import ClickException  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Options that act when parsed (print and exit, or install into the shell's rc file).
EAGER = ("--version", "--help", "--install-completion", "--show-completion")
SYNOPSIS = re.compile(r"[\[\]|<>…]|\.\.\.")


def _commands() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for page in PAGES:
        block = False
        for number, line in enumerate(page.read_text().splitlines(), 1):
            where = f"{page.relative_to(ROOT)}:{number}"
            if line.strip().startswith("```"):
                block = not block
                continue
            if block:
                text = line.strip().removeprefix("$ ")
                if text.startswith("patcher "):
                    found.append((where, re.sub(r"\s+#\s.*$", "", text)))
                continue
            for text in re.findall(r"`(patcher [^`]+)`", line):
                # a synopsis ([--json], A|B, ...) or a bare command name is not a command line
                if not SYNOPSIS.search(text) and len(text.split()) > 2:
                    found.append((where, text))
    return found


COMMANDS = _commands()


def _parse(text: str) -> None:
    group: Any = get_command(app)
    args = shlex.split(text)[1:]
    ctx = group.make_context("patcher", list(args))
    rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
    name, command, sub = group.resolve_command(ctx, rest)
    assert command is not None and name is not None
    command.make_context(name, sub, parent=ctx)


def test_the_pages_show_commands() -> None:
    assert len(COMMANDS) >= 30


@pytest.mark.parametrize(("where", "text"), COMMANDS, ids=[w for w, _ in COMMANDS])
def test_a_documented_command_parses(where: str, text: str) -> None:
    if any(option in shlex.split(text) for option in EAGER):
        pytest.skip("an eager option acts when parsed")
    try:
        _parse(text)
    except ClickException as exc:
        pytest.fail(f"{where}: {text}\n  {exc.format_message()}")


@pytest.mark.parametrize(
    "text",
    [
        "patcher apply CKPT strip-fp8-kv-cache --no-such-flag",
        "patcher kv-budget CKPT --tp eight",
        "patcher no-such-command CKPT",
        "patcher revert",
    ],
)
def test_the_parse_refuses_what_the_cli_refuses(text: str) -> None:
    with pytest.raises(ClickException):
        _parse(text)
