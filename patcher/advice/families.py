"""The families of start-up errors, and each family's answer.

Every template of the catalogue (``catalogue.py``: the engines' own messages, read from
their source) belongs to the first family here whose ``claims`` accepts it; a test lists any
template no family claims. A family's ``answer`` is the kind of way out it has, a closed set:

- ``transform``: a patcher transform edits the checkpoint's directive;
- ``flag``: an engine flag (its value computed from the sizes the message carries, where it
  carries them);
- ``env``: an environment variable;
- ``dependency``: a package to install or upgrade;
- ``none``: no config fix (a kernel, GPU or engine gap); it says what would help.

Besides its own fixes, a family passes on the remedy the engine's message itself names
(``use --x y``, ``set X=1``, ``pip install z``): those are the engine's words, read from the
line, not guessed.

How to add a family: write ``explain(matched, ctx) -> (cause, fixes)``, add a ``Family`` to
``FAMILIES`` before any broader family that would claim its templates, and run
``pytest tests/advice/test_catalogue.py`` (every template still claimed; a log written from
each of its templates gets its answer).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from patcher.advice.accepted_values import later_accepts
from patcher.advice.answers import (
    explain_architecture,
    explain_backend,
    explain_chat_template,
    explain_class_load,
    explain_config_field,
    explain_config_name_taken,
    explain_context,
    explain_gap,
    explain_kv_dtype,
    explain_memory,
    explain_quantization,
    explain_remote_code,
)
from patcher.advice.architectures import registered_release
from patcher.advice.catalogue import Matched, Template
from patcher.advice.cuda_graph import CAPTURE, explain_cuda_graph
from patcher.advice.environment_answers import explain_dependency, explain_environment
from patcher.advice.hub_access import explain_hub
from patcher.advice.layer_configs import explain_per_layer
from patcher.advice.log_rules import Fix, LogContext
from patcher.advice.named_flags import (
    explain_named_flags,
    explain_reasoning_parser,
    refused_switch,
)
from patcher.advice.no_config_fix import (
    explain_feature_gap,
    explain_files,
    explain_internal,
    explain_request,
    explain_shape,
)
from patcher.advice.own_remedy import ENV_NAME, own_remedy
from patcher.advice.parallel_sizes import explain_parallel
from patcher.advice.quantization_rules import required_keys_dropped
from patcher.advice.rope_config import explain_rope
from patcher.advice.speculative import explain_draft
from patcher.advice.tokenizer_answers import explain_tokenizer

Answer = Literal["transform", "flag", "env", "dependency", "none"]
Explain = Callable[[Matched, LogContext], tuple[str, list[Fix]]]


@dataclass(frozen=True, slots=True)
class Family:
    """A class of start-up errors that share a cause and a way out."""

    name: str
    answer: Answer
    claims: Callable[[Template], bool]
    explain: Explain
    # Whose usual answer is a default for its kind of message: where the engine's message
    # names its own remedy, that is the answer alone (the default would stand beside it as a
    # second, possibly contrary, fix: a strip beside "requires fp8"). The memory, context and
    # parallel families compute values for the flags a message names, and keep them.
    defers: bool = False

    def explained(self, m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
        """The cause and the fixes of ``m``: the message's own remedy where it names one and
        the family defers to it, else the family's answer; first of all, a later release that
        accepts the value the message refuses, where the reading shows one."""
        accepted = later_accepts(m, ctx)
        if accepted is not None:
            return accepted
        cause, fixes = self.explain(m, ctx)
        if self.defers:
            named = own_remedy(m.line if m.whole else m.template.text, m.template)
            fixes = named or fixes
        switch = refused_switch(m.line, m.template.engine)
        if switch is not None and switch not in fixes:
            cause = "the engine refuses a switch the command line made, for this model"
            fixes = [switch, *(f for f in fixes if f.kind != "advice")]
        return cause, fixes


def _remote_code(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    """A config that needs its own code; where the message names an architecture the
    release's registry lacks (its Transformers backend tried it), the release that lists it."""
    return registered_release(m, ctx) or explain_remote_code(m, ctx)


def _says(pattern: str, *, flags: int = re.IGNORECASE) -> Callable[[Template], bool]:
    compiled = re.compile(pattern, flags)
    return lambda t: compiled.search(t.text) is not None


def _quantization(m: Matched, ctx: LogContext) -> tuple[str, list[Fix]]:
    """A quantization message about a size that does not divide is a parallel size's."""
    if re.search(r"divisible", m.line, re.IGNORECASE):
        return explain_parallel(m, ctx)
    return required_keys_dropped(m, ctx) or explain_quantization(m, ctx)


