"""One truth for fixes (issue 30 item 4, for check): every fix check prints for a snapshot
checkpoint and a target is a command that runs as pasted into a shell, is accepted by apply
on that target (with --engine), and clears its finding. Alternatives are commands too, and
prose stays in the note, never inside a command."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from patcher import api
from tests.conftest import CONFIGS, MODELS, Cli

TARGETS = [
    (None, None),
    ("vllm==0.16.0", "rtx-pro-6000"),
    ("vllm==0.16.0", "v100"),
    ("vllm==0.33.0", "h200"),
    ("sglang==0.5.23", None),
]


def _parses_in_a_shell(command: str) -> None:
    syntax = subprocess.run(["bash", "-n", "-c", command], capture_output=True, text=True)
    assert syntax.returncode == 0, (command, syntax.stderr)


@pytest.mark.parametrize(("engine", "gpu"), TARGETS)
@pytest.mark.parametrize("model", MODELS)
def test_every_fix_check_prints_runs_and_clears_its_finding(
    cli: Cli, tmp_path: Path, model: str, engine: str | None, gpu: str | None
) -> None:
    source = tmp_path / "source"
    shutil.copytree(CONFIGS / model, source)
    findings = api.check(source, engine=engine, gpu=gpu).findings
    for index, finding in enumerate(findings):
        where = (model, engine, gpu, finding.code)
        for alternative in finding.alternatives:
            _parses_in_a_shell(alternative)
            words = shlex.split(alternative)
            assert words[0] in ("vllm", "python"), where
            if "--kv-cache-dtype" in words and engine is not None:
                # The flag as the target's choice clears the finding too, files as they are.
                chosen = words[words.index("--kv-cache-dtype") + 1]
                again = api.check(source, engine=engine, gpu=gpu, kv_cache_dtype=chosen)
                assert not [
                    f
                    for f in again.findings
                    if (f.code, f.file, f.pointer) == (finding.code, finding.file, finding.pointer)
                ], (where, alternative)
        if finding.command is None:
            assert finding.note, where  # no command: then a note says what to do
            continue
        _parses_in_a_shell(finding.command)
        words = shlex.split(finding.command)
        assert words[0] == "patcher", where
        copy = tmp_path / f"fix-{index}"
        shutil.copytree(source, copy)
        words = [str(copy) if w == str(source) else w for w in words[1:]]
        if words[0] == "apply" and engine is not None:
            words += ["--engine", engine]  # accepted on that target, not only in general
        code, _, err = cli(*words)
        assert code == 0, (where, finding.command, err)
        if words[0] == "apply":
            again = api.check(copy, engine=engine, gpu=gpu).findings
            assert not [
                f
                for f in again
                if (f.code, f.file, f.pointer) == (finding.code, finding.file, finding.pointer)
            ], (where, finding.command)
