"""``check``: known problems in a checkpoint's config files, each with the transform that
addresses it. Reads config and tokenizer files (the weight index, never the weights)."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from patcher.advice import stop_findings
from patcher.advice import tokenizer_findings as tokenizer
from patcher.advice.finding import CheckContext, Finding, Rule, dig, language_model, pointer_of
from patcher.advice.memory import memory_finding
from patcher.engines import installed
from patcher.engines.engine import Engine, parse_engine
from patcher.engines.files import READ_FILES, config_files
from patcher.engines.gpus import Gpu, parse_gpu
from patcher.engines.launch_flags import refuse_without_flag
from patcher.engines.model import derive, refuse_unknown_kv_cache_dtype
from patcher.engines.parallel import tensor_parallel_error
from patcher.engines.readings import assumed
from patcher.engines.target import Target, take_target
from patcher.engines.templates import JINJA_FILE, served_template
from patcher.engines.view import EngineView, StartupError
from patcher.engines.vllm import BOM_JUDGED as VLLM_BOM_JUDGED
from patcher.engines.vllm import partial_sliding_window as vllm_partial_sliding_window
from patcher.errors import TargetError
from patcher.results import JsonResult
from patcher.store.checkpoint import Checkpoint, open_checkpoint
from patcher.store.file_status import file_states
from patcher.store.files import read_current
from patcher.store.jsonfile import read_config
from patcher.store.session import read_journal
from patcher.units import parse_size_gib

FP8_KV_POINTERS = (
    ("hf_quant_config.json", ("quantization", "kv_cache_quant_algo")),
    ("config.json", ("quantization_config", "kv_cache_scheme")),
    ("config.json", ("quantization_config", "kv_cache_quant_algo")),
    ("config.json", ("quantization_config", "quantization", "kv_cache_quant_algo")),
    ("config.json", ("text_config", "quantization_config", "kv_cache_scheme")),
    ("config.json", ("text_config", "quantization_config", "kv_cache_quant_algo")),
    ("config.json", ("text_config", "quantization_config", "quantization", "kv_cache_quant_algo")),
)


@dataclass(frozen=True, slots=True, repr=False)
class CheckReport(JsonResult):
    """Everything ``check`` found (empty when the checkpoint looks fine), and with an engine,
    what that engine derives from the files."""

    checkpoint: Path
    findings: tuple[Finding, ...]
    engine: EngineView | None = None
    # With --engine-python: how the installed engine answered (from the cache), or why it
    # could not be asked and the recorded model answered instead.
    asked: str | None = None

    def to_json(self) -> dict[str, Any]:
        """A check report as JSON."""
        return {
            "checkpoint": str(self.checkpoint),
            "engine": None if self.engine is None else self.engine.to_json(),
            "asked": self.asked,
            "findings": [
                {
                    "code": f.code,
                    "file": f.file,
                    "pointer": f.pointer,
                    "message": f.message,
                    "transform": f.transform,
                    "command": f.command,
                    "alternatives": list(f.alternatives),
                    "note": f.note,
                }
                for f in self.findings
            ],
        }


class _Files:
    """The checkpoint's JSON files, each parsed once, absent ones as None."""

    def __init__(self, checkpoint: Checkpoint) -> None:
        self.checkpoint = checkpoint
        self.cache: dict[str, Any] = {}

    def get(self, name: str) -> Any:
        if name not in self.cache:
            self.cache[name] = read_config(self.checkpoint, name)
        return self.cache[name]


def kv_label(value: Any) -> str:
    """What a KV directive means: 'FP8', 'INT8', ... or 'none'."""
    if value is None or (isinstance(value, str) and value.lower() in ("", "none", "null")):
        return "none"
    if isinstance(value, dict):
        bits, kind = value.get("num_bits"), value.get("type")
        return "FP8" if (bits, kind) == (8, "float") else f"{kind or '?'}{bits or ''}".upper()
    return str(value).upper()