def _BACKEND_LACKS(t: Template) -> bool:  # noqa: N802 (a claim, named like the others)
    """A vLLM attention backend's own refusal of a model feature, raised in a backend's file
    ("FlexAttention does not support sliding window yet", "Sinks are only supported in
    FlashAttention 3"): the backend's, whatever the feature (a model's attention layer
    refusing one is not). Another backend is the way out."""
    backend = t.engine == "vllm" and "attention/backends/" in t.file
    refuses = r"does not support|not supported by|(?:is |are )?only supported (?:in|on|by|with)"
    return backend and re.search(refuses, t.text, re.I) is not None


# The scheduler's KV-cache managers and the model runner (read for the multimodal budget and
# the memory profile): their "block size" is the KV cache's and their "sliding window" an
# attention layer kind, not a quantization block or a context length.
_RUNTIME_FILE = re.compile(r"^vllm/v1/core/|^vllm/v1/worker/gpu_model_runner\.py$")


# A setting's bound in its own name: "max_num_batched_tokens must be <= 65528".
_SETTING_BOUND = _says(
    r"\b[a-z]+_[a-z_]+\b[`'\"]? (?:must|should) be (?:<=?|>=?|less|greater|at most|at least|"
    r"smaller|larger|no (?:more|less|greater|smaller|larger))"
)


def _RUNTIME_WORDS(t: Template, words: str) -> bool:  # noqa: N802 (a claim, named like the others)
    """Whether ``t`` is from a runtime file and names none of ``words``."""
    return _RUNTIME_FILE.search(t.file) is not None and not re.search(words, t.text, re.I)


def _GRAMMAR_FILE(t: Template) -> bool:  # noqa: N802 (a claim, named like the others)
    """SGLang's grammar backends and reasoning parser (constrained/, parser/): built as the
    scheduler starts, and used again for each request's grammar."""
    return t.engine == "sglang" and re.search(r"/constrained/|reasoning_parser", t.file) is not None


# the engines' speculative decoding: SGLang's draft workers, vLLM's proposers (V0 and V1)
_SPECULATIVE_FILE = re.compile(r"^(?:sglang/srt/speculative/|vllm/(?:v1/)?spec_decode/)")
_PARSER_WORDS = _says(r"think_|reasoning parser|model type|Strict reasoning")


def _PARSER_REFUSED(t: Template) -> bool:  # noqa: N802 (a claim, named like the others)
    """A reasoning parser refusing the model as it is built: SGLang's (grammar backend, parser
    registry), vLLM's (vllm/reasoning/: think tokens the tokenizer lacks, a name not
    registered)."""
    if t.engine == "vllm" and t.file.startswith("vllm/reasoning/"):
        return _says(
            r"could not locate|Tokenizer must contain|must be an instance of \w*Tokenizer|"
            r"parser '[^']*' not found|not found in reasoning_parsers"
        )(t)
    return _GRAMMAR_FILE(t) and _PARSER_WORDS(t)


def _REQUEST_GRAMMAR(t: Template) -> bool:  # noqa: N802 (a claim, named like the others)
    """A request's grammar or reasoning options refused (SGLang's constrained/, vLLM's
    reasoning parsers' structured-output conversions), or a grammar backend's own mask
    bookkeeping."""
    if t.engine == "vllm" and t.file.startswith("vllm/reasoning/"):
        return _says(
            r"structured_outputs|request|reasoning_effort|should not be called|"
            r"shouldn't be used|HarmonyParser|is empty"
        )(t)
    return _GRAMMAR_FILE(t) and not _says(r"--[a-z]|grammar backend:|XGrammar")(t)


