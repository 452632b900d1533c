"""The answers of doctor's families (``families.py``): each reads the matched message and
gives the cause and the fixes, with values computed from the sizes, names and flags the
message carries, and the remedy the message names itself (:func:`own_remedy`).
"""

from __future__ import annotations

import re

from patcher.advice.catalogue import Matched
from patcher.advice.log_rules import Fix, LogContext


def _engine(m: Matched, ctx: LogContext) -> str:
    """The engine whose flags the answer names: the log's, else the template's."""
    return ctx.engine or m.template.engine


def _flag_word(engine: str, vllm: str, sglang: str) -> str:
    return sglang if engine == "sglang" else vllm


_WORDS_AFTER = {"to", "instead", "or", "and", "flag", "option", "for", "if", "when", "is", "the"}
_USE = re.compile(
    r"\b(?:use|pass|set|try|add|specify|using|with|enable)\s+`?(--[a-z0-9][a-z0-9-]*)`?"
    r"(?:[ =]`?([\w./:+-]+))?",
    re.IGNORECASE,
)
_DROP = re.compile(
    r"\b(?:drop|remove|unset|leave|without|do not (?:specify|pass|use|set)|don't (?:use|set))"
    r"\s+`?(--[a-z0-9][a-z0-9-]*)",
    re.IGNORECASE,
)
_ENV_SET = re.compile(r"\b([A-Z][A-Z0-9]*_[A-Z0-9_]{2,})=([\w.-]+)")
_ENV = re.compile(r"\b((?:VLLM|SGLANG|TRTLLM|NCCL|CUDA|HF|TORCH|FLASHINFER)_[A-Z0-9_]{3,})\b")
_PIP = re.compile(r"pip install\s+(?:-U\s+|--upgrade\s+)?([\"']?[\w.\[\]-]+(?:[<>=!~]=?[\w.]+)?)")
_REQUIRES = re.compile(
    r"\b(?:requires?|upgrade(?: to)?|install)\s+`?([A-Za-z][\w.-]*)`?\s*(?:version\s*)?"
    r"([<>=]=?\s*\d+(?:\.\d+)*)"
)


def own_remedy(line: str) -> list[Fix]:
    """The way out the engine's message names itself: a flag to use or drop, an environment
    variable to set, a package to install."""
    fixes: list[Fix] = []
    for flag, value in _USE.findall(line):
        if value and value.lower() not in _WORDS_AFTER and not value.startswith("-"):
            fixes.append(Fix("flag", f"{flag} {value}".rstrip(".,;:")))
        else:
            fixes.append(Fix("flag", flag, note="the engine's message names this flag"))
    for flag in _DROP.findall(line):
        fixes.append(Fix("flag", f"drop {flag}", note="the engine's message says to leave it out"))
    for name, value in _ENV_SET.findall(line):
        fixes.append(Fix("env", f"{name}={value.rstrip('.')}"))
    for package in _PIP.findall(line):
        fixes.append(Fix("dependency", f"pip install {package.strip(chr(34) + chr(39))}"))
    for package, bound in _REQUIRES.findall(line):
        if not package.lower().startswith(("sm", "cuda", "compute")):
            fixes.append(Fix("dependency", f"pip install '{package}{bound.replace(' ', '')}'"))
    unique: dict[str, Fix] = {}
    for fix in fixes:
        unique.setdefault(fix.text, fix)
    return list(unique.values())


def _numbers(line: str) -> list[int]:
    return [int(n) for n in re.findall(r"(?<![\w.])(\d+)(?![\w.])", line)]


def _divisor_below(total: int, size: int) -> int | None:
    """The largest power of two below ``size`` that divides ``total`` (a TP size that works)."""
    candidate = 1
    while candidate * 2 < size and total % (candidate * 2) == 0:
        candidate *= 2
    return candidate if candidate < size else None


