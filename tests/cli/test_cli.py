"""CLI wiring, messages and exit codes (the library is tested on its own elsewhere)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from patcher.cli.app import app
from tests.conftest import Cli, tree_bytes

COMMANDS = [
    "list",
    "show",
    "apply",
    "revert",
    "status",
    "diff",
    "reapply",
    "check",
    "overrides",
    "kv-budget",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(cli: Cli, command: str) -> None:
    code, out, _ = cli(command, "--help")
    assert code == 0 and "Usage:" in out


def test_no_arguments_shows_help(cli: Cli) -> None:
    code, out, err = cli()
    assert code in (0, 2) and "apply" in out + err


def test_usage_error_exits_2(cli: Cli, kimi: Path) -> None:
    code, _, _ = cli("apply", kimi)
    assert code == 2
    code, _, err = cli("revert", kimi)
    assert code == 2 and "a NAME (or an entry number N), --last or --all" in err


def test_list_and_show(cli: Cli) -> None:
    code, out, _ = cli("list", "--json")
    listed = json.loads(out)
    assert code == 0 and "strip-fp8-kv-cache" in {t["name"] for t in listed}
    code, out, _ = cli("show", "strip-fp8-kv-cache")
    assert code == 0
    for heading in ("Files:", "Why:", "Undo when:", "Evidence:", "hf_quant_config.json"):
        assert heading in out
    assert "TensorRT-LLM reads" in out


def test_apply_status_diff_revert_cycle(cli: Cli, kimi: Path) -> None:
    original = tree_bytes(kimi)
    code, out, _ = cli("apply", kimi, "strip-fp8-kv-cache", "--dry-run")
    assert code == 0 and '-        "kv_cache_scheme": {' in out and '"op": "remove"' in out
    assert tree_bytes(kimi) == original and not (kimi / ".patcher").exists()

    code, out, _ = cli("apply", kimi, "strip-fp8-kv-cache", "--json")
    result = json.loads(out)
    assert code == 0 and result["outcome"] == "applied" and result["entry"] == 1
    assert {f["path"] for f in result["files"]} == {"config.json", "hf_quant_config.json"}

    code, out, _ = cli("apply", kimi, "strip-fp8-kv-cache")
    assert code == 0 and "already applied" in out

    code, out, _ = cli("status", kimi, "--json")
    status = json.loads(out)
    assert status["applied"][0]["name"] == "strip-fp8-kv-cache"
    assert status["applied"][0]["params"] == {}
    assert {f["state"] for f in status["files"]} == {"patched"}

    code, out, _ = cli("diff", kimi)
    assert code == 0 and '-    "kv_cache_quant_algo": "FP8",' not in out
    assert '-        "kv_cache_quant_algo": "FP8",' in out
    assert '+        "kv_cache_quant_algo": null,' in out
    code, out, _ = cli("diff", kimi, "--json")
    changes = {
        (f["path"], c["pointer"], c["kind"]) for f in json.loads(out)["files"] for c in f["changes"]
    }
    assert changes == {
        ("config.json", "/quantization_config/kv_cache_scheme", "removed"),
        ("hf_quant_config.json", "/quantization/kv_cache_quant_algo", "changed"),
    }

    code, out, _ = cli("revert", kimi, "--last", "--dry-run")
    assert code == 0 and "would revert" in out and tree_bytes(kimi) != original
    code, out, _ = cli("revert", kimi, "strip-fp8-kv-cache", "--json")
    assert code == 0 and json.loads(out)["reverted"][0]["transform"] == "strip-fp8-kv-cache"
    assert tree_bytes(kimi) == original
    code, out, _ = cli("status", kimi)
    assert code == 0 and "applied: none" in out and "reverted" in out


def test_nothing_to_do_writes_nothing(cli: Cli, model_checkpoint: object) -> None:
    root = model_checkpoint("deepseek-v3")  # type: ignore[operator]
    code, out, _ = cli("apply", root, "strip-fp8-kv-cache")
    assert code == 0 and out.startswith("nothing to do")
    assert not (root / ".patcher").exists()


def test_status_of_an_unpatched_checkpoint(cli: Cli, kimi: Path) -> None:
    code, out, _ = cli("status", kimi, "--json")
    assert code == 0 and json.loads(out)["applied"] == []
    assert not (kimi / ".patcher").exists()


def test_unexpected_error_exits_3_without_traceback(
    cli: Cli, kimi: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object, **__: object) -> None:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr("patcher.store.file_status.checkpoint_status", broken)
    code, out, err = cli("status", kimi)
    assert code == 3 and "unexpected error: ZeroDivisionError: boom" in err
    assert "PATCHER_DEBUG=1" in err and "Traceback" not in out + err


def test_interrupt_exits_130(cli: Cli, kimi: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("patcher.store.file_status.checkpoint_status", interrupted)
    code, _, err = cli("status", kimi)
    assert code == 130 and "interrupted" in err


def test_app_name() -> None:
    assert app.info.name == "patcher"


def test_revert_all_on_an_unpatched_checkpoint_writes_nothing(cli: Cli, kimi: Path) -> None:
    code, out, _ = cli("revert", kimi, "--all")
    assert code == 0 and out.startswith("nothing to do")
    assert not (kimi / ".patcher").exists()


def test_bare_patcher_version_and_short_help(cli: Cli) -> None:
    code, out, err = cli()
    assert code == 0 and "Usage:" in out and "apply" in out and err == ""
    code, out, _ = cli("--version")
    assert code == 0 and out.startswith("patcher ")
    code, out, _ = cli("status", "-h")
    assert code == 0 and "CHECKPOINT" in out and "--check" in out


def test_json_errors_are_json(cli: Cli, tmp_path: Path) -> None:
    code, out, err = cli("status", tmp_path / "missing", "--json")
    error = json.loads(out)["error"]
    assert code == 1 and error["exit_code"] == 1
    assert error["file"] == str(tmp_path / "missing") and "hint" in error
    assert err.startswith("error: ")


def test_status_check_gates_on_drift(cli: Cli, kimi: Path) -> None:
    cli("apply", kimi, "strip-fp8-kv-cache")
    assert cli("status", kimi, "--check")[0] == 0
    config = kimi / "config.json"
    config.write_text(config.read_text() + " ")
    code, out, _ = cli("status", kimi, "--check")
    assert code == 1 and "changed since patched" in out


def test_messages_name_the_problem_and_the_next_command(cli: Cli, kimi: Path) -> None:
    code, _, err = cli("check", kimi / "config.json")
    assert code == 1 and "is a file; patcher takes the checkpoint folder" in err
    assert f"next: pass its folder: {kimi}" in err and "hf download" not in err
    code, _, err = cli("status", kimi, "--revision", "v2")
    assert code == 1 and "apply to ORG/NAME repository ids" in err
    code, _, err = cli("apply", kimi, "fix-generation-eos-token-id", "--set", "eos=1,2")
    assert code == 1 and "e.g. [1, 2]" in err
    code, _, err = cli("apply", kimi, "set-context-length", "--set", "length=lots")
    assert "builtin:" not in err and err.startswith("error: set-context-length: parameter")


def _complete(words: str, cword: int) -> list[str]:
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "_PATCHER_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(cword),
    }
    code = "import sys; from patcher.cli.app import app; app(prog_name='patcher')"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    return done.stdout.split()


def test_shell_completion_of_transforms_parameters_and_entries(cli: Cli, kimi: Path) -> None:
    assert _complete(f"patcher apply {kimi} strip", 3) == [
        "strip-bom",
        "strip-ct-kv-cache-scheme",
        "strip-fp8-kv-cache",
    ]
    assert _complete(f"patcher apply {kimi} set-context-length --set ", 5) == ["length="]
    assert _complete("patcher show strip", 2) == [
        "strip-bom",
        "strip-ct-kv-cache-scheme",
        "strip-fp8-kv-cache",
    ]
    cli("apply", kimi, "strip-fp8-kv-cache")
    # Entry numbers complete bare: an unquoted #1 is a shell comment.
    assert _complete(f"patcher revert {kimi} ", 3) == ["strip-fp8-kv-cache", "1"]


def test_shell_completion_of_gpus_and_engines(kimi: Path) -> None:
    assert _complete(f"patcher check {kimi} --gpu h", 4) == ["h200", "h100", "h20"]
    assert _complete(f"patcher kv-budget {kimi} --gpu rtx-p", 4) == ["rtx-pro-6000"]
    engines = _complete(f"patcher plan {kimi} --engine ", 4)
    # The releases read, newest first: a completion never offers one patcher has not read.
    assert engines[0] == "vllm==0.34.0" and "vllm==0.16.0" in engines
    assert engines[-2:] == ["vllm==0.10.1", "sglang==0.5.23"]
    assert _complete(f"patcher check {kimi} --engine vllm==0.1", 4) == [
        *(f"vllm==0.{minor}.0" for minor in range(19, 10, -1)),
        "vllm==0.10.1",
    ]


def test_entries_are_addressed_by_a_number_a_shell_keeps(cli: Cli, kimi: Path) -> None:
    """`patcher revert CKPT 1`, as pasted into a shell (where an unquoted #1 is a comment);
    a quoted '#1' is still taken."""
    import shlex
    import subprocess
    import sys

    cli("apply", kimi, "strip-fp8-kv-cache")
    line = f"{shlex.quote(sys.executable)} -m patcher revert {shlex.quote(str(kimi))} 1"
    done = subprocess.run(line, shell=True, capture_output=True, text=True)
    assert done.returncode == 0 and "reverted strip-fp8-kv-cache (entry 1)" in done.stdout
    cli("apply", kimi, "strip-fp8-kv-cache")
    code, out, _ = cli("revert", kimi, "#2")
    assert code == 0 and "reverted strip-fp8-kv-cache (entry 2)" in out
    code, _, err = cli("revert", kimi, "--last", "--all")
    assert code == 2 and "--last and --all cannot be combined" in err


def test_lock_wait_is_shown_on_stderr(kimi: Path) -> None:
    import fcntl
    import subprocess
    import sys

    from tests.conftest import ROOT

    (kimi / ".patcher").mkdir()
    with (kimi / ".patcher" / "lock").open("w") as held:
        held.write("pid 4242: patcher apply")
        held.flush()
        fcntl.flock(held, fcntl.LOCK_EX)
        done = subprocess.run(
            [sys.executable, "-m", "patcher", "apply", str(kimi), "strip-fp8-kv-cache", "--json"],
            env={**os.environ, "PYTHONPATH": str(ROOT), "PATCHER_LOCK_TIMEOUT": "2.5"},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    assert "waiting for the lock held by pid 4242: patcher apply (1 s)..." in done.stderr
    assert "waiting" not in done.stdout and json.loads(done.stdout)["error"]["exit_code"] == 1


def test_colour_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from patcher.cli import output as cli_module

    diff = "--- a/config.json\n+++ b/config.json\n-    old\n+    new\n context"
    monkeypatch.setattr(cli_module.sys.stdout, "isatty", lambda: False, raising=False)
    assert cli_module.paint(diff) == diff  # a pipe: plain
    monkeypatch.setattr(cli_module.sys.stdout, "isatty", lambda: True, raising=False)
    painted = cli_module.paint(diff)
    assert "\x1b[31m-    old" in painted and "\x1b[32m+    new" in painted
    assert "--- a/config.json\n+++ b/config.json" in painted  # headers stay plain
    monkeypatch.setenv("NO_COLOR", "1")
    assert cli_module.paint(diff) == diff


def test_on_a_terminal_the_last_wait_line_stays_and_the_result_starts_a_new_line(
    kimi: Path,
) -> None:
    """The wait line is redrawn in place; when the lock comes, the output must not be drawn
    over its tail ("applied ... (2 s)...")."""
    import fcntl
    import pty
    import subprocess
    import sys

    from tests.conftest import ROOT

    (kimi / ".patcher").mkdir()
    held = (kimi / ".patcher" / "lock").open("w")
    held.write("pid 4242: patcher sync")
    held.flush()
    fcntl.flock(held, fcntl.LOCK_EX)
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "patcher", "apply", str(kimi), "strip-fp8-kv-cache"],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env={**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"},
    )
    os.close(terminal)
    output = b""
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
        if b"(1 s)..." in output and not held.closed:
            held.close()  # released once the wait line has counted a second (however loaded)
    assert proc.wait(timeout=60) == 0
    text = output.decode().replace("\r", "")  # carriage returns: redraws of the wait line
    assert "waiting for the lock held by pid 4242: patcher sync (1 s)...\n" in text
    assert "\napplied strip-fp8-kv-cache (entry 1) to " in text


def test_replacing_with_parameters_that_change_nothing_says_so(cli: Cli, kimi: Path) -> None:
    """New parameters equal to upstream's own value: the old entry is reverted and none is
    added; the message says that, not "applied ... undo with: revert"."""
    assert cli("apply", kimi, "set-context-length", "--set", "length=131072")[0] == 0
    code, out, err = cli("apply", kimi, "set-context-length", "--set", "length=262144")
    assert code == 0, err
    assert out.startswith("reverted set-context-length (entry 1)") and "undo with" not in out
    assert cli("status", kimi)[1].count("applied: none") == 1


def test_check_never_prints_pythons_none(cli: Cli, model_checkpoint: Any) -> None:
    """A checkpoint with no quantization: check --engine says "none", never Python's None."""
    root = model_checkpoint("deepseek-r1-distill-qwen-32b")
    _, out, _ = cli("check", root, "--engine", "vllm==0.16.0")
    assert "quantization    none" in out and "None" not in out