def _fp8_kv(ctx: CheckContext) -> Iterator[Finding]:
    """Without an engine named: a KV-cache quantization directive some GPUs cannot run."""
    if ctx.view is not None:
        return  # the engine model knows whether that engine runs it on that GPU
    apply = ctx.apply
    for name, keys in FP8_KV_POINTERS:
        value = dig(ctx.get(name), keys)
        if kv_label(value) == "none":
            continue
        method = dig(ctx.get(name), (*keys[:-1], "quant_method"))
        if method == "compressed-tensors":  # recorded: the attention layers switch to fp8
            how = "vLLM's attention layers switch the KV cache to fp8 for it"
            example, transform = "SM89 with MTP, vLLM #44879", "strip-ct-kv-cache-scheme"
        else:
            how = "vLLM resolves --kv-cache-dtype auto to it"
            example, transform = "SM120 TRITON_MLA", "strip-fp8-kv-cache"
        yield Finding(
            "fp8-kv-directive",
            name,
            pointer_of(keys),
            f"KV-cache quantization directive {json.dumps(value)}: {how}, and some "
            f"GPUs/backends cannot run it (e.g. {example})",
            transform,
            apply(transform),
        )


def _kv_disagreement(ctx: CheckContext) -> Iterator[Finding]:
    apply = ctx.apply
    legacy = ctx.get("hf_quant_config.json")
    config = ctx.get("config.json")
    if legacy is None or config is None:
        return
    inline = dig(config, ("quantization_config",)) or dig(
        config, ("text_config", "quantization_config")
    )
    if not isinstance(inline, dict):
        return
    file_kv = kv_label(dig(legacy, ("quantization", "kv_cache_quant_algo")))
    inline_kv = "none"
    for keys in (
        ("kv_cache_scheme",),
        ("kv_cache_quant_algo",),
        ("quantization", "kv_cache_quant_algo"),
    ):
        if kv_label(dig(inline, keys)) != "none":
            inline_kv = kv_label(dig(inline, keys))
    if file_kv != inline_kv:
        yield Finding(
            "kv-disagreement",
            "hf_quant_config.json",
            "/quantization/kv_cache_quant_algo",
            f"hf_quant_config.json says KV cache {file_kv} but config.json quantization_config "
            f"says {inline_kv}: vLLM follows config.json, TensorRT-LLM hf_quant_config.json",
            "strip-fp8-kv-cache",
            apply("strip-fp8-kv-cache"),
        )


def _rope_downgrade(ctx: CheckContext) -> Iterator[Finding]:
    diff = f"patcher diff {ctx.checkpoint.arg}"
    model, base = language_model(ctx.get("config.json"))
    rope = dig(model, ("rope_scaling",))
    if not isinstance(rope, dict):
        return
    kind, rope_type = rope.get("type"), rope.get("rope_type")
    stray = rope_type == "llama3" and kind not in (None, "llama3")
    downgraded = (
        kind in ("dynamic", "linear")
        and rope_type in (None, kind)
        and dig(model, ("model_type",)) == "llama"
        and isinstance(dig(model, ("max_position_embeddings",)), int)
        and dig(model, ("max_position_embeddings",)) >= 131072
    )
    if stray or downgraded:
        yield Finding(
            "legacy-llama3-rope-downgrade",
            "config.json",
            pointer_of((*base, "rope_scaling")),
            f"rope_scaling {json.dumps(rope)} looks like the pre-transformers-4.43 workaround for "
            "Llama 3.1 (llama3 scaling replaced or given a stray 'type'): it silently changes the "
            "positional encoding; put the upstream llama3 block back and upgrade transformers",
            None,
            diff,
        )


def _shadowed_template(ctx: CheckContext) -> Iterator[Finding]:
    tokenizer = ctx.get("tokenizer_config.json")
    if dig(tokenizer, ("chat_template",)) is None:
        return
    data = read_current(ctx.checkpoint, JINJA_FILE)
    if data is None or served_template(tokenizer, None) == data.decode("utf-8", "replace"):
        return
    jinja = shlex.quote(str(ctx.checkpoint.path(JINJA_FILE)))
    yield Finding(
        "chat-template-shadowed",
        "tokenizer_config.json",
        "/chat_template",
        f"differs from {JINJA_FILE}, which the tokenizers of vLLM and SGLang load instead: "
        "this template is not served, and an edit to it changes nothing (set-chat-template "
        "writes the template to serve to both; the fix keeps the one served now)",
        "set-chat-template",
        f"patcher apply {ctx.checkpoint.arg} set-chat-template --set template={jinja}",
    )


