"""The way out an engine's message names itself: a flag to use or leave out, a setting's
value, an environment variable, a package to install. Every answer in ``answers.py`` starts
from it; a setting is told as a flag only where the engine has that flag.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable

from patcher.advice.catalogue import (
    Engine,
    Template,
    declared,
    features_of,
    flags,
    has_feature,
)
from patcher.advice.log_rules import Fix

_WORDS_AFTER = {
    "to",
    "instead",
    "or",
    "and",
    "flag",
    "option",
    "for",
    "if",
    "when",
    "is",
    "the",
    "set",
    "equal",
    "be",
    "enabled",
    "disabled",
    "with",
    "in",
    "on",
}
_USE = re.compile(
    r"\b(?:use|pass|set|try|add|specify|using|with|enable)\s+`?(--[a-z0-9][a-z0-9-]*)`?"
    r"(?:[ =]`?([\w./:+-]+))?",
    re.IGNORECASE,
)
_DROP = re.compile(
    r"\b(?:drop|remove|unset|leave|without|disable|do not (?:specify|pass|use|set)|"
    r"don't (?:use|set))"
    r"\s+`?(--[a-z0-9][a-z0-9-]*)",
    re.IGNORECASE,
)
_DIRECTION = re.compile(
    # a word of the message, not the end of a flag's name ("--disable-custom-all-reduce")
    r"(?<![-\w])(increase|raise|larger|higher|decrease|reduce|lower|smaller)\b[\w ]{0,30}?"
    r"`?(--[a-z0-9][a-z0-9-]*)`?",
    re.IGNORECASE,
)
# A setting's name in a message ("max_num_seqs"), and the verb's settings: one, or a list the
# verb applies to each of ("lowering `max_num_seqs` or `gpu_memory_utilization`", vLLM's
# sampler warm-up).
_SETTING = r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+"
_DIRECTION_NAMED = re.compile(
    r"\b(increas(?:e|ing)|rais(?:e|ing)|decreas(?:e|ing)|reduc(?:e|ing)|lower(?:ing)?)\s+"
    rf"(`?{_SETTING}`?(?:(?:,\s*|\s+(?:or|and)\s+)`?{_SETTING}`?)*)"
    r"(?:\s+to\s+(?:at most |at least )?(\d+))?",
    re.IGNORECASE,
)
# "speculative_draft_tensor_parallel_size=4 cannot be other value than 1" (vLLM 0.6): the one
# value a setting may take.
_ONLY_VALUE = re.compile(
    r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)=\S+ cannot be (?:any )?other value than ([\w.-]+)"
)
# "Please set prefill_context_parallel_size to 1", "set decode_context_parallel_size=1": a
# setting and the value the message asks for.
_SET_TO = re.compile(r"\b[Ss]et `?([a-z][a-z0-9]*(?:_[a-z0-9]+)+)`?\s*(?:to |=\s*)'?([\w.+-]+)")
_SWITCH = ("true", "false")
# "... is not compatible with radix cache when using --mamba-scheduler-strategy no_buffer": a
# flag after "when" or "while" is the setting the server ran with, a condition, not advice.
_CONDITION = re.compile(r"\b(?:when|while|if)\s+$", re.I)
# A message's sentences joined without a space ("no_buffer.To use ..."): a value ends there.
_SENTENCE_JOIN = re.compile(r"\.(?=[A-Z])")
_VERBS = {"enable", "disable", "use", "allow", "avoid", "make", "run", "support", "get"}
_ENABLE = re.compile(r"\b[Pp]lease enable ([a-z0-9]+(?: [a-z0-9]+){0,3})")
_ENV_SET = re.compile(r"\b([A-Z][A-Z0-9]*_[A-Z0-9_]{2,})=([\w.-]+)")
# What a message refuses rather than asks for: "X=1 is not supported with ...", "... is not
# supported with --flag".
_REFUSED_AFTER = re.compile(
    r"\s*(?:(?:is|are) not (?:supported|compatible|allowed|valid)|(?:is|are) incompatible|"
    r"is invalid|must be|should be)",
    re.I,
)
_REFUSED_BEFORE = re.compile(
    r"(?:not (?:supported|compatible|allowed)|incompatible|cannot be (?:used|combined)|"
    r"unsupported)(?:\s+together)?\s*$",
    re.I,
)
# What a message refuses beside another setting: "X=1 is not supported with NAME=VALUE".
_REFUSED_WITH = re.compile(
    r"(?:not (?:supported|compatible|allowed)|incompatible|cannot be (?:used|combined))\s+"
    r"(?:together\s+)?(?:with|alongside)\s*$",
    re.I,
)
# "--disable-custom-all-reduce cannot be combined with --enable-deterministic-inference": the
# flag a message refuses together with another, the sentence's subject.
_REFUSED_PAIR = re.compile(
    r"`?(--[a-z0-9][a-z0-9-]*)`?\s+(?:cannot be (?:used|combined)|is not (?:supported|compatible)|"
    r"is incompatible)\s+(?:together\s+)?with\s+`?--[a-z0-9]",
    re.I,
)
ENV_NAME = re.compile(r"\b((?:VLLM|SGLANG|TRTLLM|NCCL|CUDA|HF|TORCH|FLASHINFER)_[A-Z0-9_]{3,})\b")
_PIP = re.compile(
    r"pip install\s+(?:-U\s+|--upgrade\s+)?"
    # a requirement, or a VCS address ("git+https://github.com/org/repo")
    r"(git\+[^\s'\"`]+[\w/]|[\"']?[\w.\[\]-]+(?:[<>=!~]=?[\w.]+)?)"
)
# "M3.1 NVFP4 requires --kv-cache-dtype fp8_e4m3", "This model requires `--tokenizer-mode
# mistral`": the flag (and value) the message says the configuration needs.
_NEEDS_FLAG = re.compile(
    r"\b(?:requires?|needs?|only supports?|only works with|must (?:use|pass|set|be run with))"
    r"\s+`?(--[a-z0-9][a-z0-9-]*)`?(?:[ =]`?([\w./:+-]+))?",
    re.IGNORECASE,
)
# "... requires kv_cache_dtype=fp8_e4m3, got 16": a server setting and its value.
_NEEDS_SETTING = re.compile(
    r"\b(?:requires?|needs?)\s+`?([a-z][a-z0-9]*_[a-z0-9_]+)`?\s*==?\s*'?([\w.+-]+)"
)
# "dp_shared_memory requires data_parallel_size > 1": a setting held to a bound.
_NEEDS_BOUND = re.compile(r"\brequires?\s+`?([a-z][a-z0-9]*_[a-z0-9_]+)`?\s*([<>]=?)\s*(\d+)\b")
# "LoRA rank 64 is greater than max_lora_rank 16": a limit below the value it must hold.
_ABOVE_MAX = re.compile(
    r"\b(\d+) is (?:greater|larger|more) than (?:the )?`?(max_[a-z_]+)`?\s*\(?(\d+)"
)
# "max_tokens_per_mm_item (2496) is larger than max_num_batched_tokens (2048)": the value a
# setting falls short of, where the message asks to increase it but names no value.
_SHORT_OF = re.compile(
    r"\(?(\d+)\)?\s+is (?:greater|larger|more|bigger|higher) than (?:the )?`?"
    r"([a-z][a-z0-9]*(?:_[a-z0-9]+)+)`?\s*\(?\d+"
)
# "This can be caused by too large tensor parallel size" (vLLM's AWQ): a setting named in
# words, and which way it is wrong.
_TOO = re.compile(
    r"\btoo (large|big|high|many|small|low|few)\s+(?:an? |the )?([a-z]+(?:[ _-][a-z]+){0,3})",
    re.IGNORECASE,
)
# "BitsAndBytes load format and QLoRA adapter only support 'bitsandbytes' quantization, but
# got None" (vLLM 0.5 to 0.7, arg_utils.py): the one quantization method the setting accepts.
_ONLY_METHOD = re.compile(r"\bonly supports? '(\w+)' quantization")
# "For FP4 quantization, use ModelOptFp4Config" (SGLang's modelopt_quant.py): a quantization
# config class, which is the method its get_name returns (the catalogue's quant_class).
_USE_CLASS = re.compile(r"\buse `?([A-Z]\w*Config)\b")
_REQUIRES = re.compile(
    r"\b(?:requires?|upgrade(?: to)?|install)\s+`?([A-Za-z][\w.-]*)`?\s*(?:version\s*)?"
    # a version bound (>=, ==, <, ~=): a lone "=" is a setting's value ("requires DCP=1")
    r"((?:[<>]=?|==|~=)\s*\d+(?:\.\d+)*)(?!\s*[*/+])"
)


def own_remedy(line: str, template: Template | None = None) -> list[Fix]:
    """The way out the engine's message names itself: a flag to use or drop, an environment
    variable to set, a package to install. A setting the message names is told as its flag
    only where the engine has that flag: its messages name it, or a release that raises
    ``template`` declares the setting (vLLM's EngineArgs, SGLang's ServerArgs)."""

    def known(flag: str) -> bool:
        # the flags each release's parser defines (the catalogue's "flags"), where read; a
        # flag a message names may be another setting's name ("don't pass
        # --disable-padded-drafter-batch", a --speculative-config field, no flag)
        if template is None or template.engine == "transformers":
            return any(_defines(e, flag, None) for e in ("vllm", "sglang"))
        return _defines(template.engine, flag, template.releases)

    fixes = [
        Fix("advice", f"leave out {flag}", note="the message refuses it with the other")
        for flag in _REFUSED_PAIR.findall(line)
    ]
    for pattern, said in ((_USE, "names this flag"), (_NEEDS_FLAG, "says it is required")):
        for found in pattern.finditer(line):
            flag, value = found.groups()
            if _CONDITION.search(line[max(0, found.start() - 10) : found.start()]):
                continue
            value = _SENTENCE_JOIN.split(value, maxsplit=1)[0] if value else value
            if _REFUSED_BEFORE.search(line[max(0, found.start() - 40) : found.start()]):
                # "VLLM_USE_V1=1 is not supported with --kv-cache-dtype": the flag is refused
                fixes.append(Fix("advice", f"leave out {flag}", note="the message refuses it"))
                continue
            if value and value.lower() not in _WORDS_AFTER and not value.startswith("-"):
                fixes.append(Fix("flag", f"{flag} {value}".rstrip(".,;:")))
            else:
                fixes.append(Fix("flag", flag, note=f"the engine's message {said}"))
    told = [*_NEEDS_SETTING.findall(line), *_ONLY_VALUE.findall(line), *_SET_TO.findall(line)]
    for name, value in told:
        if value.lower() in _VERBS:  # "set weight_transfer_config to enable ...": a purpose
            continue
        if not known(as_flag(name)):  # a model's own property, not a server setting
            continue
        value = value.rstrip(".,;:")
        # a switch's value as the message spells it ("=Fasle", vLLM 0.2x's speculative check)
        value = next(iter(difflib.get_close_matches(value.lower(), _SWITCH, 1, 0.75)), value)
        if value.lower() in _SWITCH:
            # a switch: argparse takes the bare flag, and vLLM's BooleanOptionalAction its
            # --no- form; SGLang's store_true switches are off when left out
            on = value.lower() == "true"
            vllm = template is None or template.engine != "sglang"
            fixes.append(
                Fix("flag", as_flag(name), note="the switch it requires")
                if on
                else Fix("flag", "--no-" + as_flag(name)[2:], note="the switch off")
                if vllm
                else Fix("advice", f"leave out {as_flag(name)}", note="the switch off")
            )
            continue
        fixes.append(Fix("flag", f"{as_flag(name)} {value}", note="the setting it requires"))
    for name, sign, bound in _NEEDS_BOUND.findall(line):
        if known(as_flag(name)):  # "requires data_parallel_size > 1"
            fixes.append(
                Fix("flag", f"{as_flag(name)} N", note=f"N {sign} {bound}, as the message requires")
            )
    for value, name, _limit in _ABOVE_MAX.findall(line):
        if known(as_flag(name)):  # a server limit the engine has a flag for
            fixes.append(
                Fix("flag", f"{as_flag(name)} {value}", note=f"at least {value}, the limit it hit")
            )
    for direction, flag in _DIRECTION.findall(line):
        fixes.append(_direction(direction, flag, ""))
    if not _DIRECTION.search(line):
        for direction, names, value in _DIRECTION_NAMED.findall(line):
            named = re.findall(_SETTING, names, re.IGNORECASE)
            for name in named:
                # "to N" is the last setting's value; a list's others get none
                given = value if name == named[-1] else ""
                fixes.append(_named(direction, name, given, line, known))
    for amount, words in _TOO.findall(line):
        # the longest run of the words that is a setting the engine has a flag for
        parts = re.split(r"[ _-]", words.lower())
        for count in range(len(parts), 0, -1):
            flag = as_flag("_".join(parts[:count]))
            if "_" in "_".join(parts[:count]) and known(flag):
                lower = amount.lower() in ("large", "big", "high", "many")
                fixes.append(_direction("decrease" if lower else "increase", flag, ""))
                break
    for words in _ENABLE.findall(line):
        # "Please enable dp attention when setting ...": the switch named in words, where the
        # engine declares it (SGLang's enable_dp_attention)
        for count in range(len(words.split()), 0, -1):
            switch = as_flag("enable_" + "_".join(words.split()[:count]))
            if known(switch):
                fixes.append(Fix("flag", switch, note="the switch the message asks for"))
                break
    for flag in _DROP.findall(line):
        fixes.append(
            Fix("advice", f"drop {flag}", note="the engine's message says to leave it out")
        )
    for method in _ONLY_METHOD.findall(line):
        fixes.append(
            Fix("flag", f"--quantization {method}", note="the only method the message accepts")
        )
    for cls in _USE_CLASS.findall(line):
        engines: tuple[Engine, ...] = ("vllm", "sglang")
        if template is not None and template.engine != "transformers":
            engines = (template.engine,)
        for method in dict.fromkeys(
            m for e in engines for m in features_of(e, f"quant_class:{cls}")
        ):
            fixes.append(Fix("flag", f"--quantization {method}", note=f"{cls}'s method"))
    for found in _ENV_SET.finditer(line):
        name, value = found.group(1), found.group(2).rstrip(".")
        if _REFUSED_AFTER.match(line, found.end()):
            # "VLLM_USE_V1=1 is not supported with X": the value set is what fails; a switch's
            # other value, or the variable unset, is the way out
            other = {"1": "0", "0": "1", "true": "false", "false": "true"}.get(value.lower())
            fixes.append(
                Fix("env", f"{name}={other}", note=f"not {value}, which the message refuses")
                if other
                else Fix("env", f"unset {name}", note=f"{value} is what the message refuses")
            )
            continue
        if _REFUSED_WITH.search(line[max(0, found.start() - 40) : found.start()]):
            # "... is not supported with VLLM_ATTENTION_BACKEND=X": this value is the other
            # half of what the message refuses, not a way out
            fixes.append(
                Fix("env", f"unset {name}", note=f"{value} is what the message refuses with it")
            )
            continue
        fixes.append(Fix("env", f"{name}={value}"))
    for package in _PIP.findall(line):
        fixes.append(Fix("dependency", f"pip install {package.strip(chr(34) + chr(39))}"))
    for package, bound in _REQUIRES.findall(line):
        # "requires kv_lora_rank == 512": a setting or property and its value, not a package
        # ("requires hc_count > 1"): a whole number, no version's dots
        setting = "_" in package and re.fullmatch(r"(?:==|[<>]=?)\s*\d+", bound) is not None
        # a name of capitals or of one or two letters is a size or a capability ("requires
        # K >= 128", "requires MP>=31"), not a package
        shaped = package.isupper() or len(package) < 3
        if not setting and not shaped and not package.lower().startswith(("sm", "cuda", "compute")):
            fixes.append(Fix("dependency", f"pip install '{package}{bound.replace(' ', '')}'"))
    unique: dict[str, Fix] = {}
    for fix in fixes:  # "drop X" and "leave out X" are one way out
        unique.setdefault(fix.text.replace("drop --", "leave out --", 1), fix)
    return list(unique.values())


def _defines(engine: Engine, flag: str, within: tuple[str, ...] | None) -> bool:
    """Whether a read release of ``engine`` (of ``within``, when given) has ``flag``
    (:func:`catalogue.declared`), or, where its parsers were not read, a message names it."""
    return declared(engine, flag, within) or (
        not has_feature(engine, "flags") and flag in flags(engine)
    )


def _named(direction: str, name: str, value: str, line: str, known: Callable[[str], bool]) -> Fix:
    """The fix for a setting the message names in words and says which way to move."""
    if not value and direction.lower().startswith(("increas", "rais")):
        value = next((n for n, short in _SHORT_OF.findall(line) if short == name), "")
    if known(as_flag(name)):
        return _direction(direction, as_flag(name), value)
    # a setting the releases that raise it take elsewhere (a JSON config)
    return Fix(
        "advice",
        f"{direction.lower()} {name}",
        note="a setting, not a flag of the releases that raise this",
    )


# How a setting's fix is noted where the message says to lower it, with a value and without:
# _direction writes these and lowers reads them.
_AT_MOST, _SMALLER = "at most", "a smaller value"


def lowers(fixes: list[Fix], flag: str) -> bool:
    """Whether ``fixes`` (:func:`own_remedy`'s) say, as the message does, to lower ``flag``."""
    return any(
        f.text.split()[0] == flag and (f.note or "").startswith((_AT_MOST, _SMALLER)) for f in fixes
    )


def _direction(direction: str, flag: str, value: str) -> Fix:
    lower = direction.lower().startswith(("decreas", "reduc", "lower", "smaller"))
    if value:
        bound = _AT_MOST if lower else "at least"
        return Fix("flag", f"{flag} {value}", note=f"{bound} {value}, as the message says")
    way = _SMALLER if lower else "a larger value"
    return Fix("flag", f"{flag} N", note=f"{way}, as the message says")


def as_flag(name: str) -> str:
    """A config field's command-line flag, as vLLM's and SGLang's argument parsers make it."""
    return "--" + name.removeprefix("self.").replace("_", "-")
