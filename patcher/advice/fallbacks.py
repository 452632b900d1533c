"""doctor's readings of an error line outside the catalogue and the rules: a release not read,
a kernel library's message, an error with no words of its own. Each is read by what leaves
one cause (its words, the engine file it arose in, the setting a traceback shows unset);
anything else stays "not recognised"."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from patcher.advice import catalogue
from patcher.advice.answers import LENGTH_WORDS
from patcher.advice.attention_rules import bare_assert
from patcher.advice.catalogue import Engine, Matched, Template, has_feature
from patcher.advice.cuda_graph import CAPTURE
from patcher.advice.diagnosis import Diagnosis
from patcher.advice.families import FAMILIES
from patcher.advice.kernels import builds, kernel_gap
from patcher.advice.log_lines import RAISED, engine_file
from patcher.advice.log_rules import Fix, LogContext

_FAMILY = {f.name: f for f in FAMILIES}

# Outside the catalogue (a release not read, a kernel library's message), an error line is
# still read by its words where they leave one cause: a KV dtype refused, a size that does not
# divide. Anything else stays "not recognised".
_WORDS = (
    # a kernel refused inside a CUDA graph capture (CUDA's and PyTorch's words)
    ("cuda-graph", re.compile(rf"(?=.*(?:{CAPTURE.pattern}))", re.IGNORECASE)),
    (
        "kv-cache-dtype",
        re.compile(
            r"(?=.*\bkv\b|.*kv[_-]?cache|.*kv_data_type)(?=.*(?:fp8|float8|uint8|e4m3|e5m2))"
            r"(?=.*(?:not (?:yet )?supported|unsupported|only supports?))",
            re.IGNORECASE,
        ),
    ),
    (
        # An attention kernel library's own check of the GPU (FlashAttention 3/4's CuTe
        # kernels, FlashMLA, FlashInfer's and CUTLASS's MLA): it runs only on the GPUs it names,
        # so another attention backend is the way out (the message is the kernel's, not the
        # engine's, and no release read raises it).
        "attention-backend",
        re.compile(
            r"(?=.*\b(?:FA[234]|flash[_ -]?attn|flash[_ -]?attention\d?|FlashMLA|flashinfer|"
            r"cutlass[_ ]?mla|trtllm[_ ]mla)\b)"
            r"(?=.*\b(?:only supported on|requires|not supported on|supports only|only supports)"
            r"\s+(?:SM\s?\d|sm_?\d|compute capability|Hopper|Blackwell|Ampere))",
            re.IGNORECASE,
        ),
    ),
    (
        # the model's length against what the KV cache holds, in words a report retyped or a
        # wrapper reworded (vLLM's own "max seq len (N) is larger than the maximum number of
        # tokens that can be stored in KV cache (M)" is the catalogue's)
        "kv-cache-memory",
        re.compile(
            rf"(?=.*{LENGTH_WORDS})(?=.*\bKV[ _]cache\b)"
            r"(?=.*\b(?:larger than|exceeds?)\b)"
            # or its sizes alone: "1.75 GiB KV cache is needed, available 0.13 GiB"
            r"|(?=.*\bGiB KV cache is needed\b)(?=.*\bavailable\b)",
            re.IGNORECASE,
        ),
    ),
    (
        # The CUDA runtime's: the build has no kernels for this GPU's compute capability (an
        # older build on a newer GPU, or a dropped architecture; torch's own warning of it is
        # the rule torch-build, machine.py).
        "hardware",
        re.compile(
            r"(?=.*no kernel image is available for execution on the device"
            # PyTorch's compiler (Inductor) refusing a GPU its Triton cannot target
            r"|.*too old to be supported by the triton GPU compiler)"
        ),
    ),
    (
        # a MoE method without the runner its backend needs (SGLang's FP8 MoE method under
        # --moe-runner-backend flashinfer_cutlass: 'Fp8MoEMethod' object has no attribute
        # 'runner'): the MoE backend forced is one the method does not build
        "moe-backend",
        re.compile(r"(?=.*\w*MoE\w*Method\b)(?=.*has no attribute '\w*(?:runner|backend)\w*')"),
    ),
    (
        "parallel-sizes",
        re.compile(
            r"(?=.*(?:divisible|divide))(?=.*(?:tensor|tp|parallel|expert|ep_size|world))",
            re.IGNORECASE,
        ),
    ),
)


# An error with no words an engine's source or a rule reads (a TypeError, a KeyError) is still
# the family of the engine file it arose in, where that file has one concern: the traceback's
# last frame in the engine's package.
_BACKEND_FILE = re.compile(r"/vllm/\S*attention/backends/\w+\.py\b")
_FRAMES = (
    ("attention-backend", _BACKEND_FILE),
    ("chat-template", re.compile(r"/(?:sglang|vllm)/\S*(?:template|chat_utils)\w*\.py\b")),
    ("tokenizer", re.compile(r"/(?:sglang|vllm)/\S*tokeni[sz]er\w*\.py\b")),
    (
        "speculative-draft",
        re.compile(r"/(?:sglang/srt/speculative|vllm/(?:v1/)?spec_decode)/\w+\.py\b"),
    ),
)


def by_words(line: str, ctx: LogContext) -> Diagnosis | None:
    raised = RAISED.match(line)
    message = raised.group("message") if raised else line.strip()
    for name, words in _WORDS:
        if words.match(message):
            family = _FAMILY[name]
            template = Template(
                "sglang" if ctx.engine == "sglang" else "vllm",
                raised.group("kind") if raised else "?",
                (message,),
                "",
                (),
            )
            cause, fixes = family.explained(Matched(template, message, ()), ctx)
            if name == "hardware":
                fixes = _kernels(ctx, fixes)
            return Diagnosis(
                "-",
                name,
                line.strip(),
                cause + " (read from its words: no read release has this message)",
                tuple(fixes),
                None,
                family,
            )
    for name, area in _FRAMES:
        where = area.search(ctx.frame or "") if raised else None
        if where is not None:
            family = _FAMILY[name]
            template = Template(
                "sglang" if "sglang" in where.group(0) else "vllm", "?", (message,), "", ()
            )
            cause, fixes = family.explained(Matched(template, message, ()), ctx)
            return Diagnosis(
                "-",
                name,
                line.strip(),
                f"{cause} (read from the engine file it arose in, {Path(where.group(0)).name})",
                tuple(fixes),
                None,
                family,
            )
    return None


def _kernels(ctx: LogContext, fixes: list[Fix]) -> list[Fix]:
    """Where a GPU has no kernel image: the vLLM releases whose own kernels are built for the
    GPU the log names, or, where it names none, what each release's build covers."""
    if ctx.engine == "sglang" or not has_feature("vllm", "cuda_arch"):
        return fixes  # SGLang's kernels (sgl-kernel) are not read
    gap = kernel_gap(ctx.gpu, ctx.version) if ctx.gpu is not None else None
    if gap is not None:
        return gap
    builds_read = Fix(
        "advice",
        "the GPU's compute capability (nvidia-smi --query-gpu=compute_cap --format=csv) "
        "against the vLLM builds read: " + builds(),
        note="a release whose build covers it",
    )
    return [*fixes, builds_read] if ctx.gpu is None else fixes