def _sliding_window(ctx: CheckContext) -> Iterator[Finding]:
    """Sliding window on only some layers of a model vLLM builds on its Qwen2Model, which
    refuses it when the model is built (recorded with vLLM 0.16.0 and 0.33.0). Judged against
    vLLM it is the engine model's start-up error instead; SGLang is not claimed."""
    apply, engine = ctx.apply, ctx.engine
    config = ctx.get("config.json")
    if engine is not None or not isinstance(config, dict):
        return
    refused = vllm_partial_sliding_window(config)
    if refused is not None:
        yield Finding(
            "partial-sliding-window",
            "config.json",
            refused.pointer or "",
            'sliding window on only some layers: vLLM does not build the model ("Sliding '
            'window for some but all layers is not supported"; 0.8.4 to 0.33.0 at least)',
            "disable-sliding-window",
            apply("disable-sliding-window"),
        )


def _missing_mtp(ctx: CheckContext) -> Iterator[Finding]:
    apply = ctx.apply
    model, base = language_model(ctx.get("config.json"))
    index = ctx.get("model.safetensors.index.json")
    layers = dig(model, ("num_hidden_layers",))
    for key in ("num_nextn_predict_layers", "mtp_num_hidden_layers"):
        declared = dig(model, (key,))
        if not isinstance(declared, int) or declared <= 0 or not isinstance(index, dict):
            continue
        names = list((index.get("weight_map") or {}).keys())
        pattern = re.compile(rf"(^|\.)layers\.{layers}\.|(^|\.)mtp\.")
        if isinstance(layers, int) and not any(pattern.search(n) for n in names):
            yield Finding(
                "mtp-weights-missing",
                "config.json",
                pointer_of((*base, key)),
                f"{key} is {declared} but model.safetensors.index.json has no tensors for layer "
                f"{layers} or mtp.*: started with --speculative-config method mtp, vLLM builds "
                "an MTP draft from weights that are not there",
                "disable-mtp-layers",
                apply("disable-mtp-layers"),
            )


def _generation_cap(ctx: CheckContext) -> Iterator[Finding]:
    """max_new_tokens in generation_config.json. Recorded: vLLM 0.16.0 cuts every response at
    it, whatever max_tokens the request asks; 0.33.0 takes it only as the default of requests
    that set none (PR #34063, first in 0.17.0), and SGLang 0.5.23 does not take it. So judged
    against an engine, it is a finding only where that engine caps responses."""
    apply, view = ctx.apply, ctx.view
    value = dig(ctx.get("generation_config.json"), ("max_new_tokens",))
    if not isinstance(value, int):
        return
    if view is None:
        message = (
            f"max_new_tokens {value}: vLLM before 0.17 cuts every response at it, whatever "
            "max_tokens the request asks (PR #34063); later versions take it as a default only"
        )
    elif view.max_tokens_cap.value is not None:
        message = (
            f"max_new_tokens {value}: {view.engine} cuts every response at "
            f"{view.max_tokens_cap.value} tokens, whatever max_tokens the request asks"
        )
    else:
        return
    yield Finding(
        "generation-max-new-tokens",
        "generation_config.json",
        "/max_new_tokens",
        message,
        "drop-generation-max-new-tokens",
        apply("drop-generation-max-new-tokens"),
    )


