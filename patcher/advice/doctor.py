"""``doctor``: read a failed vLLM or SGLang start-up log, find the root error, name the fix.

The messages are vLLM's and SGLang's own format strings (sources in docs/advice.md, "doctor");
wrapper lines, ANSI colours and process prefixes are skipped, and when several errors are in
the log the earliest one (the root cause of a chained traceback) wins over the wrappers.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from patcher.advice import catalogue
from patcher.advice import log_facts as facts
from patcher.advice.architectures import CHOSEN_BACKEND, from_backend
from patcher.advice.asserted_keys import by_asserted_key
from patcher.advice.cuda_oom import Phase, explain_oom, is_oom, phase_of, utilization_in
from patcher.advice.diagnosis import Diagnosis
from patcher.advice.dtypes import forced_dtype
from patcher.advice.engine_defects import always_raised
from patcher.advice.engine_rules import _MARKERS, RULES
from patcher.advice.fallbacks import (
    by_bare_assert,
    by_division,
    by_rope_key,
    by_unset,
    by_words,
    divisibility,
)
from patcher.advice.families import family_of
from patcher.advice.given_flags import already_given, given_kv_dtype
from patcher.advice.hybrid_manager import switches_in
from patcher.advice.judged import judge_fixes
from patcher.advice.kernel_reasons import (
    CONTINUED,
    MOST_REASONS,
    by_reasons,
    inline_reasons,
    is_reason,
)
from patcher.advice.kernels import stated
from patcher.advice.log_lines import (
    CPP_ASSERTION,
    ERRORISH,
    PREFIX,
    RAISED,
    SGLANG_PREFIX,
    SOURCE,
    VLLM_PREFIX,
    WARNED,
    WRAPPERS,
    Filter,
    any_of,
    bounded,
    shown,
    uncoloured,
)
from patcher.advice.log_rules import (
    EXTENSION_FAILED,
    IMPORT_FAILED,
    Fix,
    LogContext,
    Rule,
)
from patcher.advice.mistral_format import by_params_assert
from patcher.advice.nccl_transports import UNHANDLED, last_error
from patcher.advice.optional_imports import by_optional_import
from patcher.advice.profile_pass import Chunking, chunking
from patcher.advice.remote_tokenizers import REMOTE_FILE
from patcher.advice.torch_compile import from_compile_cache
from patcher.advice.xformers_dispatch import by_first_line
from patcher.errors import InputFileError


@functools.cache
def _marked() -> re.Pattern[str]:
    return any_of(_MARKERS)


@functools.cache
def _heeded() -> Filter:
    """A rule's marker, or a word every error line holds (``ERRORISH``). A marker that holds
    such a word ("KeyError: '") finds no line that word does not: it is left out, as every
    branch of the pattern costs on every line of a log (docs/benchmark.md)."""
    return Filter((*(m for m in _MARKERS if not any(e in m for e in ERRORISH)), *ERRORISH))


def _first_rule(line: str) -> tuple[re.Match[str], Rule] | None:
    if any(line.lstrip().startswith(w) or f": {w}" in line for w in WRAPPERS):
        if "Worker failed with error '" not in line:
            return None
    for rule in RULES:
        found = rule[1].search(line)
        if found:
            return found, rule
    return None


def _from_catalogue(line: str, ctx: LogContext) -> Diagnosis | None:
    raised = RAISED.match(line)
    message = raised.group("message") if raised else line.strip()
    # An engine's own copy of a transformers config class raises the same words; the
    # traceback's frame in transformers' configuration_*.py says whose they are.
    engine = (
        "transformers"
        if ctx.config_file
        else ctx.engine
        if ctx.engine in ("vllm", "sglang")
        else None
    )
    found = catalogue.match(message, engine)  # type: ignore[arg-type]
    if found is None:
        return None
    defect = always_raised(message, ctx)
    if defect is not None:  # the release raises it whatever the checkpoint says
        cause, fixes = defect
        return Diagnosis("-", "engine-defect", line.strip(), cause, tuple(fixes), None)
    family = family_of(found.template)
    if family is None:  # tests/advice/test_catalogue.py keeps this from happening
        return None
    cause, fixes = family.explained(found, ctx)
    if not fixes:
        fixes = [Fix("advice", "change what the message names: " + found.template.literal[:80])]
    return Diagnosis(
        "-", family.name, line.strip(), cause, tuple(fixes), None, family, found.template
    )


NO_MATCH = "it matches no rule and no message of the engines' read source"


def _unread(found: Diagnosis, runtime: str | None) -> Diagnosis:
    """``found``, or not recognised where the log ran a runtime whose source is not read."""
    if runtime is None:
        return found
    cause = f"it was raised under {runtime}, whose source patcher does not read"
    return Diagnosis(found.log, None, found.error, cause, (), found.engine_version)


def diagnose_lines(
    lines: Iterable[str], *, checkpoint: str = "CKPT", source: str = "-"
) -> Diagnosis:
    """Find the root failure in a log read line by line (see :func:`diagnose`): the first
    line a rule knows, or that one of the engines' own messages (the catalogue read from
    their source) made, and the engine version the log names before it (the engine prints
    it as it starts). Reading stops at the root error, and a log of any size costs one line
    of memory. When nothing is known, the first exception line is quoted, with no fix."""
    version_text: str | None = None
    import_failed = False
    extension_failed = False
    root: str | None = None
    engine: str | None = None
    memory: tuple[float, float] | None = None
    fraction: float | None = None
    draft = False
    dp_attention = v2_runner = False  # SGLang's DP attention on; vLLM said it runs V2
    expert_metrics = False  # SGLang records the experts' distribution as metrics
    tp: int | None = None
    pp: int | None = None
    max_len: int | None = None  # the context length the log shows the engine ran with
    quantization: str | None = None
    loading = False
    # CUDA out of memory: the first such line, the furthest start-up phase the log reached
    # (a multi-process log can print a phase line after another process's error), and the
    # utilization vLLM ran with (0.9 when its non-default args line does not set one).
    oom: str | None = None
    phase: Phase | None = None
    utilization: float | None = None
    chunked: Chunking = (None, None)  # chunked prefill and its batch: vLLM's profiling pass
    asserted: tuple[str, str] | None = None  # the last ``assert a % b == 0`` a traceback echoed
    kv_flag: str | None = None
    dtype: str | None = None  # the model dtype the command forced
    unread: str | None = None  # a runtime of the engine whose source is not read
    frame: str | None = None  # the last frame in the engine's package a traceback showed
    code: str | None = None  # the source line that frame shows
    tokenizer_init = False  # a frame of transformers' tokenizer __init__ in this traceback
    remote_tokenizer: str | None = None  # the model's own tokenizer file a frame after it
    config_file: str | None = None  # the model's transformers config class it went through
    validated: str | None = None  # the setting whose config class pydantic refused
    architecture: str | None = None  # the architecture vLLM resolved the model to
    fell_back: str | None = None  # an architecture vLLM ran through its Transformers backend
    chose_backend = False  # the command asked for that backend (--model-impl transformers)
    gpu: tuple[int, int] | None = None  # the compute capability of the GPU the log names
    command: str | None = None  # the server's command line, as the log quotes it
    imported: str | None = None  # the last "from X import ..." source line a traceback showed
    registering = False  # the last frame is transformers' Auto-class registration
    hybrid_off: tuple[str, ...] = ()  # switches shown turning vLLM's hybrid KV manager off
    marked, heeded = _marked(), _heeded()
    # An answer held while the lines after its message are read: the kernels' reasons that
    # follow vLLM's "Failed to find a kernel ... Reasons:" (kernel_reasons.py).
    held: tuple[Diagnosis, LogContext] | None = None
    reasons: list[str] = []
    # An engine's logger.exception message (the catalogue's "log.exception" templates): the
    # exception it was handling is printed after it, and that exception is the root; the
    # message is the answer only where no exception follows.
    handling: Diagnosis | None = None
    # The answer to a line the engine logged as a warning and went on from: an error after
    # it that something knows is the root; only where none is does the warning answer.
    warned: Diagnosis | None = None
    # The answer to a raise's message the engine logged bare ("ERROR ... [engine.py:448] MSG"):
    # the exception's own line after its traceback is the better reading of the same failure.
    echoed: Diagnosis | None = None

    def settled(found: Diagnosis) -> Diagnosis:
        # what the log says of the answer's fixes: given already, a KV dtype chosen, unread
        return _unread(already_given(given_kv_dtype(found, kv_flag), command), unread)

    # After a frame's ``assert`` line: the lines with words that followed it (a traceback
    # pasted up to the assert ends there, or at the carets under it)
    after_assert: list[str] | None = None
    stream, ahead = bounded(lines), facts.settled_input(lines)
    for raw in stream:
        if after_assert is not None and len(raw) > 1 and len(after_assert) < 2:
            if not _gutter(raw):
                after_assert.append(raw)
        if held is not None:
            reason = PREFIX.sub("", uncoloured(raw)).rstrip()
            if is_reason(reason, held[0]) and len(reasons) < MOST_REASONS:
                reasons.append(reason)
                continue
            return by_reasons(held[0], reasons, held[1])
        line = raw
        # Colours are taken off only where the line is read further (the version banner, a
        # heeded line): they wrap a prefix or a level, never the middle of the words the
        # facts below are found by, and most lines of a log are neither (docs/benchmark.md).
        if version_text is None:
            version_match = facts.VERSION.search(uncoloured(line))
            version_text = version_match.group(1) if version_match else None
            engine = "vllm" if version_text else engine
        import_failed = import_failed or IMPORT_FAILED in line
        extension_failed = extension_failed or EXTENSION_FAILED in line
        if "_" in line and unread is None:
            unread = next((n for p, n in facts.UNREAD_RUNTIMES.items() if p in line), None)
        if not loading and "oad" in line:  # once seen, never searched for again
            loading = facts.LOADING.search(line) is not None
        if "mem_fraction_static=" in line and (ran := facts.FRACTION.search(line)):
            fraction = float(ran.group(1))
            dp_attention = dp_attention or "enable_dp_attention=True" in line
            expert_metrics = expert_metrics or "enable_expert_distribution_metrics=True" in line
        if not draft and "peculative" in line:
            draft = facts.SPECULATIVE.search(line) is not None
        # Plain substring tests first (most lines of a log are none of these; docs/benchmark.md),
        # and past a phase only the later phases' words (cuda_oom.NOTED).
        if phase != "warmup" and (
            "aptur" in line
            or (
                phase not in ("sized", "capture")
                and (
                    "emory" in line
                    or "ache" in line
                    or "blocks" in line
                    or (phase in (None, "loading") and "oad" in line)  # then: the cache
                )
            )
        ):
            phase = phase_of(line, phase) or phase
        if "emory" in line or "otal capacity" in line:
            if oom is None and is_oom(line):
                oom = PREFIX.sub("", uncoloured(line)).strip()
            if "utilization" in line:
                utilization = utilization_in(line) or utilization
        if phase is None and "hunked" in line:  # the config, shown before the weights load
            chunked = chunking(line, chunked)
        if utilization is None and "non-default args" in line:
            utilization = utilization_in(line) or 0.9
        if (
            "parallel_size" in line or "parallel-size" in line or "tp_size" in line or "-tp" in line
        ) and (sized := facts.TP.search(line)):
            tp = int(sized.group(1))
        # one test on most lines: the context length is on few of a log's lines with "max"
        if "max" in line and (context := facts.MAX_MODEL_LEN.search(line)):
            max_len = int(context.group(1))
        if (
            "parallel_size" in line or "parallel-size" in line or "pp_size" in line or "-pp" in line
        ) and (staged := facts.PP.search(line)):
            pp = int(staged.group(1))
        if "quantization" in line and (method := facts.QUANT_SET.search(line)):
            quantization = method.group(1)
        if engine is None and any(w in line for w in facts.SGLANG_SAYS):
            engine = "sglang"
        elif engine is None and any(w in line for w in facts.VLLM_SAYS):
            engine = "vllm"
        if "dtype" in line:  # the command's dtypes, one test first
            if ("kv_cache_dtype" in line or "kv-cache-dtype" in line) and (
                given := facts.KV_FLAG.search(line)
            ):
                kv_flag = given.group(1) or given.group(2)
            dtype = forced_dtype(line) or dtype
        if "avail mem=" in line:
            loaded = facts.LOADED.search(line)
            if loaded is not None and loaded.group(1) == "begin":
                memory = (float(loaded.group(2)), 0.0)
            elif loaded is not None and memory is not None:
                memory = (memory[0], float(loaded.group(2)))
            elif loaded is not None and loaded.group(3):
                # No begin line kept: SGLang's "mem usage" is free-before minus free-after
                # (model_runner.py: weight_load_mem_usage = before - after).
                after = float(loaded.group(2))
                memory = (after + float(loaded.group(3)), after)
        if "Traceback (most" in line:  # a new traceback: an earlier one's assert is not its
            asserted = frame = code = remote_tokenizer = after_assert = None
            tokenizer_init = registering = False
        if code is None and frame is not None and not _gutter(line):
            code = PREFIX.sub("", uncoloured(line)).strip()  # the source line the frame shows
            after_assert = [] if code.startswith("assert ") else None
        if 'File "' in line:
            # the last frame: transformers' Auto-class registration, or the engine's own
            registering = "/transformers/models/auto/" in line and ", in register" in line
            if "/sglang/" in line or "/vllm/" in line:
                frame, code = line, None
        if " import " in line and (asked := facts.IMPORTED.match(PREFIX.sub("", line))):
            imported = asked.group(0).strip()
        if ("Resolved architecture" in line or "Load weight end" in line) and (
            resolved := facts.RESOLVED.search(line)
        ):
            architecture = resolved.group(1) or resolved.group(2)
        if "impl" in line and CHOSEN_BACKEND.search(line):
            chose_backend = True
        if "falling back to Transformers" in line and (fell := facts.FELL_BACK.search(line)):
            fell_back = fell.group(1)
        v2_runner = v2_runner or "Using V2 Model Runner" in line
        if "kv" in line and (switched := switches_in(line)):  # one plain test on most lines
            hybrid_off += tuple(f for f in switched if f not in hybrid_off)
        if command is None and " --" in line and facts.COMMAND_LINE.search(line):
            command = uncoloured(line)
        if gpu is None and ("apabilit" in line or "NVIDIA" in line or "Tesla" in line):
            gpu = stated(line)
        if "validation error for " in line and (named := facts.VALIDATED.search(line)):
            validated = re.sub(r"(?<!^)(?=[A-Z])", "_", named.group(1)).lower() + "_config"
        if "/configuration_" in line and (own := facts.CONFIG_FILE.search(line)):
            config_file = own.group(0)
        if 'File "' in line and "tokenization_" in line:
            if "/transformers/tokenization_" in line and "in __init__" in line:
                tokenizer_init = True
            elif tokenizer_init and (remote := REMOTE_FILE.search(line)):
                remote_tokenizer = remote.group(1)
        if "assert " in line and "%" in line:
            divides = facts.DIVIDES.search(line)
            asserted = (divides.group(1), divides.group(2)) if divides else asserted
        if heeded.search(line) is None:
            continue
        line = uncoloured(raw)
        if engine is None:  # the first error line, or a traceback's path, says whose log
            engine = (
                "sglang"
                if "sglang" in line or SGLANG_PREFIX.match(line)
                else "vllm"
                if "vllm" in line or VLLM_PREFIX.search(line)
                else None
            )
        marked_line = marked.search(line) is not None
        warning = WARNED.search(line) is not None
        line = PREFIX.sub("", line).rstrip()
        if not line.isprintable():  # echoed: every control stripped
            line = shown(line)
        version = _release_numbers(version_text)
        # commands are pasted into a shell
        ctx = facts.with_command(
            LogContext(
                shlex.quote(checkpoint),
                version,
                import_failed,
                engine,
                memory if memory is not None and memory[1] > 0 else None,
                fraction,
                loading,
                draft,
                tp,
                kv_flag,
                pp=pp,
                quantization=quantization,
                config_file=config_file,
                validated=validated,
                architecture=architecture,
                gpu=gpu,
                frame=frame,
                dtype=dtype,
                imported=imported,
                remote_tokenizer=remote_tokenizer,
                extension_failed=extension_failed,
                registering=registering,
                hybrid_off=hybrid_off,
                dp_attention=dp_attention,
                v2_runner=v2_runner,
                expert_metrics=expert_metrics,
            ),
            command,
        )
        matched = _first_rule(line) if marked_line else None
        if matched is not None and matched[1][1] is UNHANDLED and not warning:
            # torch's NCCL error: NCCL's own last warning follows it, and is the root
            said = last_error(line, stream)
            ctx = replace(ctx, nccl_last_error=said)
            if said is not None and (root_rule := _first_rule(f"NCCL WARN {said}")) is not None:
                matched, line = root_rule, said
        if matched is not None:
            found, (rule, _, explain) = matched
            cause, fixes = explain(found, ctx)
        if matched is not None and fixes and command is None and not warning and ahead:
            # a report quoting the error before its command: the command's facts still count
            if (command := facts.command_after(stream)) is not None:
                ctx = facts.with_command(ctx, command)
                cause, fixes = explain(found, ctx)
        if matched is not None and fixes:  # no fix: the rule does not hold in this log
            found_here = Diagnosis(source, rule, line.strip(), cause, tuple(fixes), version_text)
            found_here = settled(found_here)
            if not warning:
                return found_here
            warned = warned or found_here
            continue
        if asserted is not None and line.strip().endswith("AssertionError"):
            return replace(
                divisibility(asserted, line.strip(), ctx), log=source, engine_version=version_text
            )
        if line.strip() == "AssertionError" and (
            bare := by_asserted_key(frame, code)
            or by_params_assert(frame, code)
            or by_bare_assert(frame)
        ):
            return replace(bare, log=source, engine_version=version_text)
        quoted = facts.QUOTED.search(line)
        if quoted is not None:  # the wrapper's quote of the worker's error: read the quote
            line = quoted.group(1)
        elif SOURCE.match(line) or any(w in line for w in WRAPPERS):
            continue
        known = (
            from_compile_cache(line, ctx)
            or _from_catalogue(line, ctx)
            # the engine's own reading of the name before any reading of the words
            or by_optional_import(line, frame, code)
            or by_words(line, ctx)
            or by_unset(line, frame, code)
            or by_rope_key(line, frame, code, ctx)
            or by_division(line, ctx)
            or by_first_line(line)
        )
        raised = RAISED.match(line)
        if known is None and asserted is not None and raised and raised["kind"] == "AssertionError":
            known = divisibility(asserted, line.strip(), ctx)  # "12 is not divisible by 24"
        if known is not None and known.template is not None and not raised:
            if known.template.exception == "log.exception":
                handling = handling or known
                continue
            if not known.template.exception.startswith("log.") and not CONTINUED.search(line):
                # a raise's words without its kind: the engine logging the exception it
                # caught, whose traceback (and the frame that raised it) follows
                echoed = echoed or replace(known, log=source, engine_version=version_text)
                continue
        if handling is not None and known is None and raised and oom is None:
            # the handled exception, which nothing knows: quoted as the root, with no fix
            return Diagnosis(source, None, line.strip(), NO_MATCH, (), version_text)
        if known is not None:
            known = replace(known, log=source, engine_version=version_text)
            known = settled(known)
            if warning:
                warned = warned or known
                continue
            if CONTINUED.search(line) is not None:  # its reasons are on the lines that follow
                reasons = inline_reasons(line, known)
                if reasons:
                    return by_reasons(known, reasons, ctx)
                held = (known, ctx)
                continue
            return known
        cpp = CPP_ASSERTION.search(line) if root is None else None
        if root is None and (RAISED.match(line) or quoted is not None or cpp is not None):
            # Triton's TensorRT-LLM backend wraps the C++ check in its own words ("Failed to
            # create instance: unexpected error when creating modelInstanceState: ..."): the
            # check is the root
            start = cpp.start() if cpp is not None and not RAISED.match(line) else 0
            root = (raw if quoted is not None else line[start:]).strip()
            if cpp is not None:  # newer Triton quotes the check and its frames, "\\n"-joined
                root = root.split("\\n", 1)[0]
    if held is not None:
        return by_reasons(held[0], reasons, held[1])
    if warned is not None:
        return warned
    if oom is not None and phase is not None:
        # Only now: a more specific line later in the log (TensorRT-LLM's executor names the
        # component it could not create) is the better answer to the same failure.
        cause, fixes = explain_oom(
            phase,
            engine,
            utilization,
            fraction,
            _release_numbers(version_text),
            gpu,
            chunked,
            tp=tp,
            max_model_len=max_len,
        )
        return Diagnosis(source, "cuda-oom-startup", oom, cause, tuple(fixes), version_text)
    if handling is not None:
        return settled(replace(handling, log=source, engine_version=version_text))
    if echoed is not None:
        return settled(echoed)
    if root is None and (cut := _cut_at_assert(after_assert, frame, code)) is not None:
        return replace(cut, log=source, engine_version=version_text)
    if root is not None and (
        through := from_backend(
            root,
            _release_numbers(version_text),
            fell_back=fell_back,
            resolved=architecture,
            frame=frame,
            chosen=chose_backend,
        )
    ):
        return Diagnosis(source, "transformers-fallback", root, *through, version_text)
    return Diagnosis(source, None, root or oom, NO_MATCH, (), version_text)


def _gutter(line: str) -> bool:
    """A line of Buildkite's web view copied with the log: "Actions for L<n>", then the number
    alone, before each line of the log."""
    return line.startswith("Actions for L") or line.strip().isdigit()


def _cut_at_assert(
    after: list[str] | None, frame: str | None, code: str | None
) -> Diagnosis | None:
    """A traceback pasted up to its last frame's ``assert`` line (or the carets under it),
    its ``AssertionError`` cut off: read as that assertion, by the readers that know which
    assert of the engine's source it is; any other cut traceback stays unknown."""
    if after is None or code is None or len(after) > 1:
        return None
    if after and PREFIX.sub("", uncoloured(after[0])).strip().strip("^~ "):
        return None  # a line with words after the assert: the log went on
    return by_asserted_key(frame, code) or by_params_assert(frame, code)


