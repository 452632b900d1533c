"""doctor's answer to argparse refusing a flag (``error: unrecognized arguments: --x``) or a
flag's value (``error: argument --x: invalid choice: 'v' (choose from ...)``, Lib/argparse.py):
the choices listed are the installed release's. A value is looked up in the values read per
release of vLLM and SGLang (the catalogue's ``choices:<flag>``, tools/read_model_classes.py:
a flag's ``choices`` or its field's ``Literal`` type, and the parser registries of
``--tool-call-parser`` and ``--reasoning-parser``), for the releases that take it.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import replace

from patcher.advice.catalogue import (
    Engine,
    at_or_below,
    feature_releases,
    feature_span,
    features_of,
    has_feature,
    read_span,
    releases,
    version_key,
    within,
)
from patcher.advice.log_rules import Fix, LogContext


def invalid_choice(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """argparse's refusal of a value its choices lack (``error: argument --x: invalid choice:
    'v' (choose from ...)``): the choices are this release's; a parser name is looked up in
    the releases read."""
    # argparse names a flag by all its spellings ("--quantization/-q"): the long one
    spellings = m.group(1).split("/")
    flag = next((f for f in spellings if f.startswith("--")), spellings[0])
    return _choice(flag, m.group(2), m, ctx)


def invalid_parser(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """vLLM's own refusal of a parser its registry lacks (``KeyError: 'invalid tool call
    parser: openai (chose from { ... })'``, ``invalid reasoning parser``), raised after the
    arguments were parsed: the same answer as argparse's, from the parsers each release
    registers (``choices:--tool-call-parser``, read per release)."""
    flag = "--tool-call-parser" if "tool call" in m.group(1) else "--reasoning-parser"
    # vLLM's words (its catalogue holds them; SGLang's are others'), whichever log they are in
    return _choice(flag, m.group(2), m, replace(ctx, engine=ctx.engine or "vllm"))


def _choice(flag: str, value: str, m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A value ``flag`` does not take in this release: the releases read that take it."""
    cause = f"{flag} {value} is not one of this release's choices (the message lists them)"
    engine = ctx.engine or (
        "sglang"
        if "sglang" in m.string
        else "vllm"
        if re.search(r"vllm|api_server", m.string)
        else None
    )
    if engine not in ("vllm", "sglang"):
        return (cause, [Fix("advice", f"{flag} with one of the values the message lists")])
    named: Engine = "sglang" if engine == "sglang" else "vllm"
    if not has_feature(named, f"choices:{flag}"):  # a flag whose values were not read
        return (cause, [Fix("advice", f"{flag} with one of the values the message lists")])
    read = list(releases(named))
    span = feature_span(named, f"choices:{flag}", value)
    if span is None:
        return (
            f"{cause}; no {named} release read ({read[0]} to {read[-1]}) takes {value}: "
            "a misspelt name, or another engine's",
            [Fix("advice", f"{flag} with one of the names the message lists")],
        )
    first, after = span
    bound = within(first, after)
    having = feature_releases(named, f"choices:{flag}", value)
    said = (
        f"{named} {first} to {having[-1]} take {value}"
        if after
        else f"every {named} release read ({first} on) takes {value}"
        if first == read[0]
        else f"{named} {first} and later take {value}"
    )
    return (
        f"{cause}; {said} (read from their source)",
        [
            Fix("dependency", f"pip install '{named}{bound}'"),
            Fix("advice", f"or {flag} with one of the names this release lists"),
        ],
    )


