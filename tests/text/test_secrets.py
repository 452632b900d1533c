"""Secrets on a server's command line: the engine gets them, nothing patcher prints holds them.

Checked through the commands that quote a command line: ``plan`` (text and ``--json``, a
profile's flags), ``run`` (its starting line, ``--dry-run --json``, a refusal that names the
flag) and doctor reading a failed engine's output.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from patcher.text.secrets import is_secret_flag, mask_words, secret_values
from tests.cli.test_run import KV, _checkpoint, _engine
from tests.conftest import ROOT

SECRET = "sk-live-4f2b9c"


@pytest.mark.parametrize(
    ("word", "secret"),
    [
        ("--api-key", True),
        ("--api_key=x", True),
        ("--hf-token", True),
        ("--ssl-keyfile-password", True),
        ("--tokenizer", False),
        ("--max-num-batched-tokens", False),
        ("--ssl-keyfile", False),
        ("--kv-cache-dtype", False),
        ("sk-key", False),
    ],
)
def test_which_flags_carry_a_secret(word: str, secret: bool) -> None:
    assert is_secret_flag(word) is secret


def test_the_values_are_found_in_both_spellings_and_masked() -> None:
    words = ["--api-key", SECRET, "--hf_token=hf_abcdef", "--tokenizer", "t"]
    assert secret_values(words) == {SECRET, "hf_abcdef"}
    assert mask_words(words) == ["--api-key", "***", "--hf_token=***", "--tokenizer", "t"]


def _patcher(
    *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "patcher", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


def test_plan_never_prints_a_profiles_secret(tmp_path: Path) -> None:
    profile = tmp_path / "kimi.toml"
    profile.write_text(
        'engine = "vllm==0.16.0"\ngpu = "rtx-pro-6000"\ntensor_parallel = 8\n'
        f'kv_cache_dtype = "bfloat16"\nflags = ["--api-key", "{SECRET}"]\n'
    )
    example = ROOT / "snapshots" / "example" / "kimi-k2.5-nvfp4"
    for extra in ([], ["--json"]):
        done = _patcher("plan", example, "--profile", profile, *extra)
        assert done.returncode in (0, 4), done.stderr
        assert "--api-key" in done.stdout
        assert SECRET not in done.stdout + done.stderr


def test_run_gives_the_engine_its_key_and_prints_it_nowhere(tmp_path: Path) -> None:
    ckpt = _checkpoint(tmp_path, "c1_base")
    env = _engine(
        tmp_path,
        "print(json.dumps(sys.argv[1:]), flush=True); "
        "print('ValueError: No valid attention backend found for cuda; key "
        f"{SECRET} hf_zz_env_token', file=sys.stderr); sys.exit(1)",
    )
    env["HF_TOKEN"] = "hf_zz_env_token"
    command = ["--", "vllm", "serve", ckpt, "--kv-cache-memory-bytes", KV, "--api-key", SECRET]
    done = _patcher("run", *command, env=env)
    assert done.returncode == 1
    argv = json.loads(done.stdout.splitlines()[0])
    assert argv[argv.index("--api-key") + 1] == SECRET  # the engine's own output is its own
    engines = done.stderr.splitlines()
    patchers = [line for line in engines if not line.startswith("ValueError")]
    assert "  error: ValueError: No valid attention backend found for cuda; key *** ***" in patchers
    assert any(line.startswith("patcher: starting") for line in patchers)
    assert not any(SECRET in line or "hf_zz_env_token" in line for line in patchers)
    dry = _patcher("run", "--dry-run", "--json", *command, env=env)
    assert dry.returncode == 0 and "--api-key" in dry.stdout
    assert SECRET not in dry.stdout + dry.stderr
    refused = _patcher("run", *command[:-2], "--api-key", SECRET, "--max-model-len", "x", env=env)
    assert refused.returncode == 1 and "--max-model-len" in refused.stderr
    assert SECRET not in refused.stdout + refused.stderr
