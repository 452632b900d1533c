"""The answers of doctor's families (``families.py``): each reads the matched message and
gives the cause and the fixes, with values computed from the sizes, names and flags the
message carries, and the remedy the message names itself (``own_remedy.py``).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from patcher.advice.attention_rules import another_backend, unforce
from patcher.advice.catalogue import (
    Matched,
    at_or_below,
    model_types,
    releases,
)
from patcher.advice.log_rules import Fix, LogContext
from patcher.advice.no_config_fix import GGUF_OLD, gguf_gap
from patcher.advice.own_remedy import as_flag, lowers, own_remedy
from patcher.advice.startup_memory import (
    MORE_GPUS,
    POOL_HELD,
    against_the_pool,
    shorter_lengths,
)
from patcher.advice.strict_validation import before_strict, raised_strictly


def _engine(m: Matched, ctx: LogContext) -> str:
    """The engine whose flags the answer names: the log's, else the template's."""
    return ctx.engine or m.template.engine


def _flag_word(engine: str, vllm: str, sglang: str) -> str:
    return sglang if engine == "sglang" else vllm


# "max_num_batched_tokens (8192) is smaller than max_model_len (131072)": two limits named
# with their values (vLLM's SchedulerConfig, and messages of its shape).
_SMALLER = re.compile(r"\b(\w+) \((\d+)\) is (?:smaller|less) than (\w+) \((\d+)\)")


def _numbers(line: str) -> list[int]:
    return [int(n) for n in re.findall(r"(?<![\w.])(\d+)(?![\w.])", line)]


# A message about memory that says there is too little of it (the premise of every sizing
# fix below); one that names a memory mode or capability refuses a setting instead.
SHORTAGE = re.compile(
    r"not enough|insufficient|exceed|larger than|too (?:large|small|long|little|much)|"
    r"out of memory|no (?:GPU |device )?memory|leave no|cannot fit|can't fit|does not fit|"
    r"doesn't fit|smaller than|less than|at least|negative|cannot allocate|failed to allocate|"
    r"increase|decrease|reduce|is needed\b.*\bavailable",
    re.IGNORECASE,
)


def explain_memory(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    """The memory plan does not fit: a shorter context, more memory, more GPUs."""
    engine = _engine(m, ctx)
    fixes = own_remedy(m.line, m.template)
    if not SHORTAGE.search(m.line if m.whole else m.template.text):
        # Not a shortage: a memory mode or capability the configuration lacks. No sizing.
        return (
            "the engine refuses a memory setting or mode, or the GPUs lack a memory feature "
            "the configuration asks for (not a shortage: no memory size helps)",
            fixes or flags_named(m.line),
        )
    if engine == "sglang":
        fixes += [
            ctx.mem_fraction(),
            Fix(
                "flag",
                "--context-length 32768",
                note="an example: a shorter context (or --max-total-tokens) needs less KV space",
            ),
            Fix("flag", "--tp-size N", note="more GPUs: N times the KV space"),
        ]
        return (
            "SGLang's memory plan does not fit: the weights, the KV pool and the CUDA "
            "graphs exceed what --mem-fraction-static leaves",
            _unique(fixes),
        )
    if lowers(fixes, "--gpu-memory-utilization"):
        # The message itself says a smaller share (vLLM's sampler and pooler warm-ups, run
        # after the KV cache took its share): the memory ran out beside the share, which the
        # cache fills whatever the context, so a larger share or a shorter context is no way out.
        return (
            "CUDA ran out of memory beside the share the KV cache was sized to (the engine "
            "says so itself): a smaller share, or less of what ran out, leaves it room",
            _unique(fixes),
        )
    if pooled := against_the_pool(m.line, fixes):
        return (POOL_HELD, _unique(pooled))
    wanted = m.number("max_model_len", "max_seq_len", "seq_len")
    fits = m.number("estimat", "max_tokens", "num_tokens", "max_num_tokens")
    fixes += shorter_lengths(m.line if m.whole else "", wanted or _asked_length(m.line), fits)
    fixes += [
        Fix("flag", "--gpu-memory-utilization 0.95", note="if the GPU has no other users"),
        MORE_GPUS,
    ]
    return (
        "the weights, the activations and the KV cache do not fit in the memory the engine may use",
        _unique(fixes),
    )


# The words a message names the model's length with ("max seq len", "max_model_len"), and the
# length it says the model asks for: "max seq len (32768)", "max_model_len 8192".
LENGTH_WORDS = r"\bmax(?:imum)?[ _](?:seq(?:uence)?|model)[ _]len"
_ASKED = re.compile(LENGTH_WORDS + r"\w*\W{1,3}(\d+)\b", re.IGNORECASE)


def _asked_length(line: str) -> int | None:
    asked = _ASKED.search(line)
    return int(asked.group(1)) if asked else None


def _unique(fixes: list[Fix]) -> list[Fix]:
    """``fixes`` in order, each text once and each flag once (the first value wins, but a
    value computed takes the place of a placeholder ``N``)."""
    at: dict[str, int] = {}
    kept: list[Fix] = []
    for fix in fixes:
        words = fix.text.split()
        key = (
            words[0]
            if fix.kind == "flag" and fix.text.startswith("--") and len(words) <= 2
            else fix.text
        )
        if key not in at:
            at[key] = len(kept)
            kept.append(fix)
        elif kept[at[key]].text.endswith(" N") and not fix.text.endswith(" N"):
            kept[at[key]] = fix
    return kept


def explain_context(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    """A context longer than the model allows: the longest it declares."""
    engine = _engine(m, ctx)
    numbers = _numbers(m.line)
    # A line cut inside the message: the way out is in the rest of the source's words.
    fixes = own_remedy(m.line if m.whole else m.template.text, m.template)
    flag = _flag_word(engine, "--max-model-len", "--context-length")
    pair = _SMALLER.search(m.line)
    if pair is not None:  # "a (x) is smaller than b (y)": a at least y, or b at most x
        small, x, large, y = pair.groups()
        bounds = {
            as_flag(small): (y, f"at least {large}, {y}"),
            as_flag(large): (x, f"at most {small}, {x}"),
        }
        fixes = [
            Fix("flag", f"{f.text[:-2]} {bounds[f.text[:-2]][0]}", note=bounds[f.text[:-2]][1])
            if f.kind == "flag" and f.text.endswith(" N") and f.text[:-2] in bounds
            else f
            for f in fixes
        ]
    if re.search(r"sliding window for some", m.line, re.IGNORECASE):
        # qwen2.py and its kin refuse a sliding window on some layers only. To 0.9 the gate
        # is the cache's window (config.py's get_hf_config_sliding_window: none where
        # use_sliding_window is false, none at all with --disable-sliding-window); from 0.10
        # the config's layer types (is_interleaved), which the flag does not change.
        fixes = [ctx.set("config.json", "/use_sliding_window", "false")]
        if not ctx.at_least(0, 10):
            fixes.append(
                Fix(
                    "flag",
                    "--disable-sliding-window",
                    note="vLLM before 0.10 only; from 0.10 the config's layer types decide",
                )
            )
        return (
            "the config turns on a sliding window (use_sliding_window) for only some layers "
            "(max_window_layers), which this release does not run",
            fixes,
        )
    derived = m.number("derived", "max_position", "model_max", "max_len", "limit")
    lengthy = re.search(r"len|context|position|tokens", m.line, re.IGNORECASE)
    if derived is None and len(numbers) >= 2 and pair is None and lengthy:
        derived = min(numbers[:2])
    if derived:
        fixes.append(Fix("flag", f"{flag} {derived}", note="the longest the model declares"))
        fixes.append(
            Fix(
                "advice",
                "to serve longer: a RoPE scaling (patcher apply CKPT "
                "set-rope-scaling-yarn) where the model was trained for it",
            )
        )
    model_limit = re.search(r"derived|max_position|model's config|rope", m.line, re.IGNORECASE)
    return (
        "the context asked for is longer than the model's config allows (max_position_"
        "embeddings, or the RoPE scaling it declares)"
        if model_limit
        else "the context length conflicts with another limit the message names",
        _unique(fixes) or [Fix("flag", f"{flag} N", note="N at most the model's limit")],
    )


def explain_kv_dtype(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    """A KV-cache dtype with no kernel here: a BF16 cache, or FP8 where it is required."""
    line = m.line
    if re.search(r"sparse|fp8_ds_mla", line, re.IGNORECASE) and not re.search(
        r"requires? .*fp8|must be fp8", line, re.IGNORECASE
    ):
        return explain_gap(m, ctx)
    fixes = own_remedy(line, m.template)
    if re.search(r"scaling factors provided", line, re.IGNORECASE):
        # SGLang (load_model_utils.py): a scales file given for a model class without
        # load_kv_cache_scales; the file is server_args' quantization_param_path, whose flag
        # is --quantization-param-path (arg_groups/arg_utils.py: "--" + name with dashes).
        return (
            "this model's class cannot load the KV-cache scaling factors given with the FP8 "
            "KV cache (a --quantization-param-path file); the FP8 cache itself is not refused",
            [
                Fix(
                    "advice",
                    "leave out --quantization-param-path",
                    note="the FP8 KV cache then runs with scaling factors of 1.0",
                ),
                Fix("flag", "--kv-cache-dtype auto", note="or a BF16 cache, twice the bytes"),
            ],
        )
    if re.search(r"(requires?|needs?|must be|only supports?)\s+(an?\s+)?`?fp8", line, re.I):
        fixes.append(Fix("flag", "--kv-cache-dtype fp8"))
        return (
            "this model or backend needs an FP8 KV cache, and the one configured is not",
            _unique(fixes),
        )
    if re.search(r"e5m2", line, re.IGNORECASE):
        # No checkpoint's KV directive declares E5M2 (compressed-tensors' kv_cache_scheme and
        # ModelOpt's kv_cache_quant_algo are E4M3): the flag chose it; the other format may run.
        fixes += [
            Fix(
                "flag",
                "--kv-cache-dtype fp8_e4m3",
                note="the FP8 format checkpoints use; or auto, a BF16 cache of twice the bytes",
            ),
        ]
        return (
            "the FP8 E5M2 KV cache the command line asks for is refused here",
            _unique(fixes),
        )
    fixes += [
        Fix("flag", "--kv-cache-dtype auto", note="drop --kv-cache-dtype fp8*"),
        ctx.apply("strip-fp8-kv-cache"),
    ]
    return (
        "the KV cache dtype (an FP8 cache: from --kv-cache-dtype or the checkpoint's own "
        "directive) has no kernel here; a BF16 cache takes twice the bytes per token",
        _unique(fixes),
    )


def explain_gap(m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
    """A kernel, GPU or engine gap: no config fix, and what would help."""
    fixes = [f for f in own_remedy(m.line, m.template) if f.kind != "dependency"]
    return (
        "an engine or hardware gap: this engine has no kernel for the configuration on this "
        "GPU; no config edit helps",
        [
            *fixes,
            Fix(
                "advice",
                "a GPU the message names, or an engine release that has the "
                "kernel; no checkpoint edit",
            ),
        ],
    )


def explain_quantization(m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
    """A quantization config the method does not read: the fields or method named."""
    line = m.line
    fixes = own_remedy(line, m.template)
    unknown = re.search(
        r"(?:Unknown|Invalid|Unsupported) quantization (?:method|choice)\W+(\w+)",
        line,
        re.IGNORECASE,
    )
    # "torch.bfloat16 is not supported for quantization method awq. Supported dtypes:
    # [torch.float16]" (vLLM's ModelConfig): the model dtype the method's kernels take
    dtypes = re.search(
        r"torch\.(\w+) is not supported for quantization method (\w+)\. Supported dtypes: "
        r"\[torch\.(\w+)",
        line,
    )
    if dtypes:
        return (
            f"quantization method {dtypes.group(2)} has no kernels for the model dtype "
            f"{dtypes.group(1)}",
            _unique(
                [
                    Fix("flag", f"--dtype {dtypes.group(3)}", note="a dtype the method takes"),
                    *fixes,
                ]
            ),
        )
    if unknown:
        fixes.append(
            Fix(
                "flag",
                "--quantization <a method the message lists>",
                note=f"{unknown.group(1)} is not a method of this release",
            )
        )
    fixes.append(
        Fix(
            "advice",
            "check the checkpoint's quantization_config (or "
            "hf_quant_config.json) against the fields the message names",
        )
    )
    return (
        "the quantization config the checkpoint declares is not one this engine's "
        "quantization method reads",
        _unique(fixes),
    )


def flags_named(line: str) -> list[Fix]:
    """The flags a refusal names to change, else advice to change the setting it names."""
    named = re.findall(r"--[a-z0-9][a-z0-9-]+", line)
    if named:
        return [
            Fix(
                "advice",
                f"change {' / '.join(dict.fromkeys(named))}",
                note="the engine refuses this combination of flags",
            )
        ]
    return [Fix("advice", "change the setting the message names")]


def explain_backend(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    """A forced attention or MoE kernel backend: the one the message names, else drop it."""
    if re.search(r"sparse", m.line, re.IGNORECASE):
        return explain_gap(m, ctx)
    fixes = own_remedy(m.line, m.template)
    named = bool(fixes)  # the message names its own way out
    kind = (
        "MoE"
        if re.search(r"moe|expert|a2a|all2all|deepep|dispatch|combine", m.line, re.IGNORECASE)
        else "attention"
    )
    flag = {
        "MoE": "--moe-backend" if _engine(m, ctx) == "vllm" else "--moe-runner-backend",
        "attention": "--attention-backend",
    }[kind]
    if re.search(r"\bNo\b[\w ]*backend[\w ]*(?:supports|found|available)", m.line, re.I):
        return (
            f"no {kind} kernel of this release runs this model's quantization, activation or "
            f"layout on this GPU: a kernel gap (if {flag} was given, the engine's own choice "
            "may still run)",
            [
                *fixes,
                Fix(
                    "advice",
                    f"drop {flag} if it was given; else another engine release or GPU, "
                    "or a checkpoint in another quantization",
                ),
            ],
        )
    a2a = re.search(r"a2a backend '?(\w+)", m.line)
    if a2a and a2a.group(1) != "none" and _engine(m, ctx) == "sglang":
        # SGLang's MoeRunner (moe_runner/runner.py): a runner with no core of its own runs only
        # through a fused func registered for the all-to-all backend; "none" is the default.
        fixes.append(
            Fix(
                "flag",
                "--moe-a2a-backend none",
                note=f"the runner has no fused kernel for the {a2a.group(1)} all-to-all",
            )
        )
    if kind == "MoE" and _engine(m, ctx) == "vllm" and "flashinfer" in m.line.lower():
        # vLLM 0.10 to 0.2x pick FlashInfer's MoE kernels by environment variable, opt-in
        # (envs.py: VLLM_USE_FLASHINFER_MOE_FP8/FP4/FP16, VLLM_FLASHINFER_MOE_BACKEND
        # throughput|latency), not by a flag: a log with no --moe-backend came from them.
        fixes.append(
            Fix(
                "env",
                "unset VLLM_USE_FLASHINFER_MOE_FP8 VLLM_USE_FLASHINFER_MOE_FP4 "
                "VLLM_USE_FLASHINFER_MOE_FP16",
                note="vLLM's own MoE kernels instead; or keep FlashInfer's and set "
                "VLLM_FLASHINFER_MOE_BACKEND to the other of throughput and latency",
            )
        )
    if not any(f.text.startswith((flag, "VLLM_ATTENTION_BACKEND")) for f in fixes):
        # no backend named by the message: leave the choice to the engine, its release's way
        fixes += (
            unforce(ctx.version)
            if kind == "attention" and _engine(m, ctx) == "vllm"
            else [
                Fix("advice", f"drop {flag} if it was given", note="let the engine choose a kernel")
            ]
        )
    lacks = re.search(r"(\w*Attention\w*) does not support ([\w\s-]+?)(?: yet)?\.?$", m.line)
    if kind == "attention" and lacks and m.template.engine == "vllm":
        # A backend's own refusal of a model feature. Where no flag or VLLM_ATTENTION_BACKEND
        # forced it, the engine chose it as the one backend left for this GPU and model.
        fixes.append(
            Fix(
                "advice",
                f"else no config fix: no other backend of this release runs {lacks.group(2)} "
                "for this model on this GPU (a GPU or an engine release whose backends do)",
            )
        )
        return (
            f"the {lacks.group(1)} attention backend lacks {lacks.group(2)}, which the model "
            "uses: forced by a flag or VLLM_ATTENTION_BACKEND, or the engine's only choice here",
            _unique(
                [
                    Fix("env", "unset VLLM_ATTENTION_BACKEND", note="if it was set"),
                    *(f for f in fixes if not f.text.startswith("unset VLLM_ATTENTION_BACKEND")),
                ]
            ),
        )
    in_backend = m.template.engine == "vllm" and "attention/backends/" in m.template.file
    if kind == "attention" and in_backend and not named:
        # The backend's own file refused: with no flag forcing it, the engine chose it, and
        # another backend of the release is the way out (forced by name).
        fixes += another_backend(m.template.file, _within(m, ctx))
    return (f"the {kind} kernel backend chosen cannot run this model or GPU", _unique(fixes))


def _within(m: Matched, ctx: LogContext) -> tuple[str, ...]:
    """The releases ``m``'s template is read in, or the one of them the log's version is
    (the newest read at or below it)."""
    answering = at_or_below(m.template.releases, ctx.version) if ctx.version else None
    return (answering,) if answering else m.template.releases


def explain_config_field(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    """A config.json value transformers' config class refuses: set it, or, where only the
    strictly validating releases raise the message, pin transformers below them."""
    fields = [
        name
        for name in dict.fromkeys(
            [*re.findall(r"`(\w+)`", m.line)]
            # the config's own attributes the message interpolates ({self.hidden_size})
            + [n.removeprefix("self.") for n, _ in m.values if re.fullmatch(r"self\.\w+", n)]
            # "vision_feature_select_strategy should be one of 'default', 'full'"
            + re.findall(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+) (?:should|must) be\b", m.line)
            # "Qwen4Exp requires hc_count > 1"
            + re.findall(r"\brequires?\s+`?([a-z][a-z0-9]*(?:_[a-z0-9]+)+)`?\s*[<>=]", m.line)
        )
        if not re.match(r"(?:get|set|is|has|use|compute|apply|load|save|from|to)_", name)
    ]
    fixes = own_remedy(m.line, m.template)
    if fields:
        fixes.append(
            Fix(
                "transform",
                f"patcher set {ctx.checkpoint} config.json /{fields[0]} VALUE",
                note="a value the message accepts"
                + (f" (it names {', '.join(fields)})" if len(fields) > 1 else ""),
            )
        )
    strict = raised_strictly(m.template)
    if strict or (not m.template.releases and m.template.engine == "transformers"):
        fixes.append(before_strict())
    return (
        "transformers' config class refuses a value of config.json"
        + (
            " (only the releases that validate each config strictly raise this)"
            if strict
            else " (every transformers release read that has this model's check raises it: "
            "the value, not the release)"
        ),
        fixes or [Fix("advice", "a value of config.json the message accepts")],
    )


def explain_config_name_taken(m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
    """``AutoConfig.register`` refuses a model type this transformers already maps
    (configuration_auto.py): the engine's own config class for it was written for a
    transformers without it. A transformers before the first read release that maps it."""
    taken = re.search(r"'(\w+)' is already used", m.line)
    name = taken.group(1) if taken else ""
    span = model_types().get(name)
    fixes = [
        Fix(
            "advice",
            "the transformers the engine release pins, or an engine release that no longer "
            "registers its own config for this model type",
        )
    ]
    if span is not None and span[0] != next(iter(releases("transformers"))):
        fixes.insert(
            0,
            Fix(
                "dependency",
                f"pip install 'transformers<{span[0]}'",
                note=f"transformers {span[0]} and later map {name} (read from their source)",
            ),
        )
    return (
        f"the engine registers its own config for model type {name or '(named)'}, which this "
        "transformers already maps: the two releases do not go together; no config edit helps",
        fixes,
    )


def explain_chat_template(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    """A missing or unfit chat template: set one in the checkpoint or by flag. A
    ``--chat-template`` that looks like a path no file is at (vLLM's chat_utils: "appears
    path-like, but doesn't exist") is that path to fix: the examples/ templates a recipe names
    are in vLLM's repository, not in its wheel (read: none of them is in a wheel)."""
    missing = re.search(
        r"\(([^)]*\.jinja)\) appears path-like, but doesn't exist"
        # SGLang's template manager: neither one of its registered names nor a file
        r"|Chat template (\S+) is not a built-in template name or a valid chat template file",
        m.line,
    )
    if missing is not None:
        name = missing.group(1) or missing.group(2)
        return (
            f"--chat-template names {name}, and no file is at that path",
            [
                Fix(
                    "flag",
                    f"--chat-template /path/to/{PurePosixPath(name).name}",
                    note=(
                        "the template file's real path; vLLM's examples/ templates come from "
                        "its repository (the release's tag), not with the wheel"
                        if missing.group(1)
                        else "the template file's path as the server sees it (a relative one "
                        "from the directory the server starts in), or a template name SGLang "
                        "registers"
                    ),
                ),
            ],
        )
    return (
        "the chat template is missing or does not fit the request",
        [
            *own_remedy(m.line, m.template),
            ctx.apply("set-chat-template", " --set template=T.jinja"),
            Fix("flag", "--chat-template T.jinja"),
        ],
    )


def explain_remote_code(_m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
    """A config that needs its own code: --trust-remote-code. Not drop-auto-map:
    transformers' ``resolve_trust_remote_code`` refuses only where no class of its own knows
    the model type (``has_remote_code and not has_local_code``), so without auto_map the same
    config is refused as an unknown model type."""
    return (
        "the checkpoint's config needs its own code (auto_map): no class of this transformers "
        "knows its model type",
        [Fix("flag", "--trust-remote-code", note="after reading the repository's code")],
    )


def explain_architecture(m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
    """No model class for the architecture: a release that lists it. transformers' GGUF
    loader's refusal of a .gguf file's architecture: the transformers releases that map it."""
    gguf = GGUF_OLD.match(m.line.strip())
    loader = m.template.file.endswith("modeling_gguf_pytorch_utils.py")
    if gguf is not None or (loader and "not supported" in m.template.text):
        named = gguf.group(1) if gguf else (m.value("architecture") or "")
        if named:
            return gguf_gap(named)
    return (
        "this engine release has no model class for the checkpoint's architecture or model type",
        [
            *own_remedy(m.line, m.template),
            Fix(
                "advice",
                "an engine release that lists the architecture (patcher check "
                "--engine vllm==X names the releases read)",
            ),
        ],
    )


CLASS_NOT_LOADED = (
    "the engine lists this architecture, but its model class failed to import or be "
    "inspected in the engine's own environment (an import error in its log names why: a "
    "package, a compiled extension, the platform); no checkpoint edit helps"
)
CLASS_NOT_LOADED_FIX = Fix(
    "advice",
    "fix the import error the log names (reinstall the engine or the package it names); "
    "no checkpoint edit",
)


def explain_class_load(_m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
    """A listed architecture whose model class did not import: the environment, not the
    checkpoint."""
    return CLASS_NOT_LOADED, [CLASS_NOT_LOADED_FIX]