def _null_dtype(ctx: CheckContext) -> Iterator[Finding]:
    """A null torch_dtype in the config section the engines read the dtype from. Recorded: vLLM
    (0.16.0, 0.33.0) serves bfloat16 (float16 below compute capability 8.0); SGLang 0.5.23
    reads it as float32 and serves float16, which can overflow for a model trained in bfloat16.
    So the finding is for SGLang, and left out when judging a vLLM version."""
    apply, engine = ctx.apply, ctx.engine
    model, base = language_model(ctx.get("config.json"))
    if engine == "vllm" or not isinstance(model, dict):
        return
    if "torch_dtype" in model and model["torch_dtype"] is None and model.get("dtype") is None:
        yield Finding(
            "null-dtype",
            "config.json",
            pointer_of((*base, "torch_dtype")),
            "torch_dtype is null: SGLang's --dtype auto reads it as float32 and serves float16, "
            "which can overflow for a model trained in bfloat16 (vLLM serves bfloat16)",
            "set-torch-dtype",
            apply("set-torch-dtype") + " --set dtype=bfloat16",
        )


# What a leading byte-order mark does where the engines read the file (recorded: vLLM 0.16.0 and
# 0.33.0; SGLang 0.5.23 for config.json, hf_quant_config.json and tokenizer_config.json).
BOM_EFFECTS = {
    "config.json": 'transformers refuses it, so vLLM and SGLang do not start ("It looks like '
    "the config file at '...' is not a valid JSON file.\")",
    "hf_quant_config.json": 'vLLM and SGLang refuse it ("Unexpected UTF-8 BOM") when '
    "config.json has no quantization_config",
    "generation_config.json": "transformers refuses it and vLLM takes that for a missing file: "
    "its sampling defaults are silently not used, and eos_token_id is config.json's",
    "tokenizer_config.json": "transformers' tokenizer loading refuses it, so vLLM and SGLang do "
    'not start ("Unexpected UTF-8 BOM")',
}


def _bom(ctx: CheckContext) -> Iterator[Finding]:
    marked, apply, engine = ctx.marked, ctx.apply, ctx.engine
    for name, effect in BOM_EFFECTS.items():
        if engine == "vllm" and name in VLLM_BOM_JUDGED:
            continue  # the engine model reports these as start-up errors, where they are ones
        if name in marked:
            yield Finding(
                "bom",
                name,
                "",
                f"starts with a UTF-8 byte-order mark: {effect}",
                "strip-bom",
                apply("strip-bom"),
            )


def _engine_findings(ctx: CheckContext) -> Iterator[Finding]:
    """What the engine named derives from the files, and its start-up errors as findings."""
    if ctx.view is None:
        return
    view, apply, checkpoint = ctx.view, ctx.apply, ctx.checkpoint.arg
    tensor_parallel = ctx.tensor_parallel
    serve = (
        f"vllm serve {checkpoint}"
        if view.engine.name == "vllm"
        else f"python -m sglang.launch_server --model-path {checkpoint}"
    )
    if tensor_parallel and tensor_parallel > 1:  # a fix pasted starts on the target's GPUs
        serve += f" {'--tensor-parallel-size' if view.engine.name == 'vllm' else '--tp-size'}"
        serve += f" {tensor_parallel}"
    reading = assumed(view.engine)
    who = (
        f"{view.engine} refuses to start"
        if reading.read
        else f"by {view.engine.name} {reading.release_text}'s rules (assumed), {view.engine} "
        "would refuse to start"
    )
    for error in view.startup_errors:
        yield Finding(
            "engine-startup-error",
            error.file or "config.json",
            error.pointer or "",
            f"{who}: {error.message}",
            error.transform,
            apply(error.transform) if error.transform else None,
            (f"{serve} {error.flag}",) if error.flag else (),
            error.note,
        )


# Every check rule, in the order their findings are listed (how to add one:
# docs/development.md).
RULES: tuple[Rule, ...] = (
    _engine_findings,
    _fp8_kv,
    _kv_disagreement,
    _rope_downgrade,
    stop_findings.eos_mismatch,
    stop_findings.unknown_eos_token,
    _shadowed_template,
    tokenizer.missing_template,
    tokenizer.turn_end_not_stopped,
    tokenizer.add_eos_token,
    tokenizer.tokenizer_class,
    _sliding_window,
    _missing_mtp,
    _generation_cap,
    _null_dtype,
    _bom,
)