_DIVIDES = re.compile(r"(\d+) is not divisible by (\d+)")


def _ensures(engine: Engine) -> bool:
    """Whether a read release of ``engine`` has ``ensure_divisibility``'s message."""
    return any(
        t.file.endswith("distributed/utils.py")
        and t.text == "{numerator} is not divisible by {denominator}"
        for t in catalogue.templates(engine)
    )


def by_division(line: str, ctx: LogContext) -> Diagnosis | None:
    """``AssertionError: 25 is not divisible by 4`` in an engine's log: the engines'
    ``ensure_divisibility`` (vllm/distributed/utils.py, sglang/srt/distributed/utils.py, read),
    which every layer's split by the parallel size goes through. Its words are too few for the
    catalogue to tell apart, so it is read only where a read release of the log's engine has
    the message (of either engine's, where the log shows neither)."""
    raised = RAISED.match(line)
    numbers = _DIVIDES.fullmatch(raised["message"].strip()) if raised else None
    if raised is None or raised["kind"] != "AssertionError" or numbers is None:
        return None
    frame = ctx.frame or ""
    whose = ctx.engine or ("sglang" if "/sglang/" in frame else None)
    whose = whose or ("vllm" if "/vllm/" in frame else None)  # a traceback's frame
    engines: tuple[Engine, ...] = (
        ("sglang",) if whose == "sglang" else ("vllm",) if whose == "vllm" else ("vllm", "sglang")
    )
    if whose not in (None, "vllm", "sglang") or not any(_ensures(e) for e in engines):
        return None
    return divisibility(
        (numbers.group(1), numbers.group(2)), line.strip(), replace(ctx, engine=whose)
    )


