"""The README's commands run as written, and show what they print."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()
DOCS = sorted((ROOT / "docs").glob("*.md"))


def _console_blocks(text: str) -> list[list[str]]:
    return [block.splitlines() for block in re.findall(r"```console\n(.*?)```", text, re.S)]


def test_the_readme_is_for_a_newcomer() -> None:
    """At most 400 lines, a table of contents, and every docs page it links exists."""
    assert len(README.splitlines()) <= 400
    assert README.count("](docs/") >= 10
    for link in re.findall(r"\]\((docs/[^)#]+)", README):
        assert (ROOT / link).is_file(), link


def test_the_story_plan_prints_what_the_readme_shows() -> None:
    """`$ patcher plan snapshots/example/...` from a clone: every line the README shows in
    full (not cut with '...') is printed, and the exit code is the one it shows."""
    ran = 0
    for block in _console_blocks(README):
        command = block[0]
        if not command.startswith("$ patcher plan snapshots/example/"):
            continue
        args = shlex.split(command[2:])[1:]
        done = subprocess.run(
            [sys.executable, "-m", "patcher", *args], capture_output=True, text=True, cwd=ROOT
        )
        printed = done.stdout.replace(str(ROOT) + "/", "")
        shown = block[1 : block.index("$ echo $?")] if "$ echo $?" in block else block[1:]
        for line in shown:
            if "..." not in line:
                assert line in printed.splitlines(), line
        if "$ echo $?" in block:
            assert str(done.returncode) == block[block.index("$ echo $?") + 1]
        ran += 1
    assert ran >= 1


def test_the_docs_link_to_pages_that_exist() -> None:
    for page in DOCS:
        for link in re.findall(r"\]\(((?:docs/)?[\w./-]+\.md)", page.read_text()):
            target = ROOT / link if link.startswith("docs/") else page.parent / link
            assert target.is_file(), (page.name, link)
