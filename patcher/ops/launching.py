"""The launch: the server's flags and command line for a target, from the files it will read.

``plan`` gives the transforms; this gives what the files cannot say. The parallel sizes, the
memory settings given, and the context: the engine derives one from the files (after the
planned transforms, so stripping an FP8 KV cache doubles the KV bytes before the memory is
judged), and when the KV cache the target leaves cannot hold it, ``--max-model-len N`` caps it
(N from :func:`patcher.advice.kvbudget.budget_of_files`, a multiple of 1,024 that fits). The
cap is always a flag: a file edit of the context is not honoured by every version (vLLM before
0.28 ignores it for a YaRN config), and a flag cannot be lost to a re-download. Where the memory
cannot be known (no memory for the device, no weight index), the launch says so and caps
nothing.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patcher.advice.kvbudget import KvBudget, budget_of_files, index_weights
from patcher.engines.files import ConfigFiles
from patcher.engines.installed import Asked, ask_checkpoint
from patcher.engines.model import derive
from patcher.engines.parallel import tensor_parallel_error
from patcher.engines.parser_flags import parser_flag_error
from patcher.engines.target import Target
from patcher.errors import PatcherError, TargetError
from patcher.store.checkpoint import Checkpoint
from patcher.units import GIB


@dataclass(frozen=True, slots=True)
class Launch:
    """How to start the engine on the target: its flags, its whole command line, the context
    it will serve and how that was decided, and the memory estimate (None: unknown, with
    ``memory_note`` saying why)."""

    flags: tuple[str, ...]
    argv: tuple[str, ...]
    context: int | None
    derived_context: int | None
    context_note: str
    memory: KvBudget | None
    memory_note: str
    # Why the server cannot start at any context on this target (None: it can, or unknown).
    problem: str | None = None
    # The user's own flags (the target's), passed as given at the end of ``flags``.
    passed: tuple[str, ...] = ()
    # What the engine model cannot tell about this start (check's "starts unknown").
    unknowns: tuple[str, ...] = ()

    @property
    def command(self) -> str:
        """The command line, quoted for a shell."""
        return shlex.join(self.argv)

    def to_json(self) -> dict[str, Any]:
        """A launch as JSON."""
        return {
            "flags": list(self.flags),
            "argv": list(self.argv),
            "command": self.command,
            "max_model_len": self.context,
            "derived_max_model_len": self.derived_context,
            "context_note": self.context_note,
            "memory_note": self.memory_note,
            "kv_budget": None if self.memory is None else self.memory.to_json(),
            "problem": self.problem,
            "passed_flags": list(self.passed),
            "unknowns": list(self.unknowns),
        }


def _memory(
    ckpt: Checkpoint, files: ConfigFiles, target: Target, asked: Asked | None
) -> tuple[KvBudget | None, str]:
    tp = target.tensor_parallel or 1
    pp = target.pipeline_parallel or 1
    try:
        weights: tuple[float, str] | None = None
        if target.weights_gib is not None:
            weights = (target.weights_gib, f"weights {target.weights_gib:.2f} GiB (given)")
        elif target.kv_cache_memory_gib is None:
            weights = index_weights(ckpt)
        if weights is not None and pp > 1:  # each stage holds its share of the weights
            weights = (weights[0] / pp, f"{weights[1]}, over {pp} pipeline stages")
        budget = budget_of_files(
            ckpt.root,
            files,
            ckpt.path("config.json"),
            gpu=target.gpu,
            weights=weights,
            tp=tp,
            utilization=target.gpu_memory_utilization,
            engine=target.engine,
            kv_cache_memory_gib=target.kv_cache_memory_gib,
            pp=pp,
            kv_dtype=target.kv_cache_dtype or "auto",
            asked=asked,
        )
    except PatcherError as exc:
        return None, f"memory unknown: {exc.problem} ({exc.hint})" if exc.hint else exc.problem
    note = (
        f"{budget.max_tokens:,} tokens fit in the KV cache per GPU "
        f"({budget.bytes_per_token:,} bytes per token, {budget.kv_dtype})"
    )
    if pp > 1:
        note += f" on the pipeline stage that fits the least (of {pp})"
    by = None if asked is None or asked.view is None else asked.view.answered_by
    if by is not None and asked is not None and asked.memory is not None:
        note += f"; counted by {by.split(' (')[0]}"
    elif by is not None and by.startswith("the installed"):
        # SGLang's memory fraction is its model runner's (it needs the GPU): not asked
        note += f"; the context by {by.split(' (')[0]}, the memory by the engine model"
    elif asked is not None and asked.said:
        note += f"; {asked.said}"
    if budget.unmodelled:
        note += f"; {budget.unmodelled}"
    if budget.weights_warning:
        note += f"; warning: {budget.weights_warning}"
    return budget, note


def plan_launch(
    ckpt: Checkpoint,
    files: ConfigFiles,
    target: Target,
    asked: Asked | None = None,
    planned: Mapping[str, bytes] | None = None,
) -> Launch:
    """The launch for ``target`` of a checkpoint whose files (after the planned transforms)
    are ``files`` (``planned``: the bytes a sync would write to make them); ``asked``: the
    installed engine's answer about those files, whose memory defaults, KV dtype and context
    then count the memory (with ``target.engine_python`` it is asked here). Raises
    :class:`TargetError` when no context can start: the one wanted is above what the engine
    derives. When the weights leave no room for a KV cache the launch says so in ``problem``
    (the files may still be right: more GPUs are the fix)."""
    view = derive(target.engine, files, target.gpu, kv_cache_dtype=target.kv_cache_dtype)
    derived = view.max_model_len.value
    derived = derived if isinstance(derived, int) else None
    wanted = target.max_model_len
    where = target.profile or "the target"
    if target.kv_cache_dtype not in (None, "auto"):
        # An error the files alone do not raise is the choice's: no file edit clears it.
        plain = {e.message for e in derive(target.engine, files, target.gpu).startup_errors}
        refused = next((e for e in view.startup_errors if e.message not in plain), None)
        if refused is not None:
            raise TargetError(
                f"kv_cache_dtype {target.kv_cache_dtype} does not start on "
                f"{target.describe()}: {refused.note or refused.message}",
                file=target.profile,
                pointer="/kv_cache_dtype" if target.profile else None,
                hint=f"choose {refused.flag.split()[-1]}, or leave it out (plan then edits the "
                "files)"
                if refused.flag
                else "leave it out: plan then edits the files",
            )
    unfixed = view.startup_errors[0].message if view.startup_errors else None
    split = tensor_parallel_error(target.engine, files, target.tensor_parallel, target.flags)
    if wanted is not None and derived is not None and wanted > derived:
        raise TargetError(
            f"max_model_len {wanted} is above the {derived} {target.engine} derives "
            f"({view.max_model_len.reason}); it refuses to start",
            file=target.profile,
            pointer="/max_model_len" if target.profile else None,
            hint=(
                f"set max_model_len = {derived} or less in {target.profile}"
                if target.profile
                else f"ask for --max-model-len {derived} or less"
            )
            + ", or raise the files' context first "
            "(set-context-length, set-rope-scaling-yarn)",
        )
    if asked is None and target.engine_python is not None:
        asked = ask_checkpoint(  # the files the launch starts on: as they are, or planned
            Path(target.engine_python),
            ckpt,
            files,
            planned or {},
            target.gpu,
            target.kv_cache_dtype,
            target.engine,
        )
    memory, memory_note = _memory(ckpt, files, target, asked)
    serve = wanted if wanted is not None else derived
    cap: int | None = wanted
    if target.fit_context:
        context_note = (
            f"{target.engine} fits it to the KV memory itself (--max-model-len auto), up to "
            f"the {derived} it derives"
            if derived is not None
            else f"{target.engine} fits it to the KV memory itself (--max-model-len auto)"
        )
        if memory is not None and derived is not None and derived > memory.max_tokens:
            context_note += f"; by patcher's estimate about {memory.max_tokens:,} tokens fit"
    elif wanted is not None:
        context_note = f"{wanted} as {where} asks ({target.engine} derives {derived})"
    else:
        context_note = f"{target.engine} derives {view.max_model_len.reason}"
    problem = None if unfixed is None else f"{target.engine} still refuses the files: {unfixed}"
    engine_view = None if asked is None else asked.view
    if problem is None and engine_view is not None and engine_view.startup_errors:
        problem = (
            f"{(engine_view.answered_by or '').split(' (')[0]} refuses the files"
            f"{' as sync would leave them' if planned else ''}: "
            f"{engine_view.startup_errors[0].message}"
        )
    if problem is None and split is not None:
        problem = f"{target.engine} refuses the parallel size: {split.message} ({split.note})"
    parser = parser_flag_error(target.engine, target.flags)
    if problem is None and parser is not None:
        problem = f"{target.engine} refuses the server's flags: {parser.message} ({parser.note})"
    context = cap if cap is not None else derived
    if memory is not None and serve is not None and serve > memory.max_tokens:
        if not memory.suggested_context:
            # With --max-model-len auto, vLLM's own fit fails too ("Cannot auto-fit").
            problem = (
                f"no KV cache fits on {target.describe()} ({memory.weights_per_gpu_gib:.1f} GiB "
                "of weights per GPU): more GPUs (--tp), a larger GPU, or a smaller checkpoint"
            )
        elif target.fit_context:
            context = None  # the engine's own fit decides; patcher's estimate is in the note
        else:
            cap = context = min(memory.suggested_context, serve)
            context_note = (
                f"{serve:,} tokens do not fit ({memory_note}): capped at {cap:,} by --max-model-len"
            )
    flags = _flags(target, cap)
    return Launch(
        flags=flags,
        argv=_argv(target, ckpt.root, flags),
        context=context,
        derived_context=derived,
        context_note=context_note,
        memory=memory,
        memory_note=memory_note,
        problem=problem,
        passed=target.flags,
        unknowns=view.unknowns,
    )


def _flags(target: Target, context: int | None) -> tuple[str, ...]:
    sglang = target.engine.name == "sglang"
    flags: list[str] = []
    if target.tensor_parallel is not None:
        flags += ["--tp" if sglang else "--tensor-parallel-size", str(target.tensor_parallel)]
    if target.pipeline_parallel is not None:
        flags += [
            "--pp-size" if sglang else "--pipeline-parallel-size",
            str(target.pipeline_parallel),
        ]
    if target.gpu_memory_utilization is not None:
        name = "--mem-fraction-static" if sglang else "--gpu-memory-utilization"
        flags += [name, f"{target.gpu_memory_utilization:g}"]
    if target.kv_cache_memory_gib is not None and not sglang:
        flags += ["--kv-cache-memory-bytes", str(int(target.kv_cache_memory_gib * GIB))]
    if target.fit_context:
        flags += ["--max-model-len", "auto"]
    elif context is not None:
        flags += ["--context-length" if sglang else "--max-model-len", str(context)]
    if target.kv_cache_dtype is not None:
        flags += ["--kv-cache-dtype", target.kv_cache_dtype]
    return (*flags, *target.flags)


def _argv(target: Target, root: Path, flags: tuple[str, ...]) -> tuple[str, ...]:
    if target.engine.name == "sglang":
        return ("python", "-m", "sglang.launch_server", "--model-path", str(root), *flags)
    return ("vllm", "serve", str(root), *flags)