def _parallel(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    engine = _engine(m, ctx)
    line = m.line
    total = m.number("head", "expert", "num_", "hidden", "intermediate", "vocab", "size_per")
    size = m.number("parallel", "tp", "ep_", "world", "rank", "dcp", "block")
    if total is None or size is None:
        numbers = _numbers(line)
        if len(numbers) >= 2:
            total, size = max(numbers), min(numbers)
    fixes: list[Fix] = []
    expert = re.search(r"expert", line, re.IGNORECASE) is not None
    flag = _flag_word(engine, "--tensor-parallel-size", "--tp-size")
    if total and size and size > 1 and total % size:
        smaller = _divisor_below(total, size)
        if expert and re.search(r"\bep\b|expert.?parallel", line, re.IGNORECASE):
            ep = _flag_word(engine, "--enable-expert-parallel", "--ep-size")
            fixes.append(
                Fix("flag", f"drop {ep}", note=f"or an expert-parallel size dividing {total}")
            )
        elif smaller is not None:
            fixes.append(
                Fix(
                    "flag",
                    f"{flag} {smaller}",
                    note=f"{smaller} divides {total}; more GPUs "
                    "go to --pipeline-parallel-size or data parallel",
                )
            )
    if re.search(r"block_[nk]|block size|group.?size", line, re.IGNORECASE):
        fixes.append(
            Fix(
                "flag",
                _flag_word(engine, "--enable-expert-parallel", "--ep-size 8"),
                note=f"or a smaller {flag}: each GPU's slice must stay a multiple of the block",
            )
        )
    return (
        "a parallel size does not divide the model's dimension it splits (heads, experts, or "
        "a quantization block's slice): choose sizes that divide",
        [*own_remedy(line), *fixes],
    )


def _round_down(length: int) -> int:
    return max(1024, length // 1024 * 1024)


def _memory(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    engine = _engine(m, ctx)
    fixes = own_remedy(m.line)
    if engine == "sglang":
        fixes += [
            Fix("flag", "--mem-fraction-static 0.9", note="if the GPU has no other users"),
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
    wanted = m.number("max_model_len", "max_seq_len", "seq_len")
    fits = m.number("estimat", "max_tokens", "num_tokens", "max_num_tokens")
    if wanted and fits and fits < wanted:
        fixes.append(Fix("flag", f"--max-model-len {_round_down(fits)}"))
    fixes += [
        Fix("flag", "--max-model-len 32768", note="a shorter context needs less KV memory"),
        Fix("flag", "--gpu-memory-utilization 0.95", note="if the GPU has no other users"),
        Fix("advice", "more GPUs: --tensor-parallel-size N divides the weights"),
    ]
    return (
        "the weights, the activations and the KV cache do not fit in the memory the engine may use",
        _unique(fixes),
    )


def _unique(fixes: list[Fix]) -> list[Fix]:
    """``fixes`` in order, each text once and each flag once (the first value wins)."""
    seen: set[str] = set()
    kept: list[Fix] = []
    for fix in fixes:
        key = fix.text.split()[0] if fix.kind == "flag" and fix.text.startswith("--") else fix.text
        if key not in seen:
            seen.add(key)
            kept.append(fix)
    return kept


def _context(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    engine = _engine(m, ctx)
    numbers = _numbers(m.line)
    fixes = own_remedy(m.line)
    flag = _flag_word(engine, "--max-model-len", "--context-length")
    derived = m.number("derived", "max_position", "model_max", "max_len", "limit")
    if derived is None and len(numbers) >= 2:
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
    return (
        "the context asked for is longer than the model's config allows (max_position_"
        "embeddings, or the RoPE scaling it declares)",
        _unique(fixes) or [Fix("flag", f"{flag} N", note="N at most the model's limit")],
    )


def _rope(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    fixes = own_remedy(m.line)
    line = m.line
    if "rope_theta" in line:
        fixes.append(ctx.apply("add-rope-theta-to-rope-parameters"))
    missing = re.search(r"(?:missing|required)[^:]*:\s*(\{.*?\}|\[.*?\]|[\w', ]+)", line, re.I)
    if missing:
        fixes.append(
            Fix(
                "advice",
                f"add the missing keys {missing.group(1)} to rope_scaling "
                "(rope_parameters in transformers 5) in config.json",
            )
        )
    fixes.append(
        Fix(
            "dependency",
            "pip install 'transformers>=4.45'",
            note="a transformers that reads the model's RoPE layout",
        )
    )
    return (
        "the RoPE scaling block of config.json does not have the layout this "
        "transformers/engine reads",
        _unique(fixes),
    )


def _kv_dtype(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    line = m.line
    if re.search(r"sparse|fp8_ds_mla", line, re.IGNORECASE) and not re.search(
        r"requires? .*fp8|must be fp8", line, re.IGNORECASE
    ):
        return _gap(m, ctx)
    fixes = own_remedy(line)
    if re.search(r"(requires?|needs?|must be|only supports?)\s+(an?\s+)?`?fp8", line, re.I):
        fixes.append(Fix("flag", "--kv-cache-dtype fp8"))
        return (
            "this model or backend needs an FP8 KV cache, and the one configured is not",
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


def _gap(m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
    fixes = [f for f in own_remedy(m.line) if f.kind != "dependency"]
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


def _quantization(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    line = m.line
    fixes = own_remedy(line)
    unknown = re.search(
        r"(?:Unknown|Invalid|Unsupported) quantization (?:method|choice)\W+(\w+)",
        line,
        re.IGNORECASE,
    )
    if unknown:
        fixes.append(
            Fix(
                "flag",
                "--quantization <a method the message lists>",
                note=f"{unknown.group(1)} is not a method of this release",
            )
        )
    if re.search(r"divisible", line, re.IGNORECASE):
        return _parallel(m, ctx)
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


def _named_flags(m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
    fixes = own_remedy(m.line)
    named = re.findall(r"--[a-z0-9][a-z0-9-]+", m.line)
    if not fixes and named:
        fixes = [
            Fix(
                "flag",
                f"change {' / '.join(dict.fromkeys(named))}",
                note="the engine refuses this combination of flags",
            )
        ]
    return (
        "the engine refuses a flag or a combination of flags at start-up",
        fixes or [Fix("advice", "change the setting the message names")],
    )


def _backend(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    if re.search(r"sparse", m.line, re.IGNORECASE):
        return _gap(m, ctx)
    fixes = own_remedy(m.line)
    kind = "MoE" if re.search(r"moe|expert|a2a|all2all", m.line, re.IGNORECASE) else "attention"
    flag = {
        "MoE": "--moe-backend" if _engine(m, ctx) == "vllm" else "--moe-runner-backend",
        "attention": "--attention-backend",
    }[kind]
    if not any(f.text.startswith(flag) for f in fixes):
        fixes.append(Fix("flag", f"drop {flag}", note="let the engine choose a kernel that runs"))
    return (f"the {kind} kernel backend chosen cannot run this model or GPU", _unique(fixes))


def _chat_template(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        "the chat template is missing or does not fit the request",
        [
            *own_remedy(m.line),
            ctx.apply("set-chat-template", " --set template=T.jinja"),
            Fix("flag", "--chat-template T.jinja"),
        ],
    )


def _tokenizer(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        "the tokenizer files do not load as this transformers reads them",
        [
            *own_remedy(m.line),
            ctx.apply("set-tokenizer-class", " --set class=PreTrainedTokenizerFast"),
            Fix("dependency", "the transformers the checkpoint was saved with"),
        ],
    )


def _remote_code(_m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        "the checkpoint's config needs its own code (auto_map)",
        [Fix("flag", "--trust-remote-code"), ctx.apply("drop-auto-map")],
    )


def _architecture(m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        "this engine release has no model class for the checkpoint's architecture or model type",
        [
            *own_remedy(m.line),
            Fix(
                "advice",
                "an engine release that lists the architecture (patcher check "
                "--engine vllm==X names the releases read)",
            ),
        ],
    )


def _dependency(m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
    fixes = own_remedy(m.line)
    missing = re.search(r"No module named '?([\w.]+)", m.line)
    if missing:
        fixes.append(Fix("dependency", f"pip install {missing.group(1).split('.')[0]}"))
    return (
        "a package the engine needs is missing or too old in its environment",
        fixes or [Fix("dependency", "install the package the message names")],
    )


def _environment(m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
    fixes = own_remedy(m.line)
    if not any(f.kind == "env" for f in fixes):
        fixes += [
            Fix("env", f"unset {name}", note="the message names it")
            for name in dict.fromkeys(_ENV.findall(m.line))
        ]
    return (
        "an environment variable of the engine decides this start-up path",
        fixes or [Fix("advice", "the environment variable the message names")],
    )


def _files(_m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        "a file the engine needs is missing or unreadable in the checkpoint (weights, "
        "index, config): no config edit helps",
        [
            Fix(
                "advice",
                "check the model path and download the missing files "
                "(huggingface-cli download REPO)",
            )
        ],
    )


def _shape(_m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        "the weights' shapes or the config's sizes do not match what the engine's model "
        "class builds: a checkpoint saved for another configuration, or an engine gap; no "
        "transform fixes it",
        [
            Fix(
                "advice",
                "compare the config's sizes (hidden, intermediate, layers) with the "
                "weights; or another engine release",
            )
        ],
    )


def _internal(_m: Matched, _ctx: LogContext) -> tuple[str, list[Fix]]:
    return (
        "an engine invariant failed, or the path is not implemented for this model: an "
        "engine bug or gap; no config edit helps",
        [Fix("advice", "report it to the engine with the full log; try another release")],
    )