def _vision_encoder(ctx: LogContext) -> Fix | None:
    """vLLM's ``--mm-encoder-tp-mode data`` (read: the flag per release, and the architectures
    whose class supports it, ``encoder_tp_data``): a vision encoder whose heads the
    tensor-parallel size does not divide is replicated instead of split. None where the log's
    engine is SGLang's, its release lacks the flag, or its architecture does not support it."""
    if ctx.engine == "sglang" or not has_feature("vllm", "encoder_tp_data"):
        return None
    having = catalogue.feature_releases("vllm", "flags", "--mm-encoder-tp-mode")
    if not having or (
        ctx.version is not None and ctx.version[:3] < catalogue.version_key(having[0])[:3]
    ):
        return None
    if ctx.architecture is not None:
        if not catalogue.feature_releases("vllm", "encoder_tp_data", ctx.architecture):
            return None
        return Fix(
            "flag",
            "--mm-encoder-tp-mode data",
            note=f"{ctx.architecture}'s vision encoder replicated on each GPU, not split: where "
            "the split dimension is its heads (vLLM " + having[0] + " on)",
        )
    classes = catalogue.features_of("vllm", "encoder_tp_data")
    return Fix(
        "flag",
        "--mm-encoder-tp-mode data",
        note=f"where the dimension is a vision encoder's heads: the encoder replicated on each "
        f"GPU, not split (vLLM {having[0]} on, for the {len(classes)} model classes read that "
        "support it; others fall back to splitting it)",
    )


def divisibility(asserted: tuple[str, str], line: str, ctx: LogContext) -> Diagnosis:
    """A message-less assertion that ``a % b == 0``: a size that does not divide another."""
    family = _FAMILY["parallel-sizes"]
    total, size = asserted
    flag = "--tp-size" if ctx.engine == "sglang" else "--tensor-parallel-size"
    either = " (SGLang: --tp-size)" if ctx.engine is None else ""
    if total.isdigit() and size.isdigit() and int(size) > 1:
        # the numbers themselves: the parallel size must divide the split dimension; GPUs
        # come in powers of two, and so do the heads and KV heads of nearly every model
        fits = [d for d in range(int(size) - 1, 0, -1) if int(total) % d == 0]
        best = next((d for d in fits if d & (d - 1) == 0), fits[0])
        others = [d for d in fits if d != best]
        fixes = [
            Fix(
                "flag",
                f"{flag} {best}",
                note=f"the largest power of two below {size} dividing {total}"
                + (f" (also {', '.join(map(str, others))})" if others else "")
                + f"{either}; the model's other sizes must divide too: patcher check CKPT "
                "--engine ENGINE --tp N tells",
            )
        ]
        above = next((2**k for k in range(1, 11) if 2**k > int(size)), 0)
        if above and above <= int(total) and int(total) % above == 0:
            # fewer GPUs may not hold the weights: the next size up that divides
            fixes.append(
                Fix(
                    "flag",
                    f"{flag} {above}",
                    note=f"or more GPUs: the smallest power of two above {size} dividing {total}",
                )
            )
        vision = _vision_encoder(ctx)
        return Diagnosis(
            "-",
            family.name,
            line,
            f"a dimension of {total} (a layer's heads or width) is split by a parallel size "
            f"of {size}, which does not divide it",
            tuple(fixes + ([vision] if vision else [])),
            None,
            family,
        )
    what = (
        "experts"
        if "expert" in total.lower()
        else "KV heads"
        if "kv" in total.lower()
        else "attention heads"
        if "head" in total.lower()
        else "a dimension the GPUs split"
    )
    return Diagnosis(
        "-",
        family.name,
        f"{line} (assert {total} % {size} == 0)",
        f"the engine asserts that {total} divides by {size}: {what} that the parallel size "
        "does not split evenly",
        (
            Fix(
                "flag",
                f"{flag} N",
                note=f"N dividing the model's {what}{either}; patcher check CKPT --engine "
                "ENGINE --tp N tells before start-up",
            ),
        ),
        None,
        family,
    )


def by_bare_assert(frame: str | None) -> Diagnosis | None:
    """An ``assert`` with no words, read by the engine file it arose in: an attention backend's
    own check (attention_rules.bare_assert)."""
    where = _BACKEND_FILE.search(frame or "")
    if where is None:
        return None
    cause, fixes = bare_assert()
    family = _FAMILY["attention-backend"]
    cause += f" (read from the engine file it arose in, {Path(where.group(0)).name})"
    return Diagnosis("-", family.name, "AssertionError", cause, tuple(fixes), None, family)


# The files that hold the engines' settings: a config class (vLLM's config/<group>.py, whose
# group is a JSON flag ``--<group>-config`` where a release declares it), the engine's
# arguments, SGLang's ServerArgs.
_SETTINGS_FILE = re.compile(
    r"/(?:vllm/config/(?P<group>\w+)\.py|vllm/config\.py|vllm/engine/arg_utils\.py|"
    r"sglang/srt/server_args\.py)\b"
)


