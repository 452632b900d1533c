"""doctor's answers to vLLM's attention selection refusing a configuration (``get_attn_backend``,
v1/attention/selector.py): the ``AttentionSelectorConfig`` and each backend's reasons read,
and which of them a setting of the command line causes, the checkpoint's KV directive, or
the model and the GPU (a kernel gap). ``engine_rules.py`` holds the patterns."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from patcher.advice.catalogue import (
    declared,
    feature_releases,
    features_of,
    version_key,
)
from patcher.advice.catalogue import releases as read_releases
from patcher.advice.log_rules import Fix, LogContext, Rule
from patcher.engines.vllm_kv import mla_dtype_from

# The reasons AttentionBackend.validate_configuration gives (v1/attention/backend.py) that a
# setting of the command line causes, and the setting's answer; the others (head size, MLA,
# sinks, sparse, compute capability, attention type, sliding window) are the model's or the
# GPU's.
_SETTING_REASONS: dict[str, list[Fix]] = {
    "block_size not supported": [
        Fix("advice", "leave out --block-size", note="vLLM then picks a size the backend takes"),
        Fix("flag", "--block-size 16", note="a multiple of 16, which every backend's kernel takes"),
    ],
    "dtype not supported": [
        Fix("flag", "--dtype bfloat16", note="or float16 on a GPU without bfloat16"),
    ],
    "batch invariance not supported": [
        Fix("env", "VLLM_BATCH_INVARIANT=0", note="batch-invariant mode is what no backend runs"),
    ],
    "KV connector not supported": [Fix("advice", "leave out --kv-transfer-config")],
    "DCP not supported": [Fix("advice", "leave out --decode-context-parallel-size")],
    "PCP not supported": [Fix("advice", "leave out --prefill-context-parallel-size")],
}


def _shared_reason(reasons: list[tuple[str, str]]) -> tuple[str, list[Fix]] | None:
    """The one reason of :data:`_SETTING_REASONS` that every backend listed gives, with its
    answer; None when the backends differ, or share none of them."""
    if not reasons:
        return None
    lists = [{r.strip(" '\"") for r in why.split(",")} for _, why in reasons]
    common = set.intersection(*lists) & set(_SETTING_REASONS)
    if len(common) != 1:
        return None
    reason = common.pop()
    return reason, _SETTING_REASONS[reason]


def attention(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    text = m.group(0)
    kv = re.search(r"kv_cache_dtype=([\w.]+)", text)
    kv_dtype = kv.group(1) if kv else "?"
    dense = re.findall(
        r"(?<!_)(?:FLASH_ATTN_MLA|FLASHMLA|FLASHINFER_MLA|TRITON_MLA): \[([^\]]*)\]", text
    )
    if dense and all("sparse not supported" in reasons for reasons in dense):
        return (
            "a sparse-MLA model (DeepSeek-V3.2, GLM-5 style) on a GPU without a sparse MLA "
            "kernel in this vLLM; no config edit helps",
            [Fix("advice", "use a vLLM with a sparse MLA backend for this GPU, or other GPUs")],
        )
    reasons = re.findall(r"\b([A-Z][A-Z0-9_]+): \[([^\]]*)\]", text)
    kv_only = [name for name, why in reasons if why.strip(" '\"") == "kv_cache_dtype not supported"]
    if "use_sparse=True" in text and kv_dtype.startswith("fp8") and kv_only:
        # A sparse backend refuses this KV dtype alone: another dtype runs on this GPU.
        fixes = [Fix("flag", "--kv-cache-dtype bfloat16", note="vLLM 0.15 and later")]
        fixes += [ctx.apply("strip-fp8-kv-cache")] if kv_dtype != "fp8_ds_mla" else []
        return (
            f"a sparse-MLA model whose sparse backend ({', '.join(kv_only)}) refuses only the "
            f"KV dtype {kv_dtype}: a KV cache in the model's dtype runs",
            fixes,
        )
    if "use_sparse=True" in text:
        return (
            "a sparse-MLA model on a GPU where no sparse MLA backend of this vLLM runs "
            f"(KV {kv_dtype}): a missing kernel, not a checkpoint directive; no config edit helps",
            [Fix("advice", "use a vLLM with a sparse MLA backend for this GPU, or other GPUs")],
        )
    if kv_dtype.startswith("fp8") and reasons and not kv_only:
        return (
            "no attention backend of this vLLM runs this configuration on this GPU, whatever "
            "the KV dtype (each lists another reason than kv_cache_dtype): a kernel or GPU gap, "
            "not the checkpoint's KV directive; no config edit helps",
            [Fix("advice", "check the GPU and vLLM version against the listed reasons")],
        )
    shared = _shared_reason(reasons)
    if shared is not None and not kv_only:
        reason, fixes = shared
        return (
            f"every attention backend of this vLLM refuses the configuration for one reason, "
            f"{reason}: a setting of the command line, not the checkpoint",
            fixes,
        )
    if not kv_dtype.startswith("fp8"):
        return (
            f"no attention backend accepts this configuration (KV {kv_dtype}); see the reasons",
            [Fix("advice", "check the GPU and vLLM version against the listed reasons")],
        )
    fixes = [ctx.apply("strip-fp8-kv-cache")]
    if ctx.at_least(0, 15) is not False:
        fixes.append(Fix("flag", "--kv-cache-dtype bfloat16", note="vLLM 0.15 and later"))
    fixes.append(Fix("advice", "vLLM 0.18 and later run an FP8 MLA KV cache on SM12x"))
    return (
        f"the checkpoint declares a {kv_dtype} KV cache and no MLA attention backend of this "
        "vLLM accepts it on this GPU (SM12x before vLLM 0.18: only TRITON_MLA, no FP8)",
        fixes,
    )


def selected_backend(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    backend = m.group(1).rsplit(".", 1)[-1]
    given = ctx.kv_dtype
    if "kv_cache_dtype not supported" in m.group(0) and given not in (None, "auto"):
        # The command line set the dtype the backend refuses: the flag is the answer, not the
        # checkpoint's directive (which the flag overrides) nor the backend alone, since an
        # explicit unquantized dtype was refused by every dense MLA backend before 0.15.
        since = mla_dtype_from(backend, given)
        fixes = [
            Fix(
                "flag",
                "--kv-cache-dtype auto",
                note="auto takes the checkpoint's own KV dtype; if that is an FP8 directive "
                f"{backend} refuses too, strip it (patcher apply {ctx.checkpoint} "
                "strip-fp8-kv-cache)",
            )
        ]
        if since is not None:
            text = ".".join(map(str, since))
            fixes.append(
                Fix(
                    "dependency",
                    f"pip install 'vllm>={text}'",
                    note=f"{backend} lists {given} from vLLM {text} (read)",
                )
            )
        return (
            f"the forced attention backend {backend} does not list the KV cache dtype "
            f"{given} the command line set",
            fixes,
        )
    fixes = unforce(ctx.version)
    if "kv_cache_dtype not supported" in m.group(0):
        fixes.append(ctx.apply("strip-fp8-kv-cache"))
    named = _named_for(m.group(0), backend, ctx.version)
    if named is not None:
        # vLLM 0.12's own platform code forces CUTLASS_MLA on Blackwell for every MLA model,
        # sparse ones too: no flag was given to drop, so naming the backend is the way out
        fixes.insert(0, named)
    return (
        f"the forced attention backend {m.group(1)} cannot run this configuration (forced by "
        "--attention-backend, VLLM_ATTENTION_BACKEND or the release's own platform default)",
        fixes,
    )


def _named_for(refusal: str, backend: str, version: tuple[int, ...] | None) -> Fix | None:
    """A backend of the log's release named for the feature the refusal says is missing
    (``'sparse not supported'``: the release's ``*SPARSE*`` backends, from the backend names
    read per release), chosen by the way that release takes a backend: its
    ``--attention-backend`` flag, else ``VLLM_ATTENTION_BACKEND``."""
    lacking = re.search(r"'(\w+) not supported'", refusal)
    if lacking is None or lacking.group(1) in ("dtype", "kv_cache_dtype", "block_size"):
        return None
    word = lacking.group(1).upper()
    release = release_of(version)
    names = [
        name
        for name in features_of("vllm", "attention_backend")
        if word in name
        and name != backend
        and not _OTHER_PLATFORM.search(name)
        and (release is None or release in feature_releases("vllm", "attention_backend", name))
    ]
    if not names:
        return None
    choice = min(names, key=len)  # the plain one before the model-specific variants
    note = f"the backends of this release made for it: {', '.join(sorted(names))}"
    if release is not None and release in feature_releases("vllm", "flags", "--attention-backend"):
        return Fix("flag", f"--attention-backend {choice}", note=note)
    return Fix("env", f"VLLM_ATTENTION_BACKEND={choice}", note=note)


def unforce(version: tuple[int, ...] | None) -> list[Fix]:
    """How the log's vLLM release is left to choose its attention backend: without its
    ``--attention-backend`` flag (read from 0.13) and without ``VLLM_ATTENTION_BACKEND`` (read
    to 0.14); both where the release was not read."""
    release = release_of(version)
    known = release in read_releases("vllm")
    flag = not known or release in feature_releases("vllm", "flags", "--attention-backend")
    env = not known or release in feature_releases("vllm", "env", "VLLM_ATTENTION_BACKEND")
    fixes = []
    if flag:
        fixes.append(
            Fix("advice", "drop --attention-backend if it was given", note="let vLLM choose")
        )
    if env:
        note = "let vLLM choose"
        if known and not flag:
            note = "the one way this release takes a forced backend, read from its source"
        fixes.append(Fix("advice", "unset VLLM_ATTENTION_BACKEND if it was set", note=note))
    return fixes


def release_of(version: tuple[int, ...] | None) -> str | None:
    """The vLLM release read that the log's version names (0.8.5 is 0.8.5.post1)."""
    if version is None:
        return None
    return next(
        (r for r in read_releases("vllm") if version_key(r)[:3] == version[:3]),
        ".".join(map(str, version)),
    )