def check_checkpoint(
    checkpoint: Path | str,
    *,
    engine: Engine | str | None = None,
    gpu: Gpu | str | None = None,
    revision: str | None = None,
    tensor_parallel: int | None = None,
    kv_cache_memory: float | str | None = None,
    kv_cache_dtype: str | None = None,
    engine_python: Path | str | None = None,
    target: Target | None = None,
) -> CheckReport:
    """Report known problems in the checkpoint's config files.

    With ``engine`` (``"vllm==0.16.0"``) and optionally ``gpu`` (``"rtx-pro-6000"`` or
    ``"12.0"``), the report also holds what that engine derives from the files, and the
    engine's start-up errors become findings; the generic FP8 KV finding is then left to the
    engine model, which knows whether that engine runs FP8 KV on that GPU.

    With ``tensor_parallel`` (how many GPUs share the weights) or ``kv_cache_memory`` (GiB, or
    a size such as "1GiB"), the memory is judged too: a context that does not fit in the KV
    cache is a finding. ``kv_cache_dtype`` judges the files as started with that
    ``--kv-cache-dtype`` (None: not given, 'auto').

    With ``engine_python`` (the interpreter of a venv with the engine installed), that
    engine's own config code answers (``patcher.engines.installed``), for any version; the
    engine then need not be named. Where it cannot be asked, the recorded model answers and
    the report's ``notes`` say why.

    ``target`` (:func:`patcher.make_target`'s, as plan and sync take it) gives all of these
    at once; a keyword given as well must say the same."""
    settings = take_target(
        target,
        {
            "engine": engine,
            "gpu": gpu,
            "tensor_parallel": tensor_parallel,
            "kv_cache_memory": kv_cache_memory,
            "kv_cache_dtype": kv_cache_dtype,
            "engine_python": engine_python,
        },
    )
    engine, gpu, engine_python = settings["engine"], settings["gpu"], settings["engine_python"]
    tensor_parallel, kv_cache_memory = settings["tensor_parallel"], settings["kv_cache_memory"]
    kv_cache_dtype = settings["kv_cache_dtype"]
    ckpt = open_checkpoint(checkpoint, revision)
    files = _Files(ckpt)
    judged = parse_engine(engine) if isinstance(engine, str) else engine
    device = parse_gpu(gpu) if isinstance(gpu, str) else gpu
    if kv_cache_memory is not None and judged is not None:
        refuse_without_flag(judged, "kv_cache_memory", None)
    if device is not None and judged is None and engine_python is None:
        raise TargetError(
            "--gpu needs an engine to judge against", hint="add --engine vllm==0.16.0"
        )
    # The engine model's view of the files (parsed once, each read for a mark once).
    parsed = config_files(ckpt, *(files.get(name) for name in READ_FILES))
    if judged is not None and kv_cache_dtype is not None:
        refuse_unknown_kv_cache_dtype(judged, kv_cache_dtype, None)
    view: EngineView | None = None
    asked: str | None = None  # how the installed engine answered, or why it did not
    if engine_python is not None:
        answered = installed.installed_view(
            Path(engine_python),
            ckpt.root,
            installed.files_key(ckpt),
            parsed,
            device,
            kv_cache_dtype,
            judged,
        )
        view, asked = answered.view, answered.said
        judged = view.engine if view is not None else judged
    if view is None and judged is not None:
        view = derive(judged, parsed, device, kv_cache_dtype=kv_cache_dtype)

    split = None if judged is None else tensor_parallel_error(judged, parsed, tensor_parallel)
    if view is not None and split is not None:  # vLLM refuses the size before any weight
        view = replace(view, startup_errors=(*view.startup_errors, split))
    engine_name = None if judged is None else judged.name
    journal = read_journal(ckpt)
    applied = {e.transform for e in journal.applied}

    @cache
    def back_to_upstream() -> frozenset[str]:
        """The journalled files a re-download put back to the upstream bytes."""
        return frozenset(f.path for f in file_states(ckpt, journal) if f.state == "original")

    notes: dict[str, str] = {}

    def apply(name: str, *args: str) -> str:
        """The command that fixes it with ``name`` (``args``: its --set, quoted here)."""
        if name not in applied:
            return " ".join([f"patcher apply {ckpt.arg} {name}", *map(shlex.quote, args)])
        # Applied, yet the files show the problem again: a re-download put the upstream bytes
        # back (reapply), or a new upstream replaced them (rebase).
        touched = {r.path for e in journal.applied if e.transform == name for r in e.files}
        if touched & back_to_upstream():
            notes[name] = f"{name} is applied; the files were re-downloaded"
            return f"patcher reapply {ckpt.arg}"
        notes[name] = f"{name} is applied; the files are a new upstream version"
        return f"patcher rebase {ckpt.arg}"

    ctx = CheckContext(ckpt, files.get, parsed.bom, apply, engine_name, view, tensor_parallel)
    findings = [finding for rule in RULES for finding in rule(ctx)]
    if (
        view is not None
        and device is not None
        and view.starts
        and (tensor_parallel is not None or kv_cache_memory is not None)
    ):
        memory = list(
            memory_finding(
                ckpt,
                parsed,
                view,
                device,
                tensor_parallel or 1,
                None
                if kv_cache_memory is None
                else parse_size_gib(kv_cache_memory, "--kv-cache-memory"),
                kv_cache_dtype,
            )
        )
        findings += memory
        if memory:  # the KV check after the weights load fails: the server does not start
            view = replace(
                view,
                startup_errors=(
                    *view.startup_errors,
                    StartupError(memory[0].message, code="kv-memory", file="config.json"),
                ),
            )
    elif view is not None and judged is not None and device is not None and not view.starts:
        if tensor_parallel is not None or kv_cache_memory is not None:
            after = (ckpt, parsed, judged, device, view, tensor_parallel, kv_cache_memory)
            findings = _after_the_fix(findings, *after)
    findings = [
        replace(f, note=notes[f.transform]) if f.note is None and f.transform in notes else f
        for f in findings
    ]
    return CheckReport(ckpt.root, tuple(findings), view, asked)