def by_unset(line: str, frame: str | None, code: str | None) -> Diagnosis | None:
    """A ``TypeError`` over ``None`` where a settings file's own check reads one setting
    (``self.num_speculative_tokens > 1``): that setting was left unset and this release does
    not default it before its check, so it is to be given."""
    raised = RAISED.match(line)
    if raised is None or raised["kind"] != "TypeError" or "NoneType" not in raised["message"]:
        return None
    where = _SETTINGS_FILE.search(frame or "")
    named = set(re.findall(r"\bself\.(\w+)\b(?!\s*\()", code or ""))
    if where is None or len(named) != 1:
        return None
    engine: Engine = "sglang" if "sglang" in where.group(0) else "vllm"
    (setting,) = named
    group = where["group"]
    flag = "--" + setting.replace("_", "-")
    if group is not None and catalogue.declared(engine, f"--{group}-config"):
        fix = Fix(
            "advice",
            f'--{group}-config with "{setting}" given',
            note=f"the JSON of --{group}-config, with {setting} set to the value the model needs",
        )
    elif catalogue.declared(engine, flag):
        fix = Fix("flag", f"{flag} VALUE", note="the value the model needs")
    else:
        return None
    family = _FAMILY["engine-flags"]
    cause = (
        f"{setting} was left unset, and this release compares it before it defaults it "
        f"(read from the engine's settings file, {Path(where.group(0)).name}): give it"
    )
    return Diagnosis("-", family.name, line.strip(), cause, (fix,), None, family)


# A settings or layer file's read of one rope_scaling key: rope_scaling["type"].
_ROPE_KEY = re.compile(r"""rope_scaling\[\s*["'](\w+)["']\s*\]""")


def _reading_rope_type(engine: Engine, version: tuple[int, ...]) -> str | None:
    """The first release read after ``version`` from which every release read builds its
    RoPE scaling from the ``rope_type`` key (the ``rope_type`` feature,
    tools/read_rope_types.py), when ``version`` is older than it."""
    legacy = catalogue.ROPE_TYPE_KEY_ONLY
    span = catalogue.span_where(engine, "rope_type", lambda name: name != legacy)
    if not catalogue.feature_releases(engine, "rope_type", legacy) or span is None:
        return None
    if span[1] is not None:
        return None
    return span[0] if version < catalogue.version_key(span[0]) else None


def by_rope_key(
    line: str, frame: str | None, code: str | None, ctx: LogContext
) -> Diagnosis | None:
    """A ``KeyError`` where the engine's own code reads one key of config.json's
    ``rope_scaling`` (``rope_scaling["type"]``): the block lacks the key this release reads.
    The legacy ``type`` key, read by a release older than the ``rope_type`` layout, names the
    first release read that takes the newer layout; another key is to be given."""
    raised = RAISED.match(line)
    read = _ROPE_KEY.search(code or "")
    found = engine_file(frame)
    if raised is None or raised["kind"] != "KeyError" or read is None or found is None:
        return None
    key = read.group(1)
    if raised["message"].strip("'\" ") != key:
        return None
    engine, path = found
    family = _FAMILY["rope-config"]
    where = Path(path).name
    if key == "type":
        # no version in the log: a KeyError over the legacy key is itself a release before it
        later = _reading_rope_type(engine, ctx.version or (0,))
        fixes = [
            Fix(
                "advice",
                'in config.json\'s rope_scaling, "type" beside "rope_type", with the same value',
                note="only where this release builds that scaling type; keep rope_type",
            )
        ]
        if later is not None:
            fixes.insert(
                0,
                Fix(
                    "dependency",
                    f"pip install '{engine}>={later}'",
                    note=f"{catalogue.ENGINE_NAMES[engine]} {later} and later read the "
                    "rope_type key, read from each release's wheel",
                ),
            )
        cause = (
            "config.json's rope_scaling names its scaling with rope_type (the newer layout), "
            f"and this release reads only the legacy type key (read from {where})"
        )
        return Diagnosis("-", family.name, line.strip(), cause, tuple(fixes), None, family)
    fix = Fix(
        "transform",
        f"patcher set {ctx.checkpoint} config.json /rope_scaling/{key} VALUE",
        note="the value the model's own card or config gives",
    )
    cause = f"config.json's rope_scaling has no {key}, which this release reads (from {where})"
    return Diagnosis("-", family.name, line.strip(), cause, (fix,), None, family)