FAMILIES: tuple[Family, ...] = (
    Family(
        # the checkpoint's files not had from the Hub: gated, private, misnamed, offline
        "hub-access",
        "env",
        lambda t: t.file == "transformers/utils/hub.py",
        explain_hub,
    ),
    Family(
        # the compiled ops' Python wrappers (vllm/_custom_ops.py) checking the tensors the
        # engine itself passes as the first forward runs: its own invariants, whatever their
        # words say of shapes or settings; only a refusal that names the platform it needs is
        # left to the hardware family
        "op-arguments",
        "none",
        lambda t: (
            t.file == "vllm/_custom_ops.py" and not _says(r"only available on|not supported on")(t)
        ),
        explain_internal,
    ),
    Family(
        # the engine's CUDA graphs could not be captured as it started
        "cuda-graph",
        "flag",
        lambda t: CAPTURE.search(t.text) is not None,
        explain_cuda_graph,
    ),
    Family(
        # speculative decoding's draft model: not one of its method (SGLang's draft workers,
        # vLLM's proposers, read as the engine loads the draft)
        "speculative-draft",
        "flag",
        lambda t: (
            _SPECULATIVE_FILE.search(t.file) is not None
            and _says(
                r"draft model (?:returned|config|to share|has no|\{)|"
                r"draft (?:config|checkpoint|weights|architecture|vocab)|same vocab|"
                r"eagle3? (?:draft|head|model)|not an? (?:eagle|draft|mtp)|set_embed|hot_token"
            )(t)
        ),
        explain_draft,
    ),
    Family(
        # a --reasoning-parser that is not this model's: its think tokens, its name
        "reasoning-parser",
        "flag",
        _PARSER_REFUSED,
        explain_reasoning_parser,
        defers=True,
    ),
    Family(
        # a request's grammar (a JSON schema, a regex, EBNF) that the backend refuses, or
        # the backend's own bookkeeping of its masks: a request's, or the engine's, never
        # a setting's; the flags these files refuse, and a tokenizer the grammar backend
        # cannot start with, are the named-flags family's
        "grammar-request",
        "none",
        _REQUEST_GRAMMAR,
        explain_request,
    ),
    Family(
        "dependency",
        "dependency",
        lambda t: (
            t.exception in {"ImportError", "ModuleNotFoundError"}
            or _says(
                r"pip install|not installed|No module named|please "
                r"install|is required to use|upgrade (your )?[a-z]|"
                r"Unable to load \w+ which is required|"
                # a package's version bound, not a size's ("requires K >= {min_dim}",
                # "requires window >= 2 * PCP size")
                r"requires? `?[A-Za-z][\w-]{2,}`?\s*[<>=]=\s*"
                r"(?:\{[^}]*\}|\d+(?:\.\d+)*)(?!\s*[*/+])"
            )(t)
        ),
        explain_dependency,
    ),
    Family(
        "remote-code",
        "flag",
        _says(r"trust.?remote.?code|custom code|auto_map"),
        _remote_code,
        defers=True,
    ),
    Family(
        "kv-cache-dtype",
        "transform",
        _says(
            r"kv.?cache.?(?:dtype|quant|scheme)|kv_cache_dtype|fp8 kv|fp8\w* kv.?cache (?:is )?not|"
            r"kv.?cache .*fp8|"
            r"fp8_ds_mla|fp8e4nv|\bk_scale|\bv_scale|kv_scale"
        ),
        explain_kv_dtype,
        defers=True,
    ),
    Family("environment", "env", _says(ENV_NAME.pattern, flags=0), explain_environment),
    Family(
        "kv-cache-memory",
        "flag",
        _says(
            r"memory|kv.?cache (?:blocks|size|space|tokens)|num_gpu_blocks|cache blocks|"
            r"mem.?fraction|max_total_(?:num_)?tokens|max seq len|\bOOM\b|memory pool"
        ),
        explain_memory,
    ),
    Family(
        "rope-config",
        "transform",
        _says(r"rope|rotary|yarn|original_max_position"),
        explain_rope,
        defers=True,
    ),
    Family(
        "config-name-taken",
        "dependency",
        _says(r"already used by a Transformers config"),
        explain_config_name_taken,
    ),
    Family(
        # transformers refusing a per-layer config's attribute read whole (5.14.1 on): an
        # engine release written before the model's config became per-layer
        "per-layer-config",
        "dependency",
        lambda t: (
            t.engine == "transformers" and t.exception == "AmbiguousGlobalPerLayerAttributeError"
        ),
        explain_per_layer,
    ),
    Family(
        # the same module refusing how its caller asks for a layer's config (an argument's
        # type, a layer type the config does not describe): the caller's, an engine's, code
        "per-layer-config-use",
        "none",
        lambda t: (
            t.file.endswith("/heterogeneity/configuration_utils.py")
            and (t.exception in ("TypeError", "IndexError") or t.text.startswith("Layer type"))
        ),
        explain_internal,
    ),
    Family(
        "config-validation",
        "transform",
        # transformers' config classes, and an engine's own config classes: for a model
        # package of its own (vLLM 0.29 on: vllm/models/X/config.py), and the ones vLLM
        # builds a model's config with (transformers_utils/configs/)
        lambda t: (
            (t.engine == "transformers" and "/configuration_" in t.file)
            or re.search(r"/models/[^/]+/config\.py$", t.file) is not None
            or "/transformers_utils/configs/" in t.file
        ),
        explain_config_field,
        defers=True,
    ),
    Family(
        "context-length",
        "flag",
        lambda t: (
            _says(
                r"max.?model.?len|max_position_embeddings|context.?len|max_seq_len|"
                r"model_max_length|sliding.?window"
            )(t)
            # "FlexAttention does not support sliding window yet": a backend's gap, not a length
            and not _BACKEND_LACKS(t)
            and not _RUNTIME_WORDS(t, r"max.?model.?len|max_position|context.?len")
        ),
        explain_context,
    ),
    Family(
        "moe-backend",
        "flag",
        _says(
            r"moe.?(?:runner.?)?backend|all2all|\ba2a\b|deepep|megamoe|moe .*(?:kernel|"
            r"runner)|fused.?moe"
        ),
        explain_backend,
        defers=True,
    ),
    Family(
        "attention-backend",
        "flag",
        lambda t: (
            _says(
                r"attention.?backend|attn.?backend|AttentionBackend|mla backend|"
                r"sparse.?mla|flash.?attn"
            )(t)
            or _BACKEND_LACKS(t)
        ),
        explain_backend,
        defers=True,
    ),
    Family(
        "parallel-sizes",
        "flag",
        _says(
            r"divisible|tensor.?parallel|pipeline.?parallel|expert.?parallel|"
            r"data.?parallel|context.?parallel|world.?size|tp.?size|ep.?size|\bdp\b|"
            r"required GPUs|available GPUs"
        ),
        explain_parallel,
    ),
    Family(
        "chat-template",
        "transform",
        # a tool-call parser the flag names is the flag's, not the template's
        _says(
            r"chat.?template|jinja|generation prompt|conversation|tool.?call(?![ _]parser)|"
            r"templates dict"
        ),
        explain_chat_template,
        defers=True,
    ),
    Family(
        "tokenizer",
        "transform",
        _says(r"tokeni[sz]er|special.?token|vocab|detokeni"),
        explain_tokenizer,
        defers=True,
    ),
    Family(
        "hardware",
        "none",
        lambda t: (
            _says(
                r"compute capability|cuda capability|\bsm[ _]?\d{2,3}|"
                r"blackwell|hopper|ampere|volta|turing|"
                r"rocm|gfx\d|\bhip\b|\bnpu\b|\bxpu\b|\btpu\b|\bcpu\b|\bmusa\b|cuda \d|"
                r"platform|device|\bgpu|\bamx\b|\bhpu\b|gaudi|triton|cutlass|flashinfer|kernel|"
                # compressed_tensors.py's _get_scheme_from_parts tries each scheme the release
                # has, each gated on the GPU's capability: none left is a release or GPU gap
                r"compatible scheme"
            )(t)
            # "Due to limitations of the custom LoRA CUDA kernel, max_num_batched_tokens must
            # be <= 65528": a kernel's limit stated as a setting's bound is the setting's
            and not _SETTING_BOUND(t)
        ),
        explain_gap,
        defers=True,
    ),
    Family(
        # "Model X does not support BitsAndBytes quantization yet": the release's model class
        # lacks the weight mapping the method's loader needs (bitsandbytes_loader.py)
        "model-feature-gap",
        "none",
        _says(
            r"\bdoes not support \w+(?: \w+)? quantization yet|"
            r"\bModel \S+ does not support .* yet|does not support LoRA(?:,| yet)|"
            r"Model does not support LoRA|GGUF model with architecture"
        ),
        explain_feature_gap,
    ),
    Family(
        "quantization-config",
        "transform",
        lambda t: (
            _says(
                r"quant|scale|group.?size|(?<!mamba.)block.?size|weight_block|bits|awq|gptq|marlin|"
                r"modelopt|compressed|fp8|fp4|int4|int8|mxfp|nvfp4|w4a|w8a|zero.?point|aqlm|hqq|"
                r"bitsandbytes"
            )(t)
            and not _RUNTIME_WORDS(t, r"quant|awq|gptq|marlin|fp8|fp4|int4|int8|mxfp|nvfp4")
        ),
        _quantization,
        defers=True,
    ),
    Family(
        # vLLM's registry could not import a class it lists (registry.py's own log lines)
        "model-class-load",
        "none",
        _says(
            r"Error in (?:inspecting|loading) model architecture|failed to be inspected|"
            r"Error raised in subprocess"
        ),
        explain_class_load,
    ),
    Family(
        "architecture",
        "transform",
        _says(
            r"architecture|model.?type|model class|registry|not supported for now|"
            r"Unrecognized configuration"
        ),
        explain_architecture,
        defers=True,
    ),
    Family(
        "checkpoint-files",
        "none",
        _says(
            r"safetensors|\.bin\b|checkpoint|weights?\b|file|path|director|download|"
            r"\brepo|revision|does not exist|not found|no such|config format found|truncated|"
            # SGLang's expert packs (model_loader/expert_pack*): a pack file that does not match
            # the manifest or checkpoint it was built from
            r"magic|manifest|digest|SHA-256|header size|shard set|payload|pack (?:header|index|"
            r"size|entry|bytes|object)|source/pack|expert-pack (?:header|index|object|entry)|"
            r"entry \{[^}]*\} (?:breaks|source)|overlapping"
        ),
        explain_files,
        defers=True,
    ),
    Family(
        "engine-flags",
        "flag",
        _says(
            r"--[a-z]|mutually exclusive|must be (?:set|specified|provided|enabled|"
            r"disabled|one of|positive|greater|less|at least|at most|>|<|an?\b)|"
            r"cannot be (?:used|set|combined|enabled)|only (?:be )?supported|"
            r"not (?:yet )?supported|is not compatible|incompatible|requires|invalid|"
            r"should be|must not|unknown|unsupported|not allowed|expected|"
            r"does not support|only supports|cannot (?:set|use) both|please specify|"
            r"must (?:match|have|contain|be)|cannot|should only|only valid|"
            r"`\w+`|\b[a-z]+_[a-z_]+\b|only one\b|unless|not (?:currently )?compatible|"
            r"were provided|not an allowed|has been removed|can't be used|either|both|"
            r"\bmode\b|is not (?:a|an)\b|not (?:a )?multimodal|only choose|"
            r"should all be|isn't in|can't derive|supports only|speculative|\bis set\b|"
            r"can only be set|is supported for|no loader provided|does not yet support|"
            r"must equal|supports \w+ in\b|unrecogni[sz]ed|supported values|"
            r"required for full cuda graph|\bnot set in\b|"
            # "Got priority 1 but Priority scheduling is not enabled." (V0's add_request): a
            # request asks for what the server's flags did not switch on
            r"\bbut \w+ \w+ is not enabled\b|"
            # vLLM 0.5.1 to 0.5.4's loader, 0.10.0's pooler: settings the command line gives
            r"entrypoint or engine arguments|should not be set together"
        ),
        explain_named_flags,
    ),
    Family(
        "model-shape",
        "none",
        _says(
            r"shape|hidden|layer|intermediate|rotation|placeholder|codebook|patch|"
            r"element|copy_|broadcast|dense|tensor|sparse config|member for value|"
            r"multimodal|field|docstring|sleep retention|positional args"
        ),
        explain_shape,
    ),
    Family(
        "request-input",
        "none",
        _says(
            r"modality|audio|image|video|pixel|waveform|processor|projector|frames?\b|"
            r"prompt|input|striding|convolution|chunk|crop|grid|metadata"
        ),
        explain_request,
    ),
    Family(
        "engine-internal",
        "none",
        lambda t: (
            t.exception != "ValueError"
            or "/models/" in t.file
            or _SPECULATIVE_FILE.search(t.file) is not None  # a draft worker's bookkeeping
            # a KV connector's transfers, a kernel's or an op's own bounds
            or re.search(r"/kv_transfer/|/kernels/|/ops/", t.file) is not None
            # SGLang's memory pools and host caches, its utilities: their own bookkeeping
            or re.search(r"/mem_cache/|/utils/common\.py$", t.file) is not None
            # SGLang's layers' and LoRA kernels' own invariants, no family above naming them
            or re.search(r"^sglang/srt/(?:layers|lora)/", t.file) is not None
            or _says(
                r"already|twice|mismatch|no free|out of range|limit|store|table|reused|"
                r"not set yet|could not|failed|do not match|require the same|require separate|"
                r"contains an empty|should not be called|should not be reached|"
                r"only version \d|no supported|restricted|must fit|takes no|not reduce"
            )(t)
        ),
        explain_internal,
    ),
)


def family_of(template: Template) -> Family | None:
    """The family that claims ``template`` (the first in ``FAMILIES``), or None."""
    return next((f for f in FAMILIES if f.claims(template)), None)