def _after_the_fix(
    findings: list[Finding],
    ckpt: Checkpoint,
    parsed: Any,
    target: Engine,
    device: Gpu,
    view: EngineView,
    tensor_parallel: int | None,
    kv_cache_memory: float | str | None,
) -> list[Finding]:
    """Each fix in context: where the one start-up error is a KV dtype the engine cannot run,
    the memory as that fix leaves it (BF16 has twice FP8's bytes), reported now."""
    kv_fixes = [e for e in view.startup_errors if e.flag and e.flag.startswith("--kv-cache-dtype ")]
    if len(view.startup_errors) != 1 or not kv_fixes:
        return findings
    dtype = kv_fixes[0].flag.split()[1]  # type: ignore[union-attr]
    fixed = derive(target, parsed, device, kv_cache_dtype=dtype)
    if not fixed.starts:
        return findings
    memory = list(
        memory_finding(
            ckpt,
            parsed,
            fixed,
            device,
            tensor_parallel or 1,
            None
            if kv_cache_memory is None
            else parse_size_gib(kv_cache_memory, "--kv-cache-memory"),
            dtype,
        )
    )
    if not memory:
        return findings
    options = ["--engine", str(target), "--gpu", device.name]
    options += ["--tp", str(tensor_parallel)] if tensor_parallel else []
    plan = f"patcher plan {ckpt.arg} {shlex.join(options)}"
    leads = (
        f"either fix leads to the next problem (kv-memory, below); {plan} gives the whole launch"
    )
    then = replace(
        memory[0],
        message=f"after the fix above (a {dtype} KV cache): {memory[0].message}",
        note=f"{plan} gives both fixes together",
    )
    out = [
        replace(f, note=f"{f.note}; {leads}" if f.note else leads)
        if f.code == "engine-startup-error"
        else f
        for f in findings
    ]
    at = max(i for i, f in enumerate(out) if f.code == "engine-startup-error") + 1
    return [*out[:at], then, *out[at:]]