def unrecognized_arguments(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """argparse's refusal of flags its parser does not define (``error: unrecognized
    arguments: --x v``). vLLM's FlexibleArgumentParser takes ``--x_y`` as ``--x-y``; SGLang's
    plain argparse does not, so there an underscore spelling is the dashed flag misspelt."""
    words = m.group(1).split()
    vllm = ctx.engine == "vllm" or (ctx.engine is None and re.search(r"vllm|api_server", m.string))
    fixes: list[Fix] = []
    for at, word in enumerate(words):
        if not word.startswith("--"):
            continue
        flag, _, given = word.partition("=")
        value = given or (
            words[at + 1] if at + 1 < len(words) and not words[at + 1].startswith("--") else ""
        )
        if "_" in flag and not vllm:
            fixes.append(
                Fix(
                    "flag",
                    f"{flag.replace('_', '-')} {value}".rstrip(),
                    note="the flag as the parser declares it, with dashes",
                )
            )
        elif vllm or ctx.engine == "sglang" or re.search(r"sglang|launch_server", m.string):
            if vllm:
                fixes += _task_replaced(flag, value, ctx.version)
                # its parser reads --x_y as --x-y: the dashed flag is the one it lacks (the one
                # to leave out is still the spelling given)
                dashed = flag.replace("_", "-")
                fixes += [
                    replace(f, text=f.text.replace(f"leave out {dashed}", f"leave out {flag}"))
                    for f in _defined_elsewhere("vllm", dashed, ctx.version)
                ]
            else:
                fixes += _defined_elsewhere(
                    "sglang", flag, ctx.version if ctx.engine == "sglang" else None
                )
        else:  # whose parser it is, the log does not say
            fixes.append(Fix("advice", f"leave out {flag}", note="the parser does not define it"))
    named = ", ".join(w for w in words if w.startswith("--"))
    if words and not words[0].startswith("-") and not fixes:
        return _positional(words[0], m.string, ctx)
    return (f"the engine's command-line parser does not define {named}", fixes)


def _positional(word: str, line: str, ctx: LogContext) -> tuple[str, list[Fix]]:
    """A model given positionally to a program whose parser takes it only as a flag: vLLM's
    ``python -m vllm.entrypoints.openai.api_server`` (``--model``; ``vllm serve`` takes it
    positionally) and SGLang's ``launch_server`` (``--model-path``). The vllm/vllm-openai
    image's entrypoint was that module, then ``vllm serve`` (its docker/Dockerfile, recorded in
    snapshots/engines/docker-entrypoints-vllm.txt); arguments after the image are appended."""
    if word == "serve":
        # "vllm: error: unrecognized arguments: serve MODEL": vllm serve given after the newer
        # image's entrypoint, which already runs it, so "vllm" was taken as the model
        return (
            "vllm serve was given twice: the entrypoint already runs it (the vllm/vllm-openai "
            "image's), so the second 'vllm' was read as the model and 'serve' refused",
            [
                Fix(
                    "advice",
                    "leave 'vllm serve' out of the container's arguments: give the model and "
                    "the flags alone",
                )
            ],
        )
    sglang = ctx.engine == "sglang" or "launch_server" in line
    flag = "--model-path" if sglang else "--model"
    return (
        f"the program's parser takes no positional argument: {word} must follow {flag}",
        [
            Fix(
                "flag",
                f"{flag} {shlex.quote(word)}",
                note="the API server module takes the model only as a flag"
                + ("" if sglang else "; vllm serve takes it positionally"),
            )
        ],
    )


# Words too common in flag names to tell one flag from another (what kind of value, not what).
_COMMON = frozenset(
    {"max", "min", "enable", "disable", "num", "size", "use", "no", "path", "dir", "file", "name"}
)


def _refused_by_its_build(engine: Engine, flag: str, version: tuple[int, ...] | None) -> str | None:
    """Why ``flag``, refused by the parser of a log's ``version``, is left out rather than
    installed for: the read release that answers for that version defines it (the build that
    ran is not that release: a fork, a vendor's image of a development build), or the version
    is newer than any read while the newest read defines it (it may have been dropped since,
    not read). None where neither holds."""
    if version is None:
        return None
    read = list(releases(engine))
    having = feature_releases(engine, "flags", flag)
    span = read_span(engine, "flags", flag)
    if version[:3] > version_key(read[-1]):
        if read[-1] not in having:
            return None
        return (
            f"{engine} {span} define it, as read; the log's release is newer than the releases "
            "read and may not (not read)"
        )
    if at_or_below(read, version) not in having:
        return None
    return (
        f"{engine} {span} define it (read from their source) and the log's release is among "
        "them: this build's parser lacks it (a fork or a custom image), so no upgrade adds it"
    )


def _defined_elsewhere(
    engine: Engine, flag: str, version: tuple[int, ...] | None = None
) -> list[Fix]:
    """What to do with ``flag`` where this release's parser lacks it: the releases read whose
    parser defines it (the catalogue's ``flags``, tools/read_model_classes.py), else the
    flags of the newest release read that share its words (a misspelling, another name).
    Where the log's release is among those that define it, the build that ran is not the
    release as read (a fork, a vendor's image of a development build): no release to install
    takes the flag it lacks, and the flag is left out."""
    span = feature_span(engine, "flags", flag) if has_feature(engine, "flags") else None
    if span is not None:
        first, after = span
        refused = _refused_by_its_build(engine, flag, version)
        if refused is not None:
            return [Fix("advice", f"leave out {flag}", note=refused)]
        if after is not None:  # dropped: leave it out, or the releases that still had it
            return [
                Fix("advice", f"leave out {flag}", note=f"{engine} {after} on does not define it"),
                Fix("dependency", f"pip install '{engine}{within(first, after)}'"),
            ]
        return [
            Fix(
                "dependency",
                f"pip install '{engine}>={first}'",
                note=f"{engine} {first} and later define {flag} (read from their source)",
            ),
            Fix("advice", f"or leave out {flag}"),
        ]
    newest = list(releases(engine))[-1] if has_feature(engine, "flags") else None
    words = set(flag[2:].split("-")) - _COMMON
    alike = (
        [f for f in _flags_of(engine, newest) if words & set(f[2:].split("-")) and f != flag]
        if newest
        else []
    )
    alike.sort(key=lambda f: (-len(words & set(f[2:].split("-"))), len(f)))
    fixes = [
        Fix(
            "advice",
            f"leave out {flag}",
            note="no release read defines it"
            if newest
            else "this release's parser does not define it; a later release may (not read)",
        )
    ]
    if alike:
        fixes.append(
            Fix(
                "advice",
                "or the flag meant: " + ", ".join(alike[:6]),
                note=f"{engine} {newest}'s flags that share its words",
            )
        )
    return fixes


def _task_replaced(flag: str, value: str, version: tuple[int, ...] | None) -> list[Fix]:
    """vLLM's ``--task VALUE`` where its parser no longer defines ``--task``: what the last
    release read that took it ran that task with (the ``task_runner`` feature,
    tools/read_task_runners.py: ``_RUNNER_TASKS`` and ``_task_to_convert``), as the flags that
    replaced it, where the first release without it defines them (a release before the first
    that took it refuses it too, and has neither)."""
    if flag != "--task" or not value or not has_feature("vllm", "task_runner"):
        return []
    span = feature_span("vllm", "flags", flag)
    if span is None or span[1] is None or (version is not None and version < version_key(span[1])):
        return []
    last = feature_releases("vllm", "flags", flag)[-1]
    mapped = next(
        (
            entry.split("=", 1)[1]
            for entry in features_of("vllm", "task_runner")
            if entry.split("=", 1)[0] == value
            and last in feature_releases("vllm", "task_runner", entry)
        ),
        None,
    )
    if mapped is None or span[1] not in feature_releases("vllm", "flags", "--runner"):
        return []
    runner, _, convert = mapped.partition("/")
    if runner != "pooling":
        return []  # a generative task: leaving --task out is the whole answer
    return [
        Fix(
            "flag",
            "--runner pooling",
            note=f"in place of --task {value}, from vLLM {span[1]}: {last}, the last release "
            "read with --task, ran it on the pooling runner"
            + (
                f", adapting a generative model's class with --convert {convert} (add it where "
                "the model's class is a generative one; --convert auto picks embed)"
                if convert and convert != "embed"
                else "; --convert auto adapts a generative model's class to embeddings"
            ),
        )
    ]


def _flags_of(engine: Engine, release: str | None) -> list[str]:
    """The flags the parser of ``release`` defines (read)."""
    return sorted(
        f
        for f in features_of(engine, "flags")
        if release is not None and release in feature_releases(engine, "flags", f)
    )


def invalid_object(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """argparse's refusal of a flag whose value vLLM parses into a config class
    (``--compilation-config``, ``--speculative-config``: ``parse_type(json.loads)``, then the
    class validates it): the value must be a JSON object of the class's fields. A flag with a
    short form that takes a bare level (``-O3``, FlexibleArgumentParser) is offered that."""
    spellings = m.group(1).split("/")
    flag = next((f for f in spellings if f.startswith("--")), spellings[0])
    named = m.group(2)
    fixes = [
        Fix(
            "advice",
            f"{flag} '{{...}}'",
            note=f"a JSON object of {named}'s fields, quoted for the shell",
        )
    ]
    if "-O" in spellings:
        fixes.insert(0, Fix("advice", "-O3", note="a bare optimization level goes to -O, 0 to 3"))
    return (
        f"argparse refused the value of {flag}: vLLM reads it as JSON into {named}, which "
        "refused it (the next line names the field and what it should be)",
        fixes,
    )


def arguments_required(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """argparse's refusal of a command line without an argument it requires (``error: the
    following arguments are required: model_tag``): give it. vLLM's ``serve`` takes the model
    as its first, positional argument (``model_tag``, cli/serve.py)."""
    named = [a.strip() for a in m.group(1).split(",") if a.strip()]
    fixes = [
        Fix("advice", "vllm serve MODEL ...", note="the model path or Hub ID, first after serve")
        if name == "model_tag"
        else Fix("advice", f"give {name}", note="the command line lacks it")
        for name in named
    ]
    return (f"the command line lacks what its parser requires: {', '.join(named)}", fixes)


def unexpected_argument(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """Python's refusal of an engine argument this release's ``EngineArgs`` (or ``LLM``,
    ``ServerArgs``) does not take (``TypeError: __init__() got an unexpected keyword argument
    'limit_mm_per_prompt'``, from a program that passes engine arguments itself): the releases
    read whose parser defines it, or that dropped it. An argument no read release of either
    engine defines is not an engine's, and the rule does not hold (no fix)."""
    flag = "--" + m.group(1).replace("_", "-")
    for engine in ctx.engines():
        if has_feature(engine, "flags") and feature_span(engine, "flags", flag) is not None:
            return (
                f"the program passes {m.group(1)} to the engine, and this {engine} release does "
                "not take it (an argument of other releases)",
                _defined_elsewhere(engine, flag),
            )
    return ("", [])


def port_in_use(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """The server's listening socket could not bind: another process (often an earlier server
    still shutting down) holds the port (uvicorn's ``error while attempting to bind on address
    ('0.0.0.0', 8000): address already in use``; the engines bind --host/--port themselves)."""
    host, port = m.group(1), m.group(2)
    return (
        f"port {port} on {host or 'all addresses'} is taken by another process",
        [
            Fix("flag", f"--port {int(port) + 1}", note="a free port"),
            Fix(
                "advice",
                f"or stop what listens on {port}: ss -ltnp 'sport = :{port}'",
                note="an earlier server may still be shutting down",
            ),
        ],
    )


# vLLM's parse_type(json.loads) (vllm/engine/arg_utils.py): a flag whose field is a dict takes
# JSON alone from 0.10 on, where k=v pairs (nullable_kvs, 0.5 to 0.9) are refused with "Value V
# cannot be converted to <function loads at ...>." (a report's title cuts it at "<function");
# read per release in snapshots/engines/json-flags-vllm.txt.
JSON_ONLY_SINCE = "0.10.1"
NOT_JSON = re.compile(
    r"argument (--[\w-]+): Value (.+?) cannot be converted to <function(?: loads|$)"
)
_PAIRS = re.compile(r"\s*([A-Za-z_][\w.-]*)\s*([=:])\s*([^,=:{}]+?)\s*(?:,|$)")


def _scalar(text: str) -> object:
    """A pair's value as JSON reads it: a number, true/false/null, else the string."""
    try:
        return json.loads(text)
    except ValueError:
        return text.strip("'\"")


def _as_json(value: str) -> tuple[str, str] | None:
    """The JSON object ``value`` means, with the shape it was given in, or None for a value
    that is not one unambiguously: ``image=4,audio=1`` (the k=v pairs of releases before
    0.10), ``image:4`` and ``{image: 4}`` (a YAML-like mapping, keys unquoted), and JSON whose
    quotes arrive backslash-escaped (``{\\"image\\":1}`` inside single quotes, where the
    shell passes the backslashes on)."""
    unescaped = value.replace('\\"', '"')
    if unescaped != value:
        try:
            loaded = json.loads(unescaped)
        except ValueError:
            loaded = None
        if isinstance(loaded, dict):
            return json.dumps(loaded), "its quotes escaped with backslashes that reach the engine"
    inner = value.strip()
    braced = inner.startswith("{") and inner.endswith("}")
    inner = inner[1:-1] if braced else inner
    pairs = _PAIRS.findall(inner)
    joined = ",".join(f"{k}{sep}{v}" for k, sep, v in pairs)
    if not pairs or joined != re.sub(r"\s+", "", inner):
        return None
    separators = {sep for _k, sep, _v in pairs}
    if separators == {"="} and not braced:
        shape = "the k=v form that releases before 0.10 took"
    else:
        shape = "a mapping with unquoted keys, which JSON does not read"
    return json.dumps({k: _scalar(v) for k, _sep, v in pairs}), shape


def json_flag(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """A dict-typed flag given as something other than JSON: ``k=v`` pairs (the form vLLM
    0.5 to 0.9 took), a mapping with unquoted keys, or JSON whose quotes the shell passed on
    escaped; told as the same value in JSON where it reads as one unambiguously."""
    flag, value = m.group(1), m.group(2).strip().strip("'\"")
    read = _as_json(value)
    shape = read[1] if read else "not JSON"
    cause = (
        f"{flag} takes a JSON object in this vLLM release (its value is read with json.loads "
        f"alone, from {JSON_ONLY_SINCE} read on), and {value!r} is not one: {shape}"
    )
    if read is None:
        return cause, [Fix("advice", f"give {flag} as JSON, e.g. '{{\"key\": 1}}'")]
    given = read[0]
    return cause, [Fix("flag", f"{flag} {shlex.quote(given)}", note="the same value as JSON")]