def _release_numbers(version_text: str | None) -> tuple[int, ...] | None:
    """The first three numbers of the version the log named ("0.11.1rc2" is (0, 11, 1))."""
    return tuple(int(p) for p in re.findall(r"\d+", version_text)[:3]) if version_text else None


def diagnose_text(text: str, *, checkpoint: str = "CKPT", source: str = "-") -> Diagnosis:
    """Find the root failure in a log's text (see :func:`diagnose`)."""
    return diagnose_lines(text.splitlines(), checkpoint=checkpoint, source=source)


def diagnose(log: Path | str, *, checkpoint: Path | str | None = None) -> Diagnosis:
    """Read a failed engine start-up log (``-`` for standard input is the CLI's business) and
    map its root error to the cause and the fix; ``checkpoint`` fills in the commands."""
    path = Path(log)
    try:
        # Line by line: a multi-GB debug log (or ``<(docker logs x)``) is never held whole.
        with path.open(encoding="utf-8", errors="replace") as lines:
            found = diagnose_lines(
                lines,
                checkpoint=str(checkpoint) if checkpoint is not None else "CKPT",
                source=str(path),
            )
    except OSError as exc:
        raise InputFileError(
            f"cannot read the log ({exc.strerror})", file=path, hint="give the path of the log"
        ) from None
    return found if checkpoint is None else judge_fixes(found, checkpoint)