def trtllm_gen_page(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """The TRT-LLM-gen attention kernels' own check (``TLLM_CHECK_WITH_INFO(... &&
    (numTokensPerPage <= 128))`` where a kernel is chosen, in TensorRT-LLM's fmha code that
    FlashInfer's trtllm-gen decode carries too): a KV page of more tokens than they take. vLLM
    raises a hybrid model's attention block to the Mamba state's page (hundreds of tokens), so
    on vLLM another backend is the way out; SGLang and TensorRT-LLM take the page size."""
    limit = m.group(1)
    said = m.group(2)
    cause = (
        f"the TRT-LLM-gen attention kernels (FlashInfer's trtllm-gen path, TensorRT-LLM's FMHA) "
        f"take KV pages of at most {limit} tokens" + (f", and this one has {said}" if said else "")
    )
    tokens_per_block = Fix(
        "advice",
        f"TensorRT-LLM: kv_cache_config: {{tokens_per_block: {limit}}} or less",
        note="in the --extra_llm_api_options YAML",
    )
    if "TensorRT-LLM" in m.string or "TRT-LLM" in m.string:
        return cause, [tokens_per_block]
    cause += ": vLLM raises a hybrid Mamba model's attention block to the Mamba state's page"
    if ctx.engine == "sglang":
        return cause, [Fix("flag", f"--page-size {limit}", note="or another --attention-backend")]
    release = release_of(ctx.version)
    within = (release,) if release else tuple(read_releases("vllm"))
    fixes = another_backend("vllm/v1/attention/backends/flashinfer.py", within)
    trtllm_env = [r for r in within if r in feature_releases("vllm", "env", _TRTLLM_ENV)]
    if trtllm_env:
        fixes.append(
            Fix(
                "env",
                f"{_TRTLLM_ENV}=0",
                note="FlashInfer's own kernels instead of trtllm-gen (vLLM "
                f"{trtllm_env[0]} to {trtllm_env[-1]} read it)",
            )
        )
    return cause, fixes


_TRTLLM_ENV = "VLLM_USE_TRTLLM_ATTENTION"


def bare_assert() -> tuple[str, list[Fix]]:
    """An ``assert`` with no message in a vLLM attention backend's file (V1's flash_attn.py:
    ``assert is_fa_version_supported(...)`` on a GPU below SM80): that backend's own check."""
    return (
        "an attention backend's own check failed with no message: it does not run this "
        "GPU or configuration",
        [
            Fix(
                "env",
                "VLLM_USE_V1=0",
                note="vLLM 0.7 to 0.10: the V0 engine, whose backends run older GPUs",
            ),
            Fix("advice", "--attention-backend another backend (vLLM 0.11 on), or a GPU it runs"),
        ],
    )


# The attention backends whose kernels a CUDA GPU runs (the kernel libraries' names), and the
# platforms' own; Triton's kernels are compiled for the GPU they run on, so they come first.
_CUDA_KERNELS = re.compile(r"TRITON|FLASH|FLEX|XFORMERS|CUTLASS")
_OTHER_PLATFORM = re.compile(r"ROCM|AITER|IPEX|PALLAS|HPU|XPU|CPU|OPENVINO|TORCH_SDPA|CUSTOM")
_FIRST = ("TRITON", "FLASHINFER", "FLEX", "FLASH")


def _backends(release: str) -> list[str]:
    return [
        n
        for n in features_of("vllm", "attention_backend")
        if release in feature_releases("vllm", "attention_backend", n)
    ]


def another_backend(file: str, within: tuple[str, ...]) -> list[Fix]:
    """The other attention backends of the releases ``within`` (read: their backend enum),
    where the backend of ``file`` (``vllm/v1/attention/backends/flash_attn.py``: FLASH_ATTN)
    refuses the model or the GPU, by the way each release takes a backend:
    ``--attention-backend`` or ``VLLM_ATTENTION_BACKEND`` (the releases that read it), each
    with the releases read that have the name."""
    this = Path(file).stem.upper()
    if _OTHER_PLATFORM.search(this):
        return []  # a TPU's, CPU's or ROCm GPU's backend: the CUDA backends are no way out
    mla = "/mla/" in file or "MLA" in this
    v1 = "/v1/" in file
    env = feature_releases("vllm", "env", "VLLM_ATTENTION_BACKEND")
    ways: tuple[tuple[Literal["flag", "env"], list[str]], ...] = (
        ("flag", [r for r in within if declared("vllm", "--attention-backend", (r,))]),
        ("env", [r for r in within if r in env]),
    )
    fixes: list[Fix] = []
    for kind, having in ways:
        chosen: dict[str, tuple[list[str], list[str]]] = {}  # first name: releases, others
        for release in having:
            names = _backends(release)
            if not {this, f"{this}_VLLM_V1"} & set(names):
                continue  # a file the backends share (mla/common.py), or another platform's
            others = [
                n
                for n in names
                if n not in (this, f"{this}_VLLM_V1")
                # V0's backends in a V0 file; in a V1 file, V1's name where a release has both
                and (n.endswith("_VLLM_V1") if v1 and f"{n}_VLLM_V1" in names else True)
                and not (not v1 and n.endswith("_VLLM_V1"))
                and _CUDA_KERNELS.search(n)
                and not _OTHER_PLATFORM.search(n)
                and ("MLA" in n) == mla
                and not re.search(r"SPARSE|DIFF|DUAL|TREE", n)
            ]
            if others:
                others.sort(key=_preference)
                chosen.setdefault(others[0], ([], others[1:4]))[0].append(release)
        for name, (releases, rest) in list(chosen.items())[-2:]:
            span = releases[0] if len(releases) == 1 else f"{releases[0]} to {releases[-1]}"
            text = (
                f"--attention-backend {name}"
                if kind == "flag"
                else f"VLLM_ATTENTION_BACKEND={name}"
            )
            note = f"vLLM {span}: a backend other than {this}"
            fixes.append(Fix(kind, text, note=note + (f" (or {', '.join(rest)})" if rest else "")))
    return fixes


def _preference(name: str) -> tuple[int, bool, int, int]:
    """Triton's kernels first, then FlashInfer's, FlexAttention, FlashAttention; a plain
    backend (``TRITON_ATTN``, ``FLASHINFER``, ``TRITON_MLA``) before a variant of it."""
    first = next((i for i, word in enumerate(_FIRST) if word in name), len(_FIRST))
    plain = name in ("FLASHINFER",) or name.endswith(("_ATTN", "_ATTENTION", "_MLA", "_V1"))
    return first, not plain, name.count("_"), len(name)


# vLLM's attention selection refusing (engine_rules.RULES takes these first).
ATTENTION_RULES: tuple[Rule, ...] = (
    (
        "no-attention-backend",
        re.compile(r"No valid attention backend found for \w+ with AttentionSelectorConfig\(.*"),
        attention,
    ),
    (
        # the TRT-LLM-gen kernels' check (FlashInfer's copy prints its %d unformatted)
        "trtllm-gen-page-size",
        re.compile(r"numTokensPerPage <= (\d+)\)(?:.*\bnumTokensPerPage=(\d+)\b)?"),
        trtllm_gen_page,
    ),
    (
        "forced-attention-backend",
        re.compile(r"Selected backend (\S+) is not valid for this configuration\. Reason: (.*)"),
        selected_backend,
    ),
)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
ATTENTION_MARKERS = (
    "attention backend found",
    "numTokensPerPage <= ",
    "is not valid for this configuration",
)
