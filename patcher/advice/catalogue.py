"""The engines' own start-up errors, read from their source, and matching a log line to one.

``errors-<engine>.json`` (beside this module) holds every message a read release can raise or
log on its start-up path, as a template: literal text and holes (``tools/read_errors.py``
reads them with ``ast`` from each wheel and records the releases that have each wording).
:func:`match` finds the template a log line was made from and what filled its holes, so that a
family (``families.py``) can read the sizes, names and flags the message carries.

A line is looked up by its words: each template is filed under its rarest literal word, so a
line costs one split and a few dictionary lookups, however many templates there are. A
template with too little literal text to be told apart from others (``"{msg}"``,
``"Invalid value: {x}"``) is never matched: a guess there would be a false diagnosis.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal

from patcher.advice.packaged import packaged

Engine = Literal["vllm", "sglang", "transformers"]
ENGINES: tuple[Engine, ...] = ("vllm", "sglang", "transformers")
# The serving engines among them, and how their names are written in an answer.
SERVERS: tuple[Engine, ...] = ("vllm", "sglang")
ENGINE_NAMES: dict[Engine, str] = {
    "vllm": "vLLM",
    "sglang": "SGLang",
    "transformers": "transformers",
}
# The ``rope_type`` feature of a release whose get_rope reads only rope_scaling["type"]
# (tools/read_rope_types.py writes it).
ROPE_TYPE_KEY_ONLY = "type-key-only"
# Below this much literal text (letters and digits, first line) a template is too generic.
MIN_LITERAL = 24
# A line cut short (wrapped, or truncated by a log viewer) still matches when at least this
# many characters of the template's literal text were seen in order.
MIN_PREFIX = 40
# A message's first line is read up to here: the engines' longest first lines are well under
# it, and the lazy holes' backtracking on a hostile line grows with its length.
MAX_LINE = 2048
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{3,}")


@dataclass(frozen=True, slots=True)
class Template:
    """One error message of an engine's source: alternating literal text and holes."""

    engine: Engine
    exception: str
    parts: tuple[str, ...]
    file: str
    releases: tuple[str, ...]

    @property
    def head(self) -> tuple[str, ...]:
        """The parts of the message's first line (a log shows a message line by line)."""
        kept: list[str] = []
        for index, part in enumerate(self.parts):
            if index % 2 == 0 and "\n" in part:
                kept.append(part.split("\n", 1)[0])
                break
            kept.append(part)
        return tuple(kept)

    @property
    def literal(self) -> str:
        """The first line's literal text, holes left out."""
        return " ".join(p for p in self.head[::2] if p)

    @property
    def text(self) -> str:
        """The message as the source writes it, holes as ``{name}``."""
        return "".join(p if i % 2 == 0 else "{" + p + "}" for i, p in enumerate(self.parts))

    @property
    def matchable(self) -> bool:
        """Whether the template has enough literal text to be recognised in a log."""
        return sum(c.isalnum() for c in self.literal) >= MIN_LITERAL

    def holes(self) -> tuple[str, ...]:
        """The names (source expressions) of the first line's holes."""
        return self.head[1::2]


@dataclass(frozen=True, slots=True)
class Matched:
    """A log line read as one template: which template, and what filled each hole."""

    template: Template
    line: str
    values: tuple[tuple[str, str], ...]
    whole: bool = True  # False: the line was cut short; the holes after the cut are unknown
    # False: the message ends in a value and a full stop, and the line in the value alone (an
    # issue title): a template the line holds to its last word is the better reading
    exact: bool = True

    def value(self, *words: str) -> str | None:
        """The first hole whose name holds one of ``words`` (lower case), or None."""
        for name, value in self.values:
            if any(w in name.lower() for w in words):
                return value
        return None

    def number(self, *words: str) -> int | None:
        """The first whole number in the hole :meth:`value` finds."""
        text = self.value(*words)
        found = re.search(r"-?\d+", text or "")
        return int(found.group(0)) if found else None


def _fill(literals: tuple[str, ...], line: str) -> tuple[list[str], bool] | None:
    """What fills the holes between ``literals`` in ``line``: each literal found after the one
    before (leftmost), the text between them a hole; and False where the message ends in a hole
    and a full stop and the line in the hole alone (quoted without the stop). No backtracking,
    so a hostile line costs a few linear scans; the first literal is tried at its first few
    places."""
    start = 0
    for _attempt in range(8):
        at = line.find(literals[0], start)
        if at < 0 and len(literals) == 1 and literals[0].endswith(".") and not start:
            stem = literals[0].rstrip(".")  # a whole message quoted without its full stop
            at = line.rfind(stem) if stem and line.rstrip().endswith(stem) else -1
            return ([], True) if at >= 0 else None
        if at < 0:
            return None
        cursor, values, exact = at + len(literals[0]), [], True
        for index, literal in enumerate(literals[1:], 1):
            last = index == len(literals) - 1
            if not literal and last:
                values.append(line[cursor:])  # a trailing hole: the rest of the line
                cursor = len(line)
                continue
            found = line.find(literal, cursor)
            if found < 0 and last and literal.endswith("."):
                # quoted without its full stop (an issue title, a line cut at the sentence)
                stem, end = literal.rstrip("."), len(line.rstrip())
                found = end - len(stem) if line[:end].endswith(stem) else -1
                # a message that ends in a hole and its full stop: the hole runs to the end
                found = found if found > cursor or (stem and found == cursor) else -1
                # a message's own words found at the line's end read as surely as the whole;
                # a value running to the end, the stop its only literal, less so
                exact = bool(stem)
            if found < 0:
                break
            values.append(line[cursor:found])
            cursor = found + len(literal)
        else:
            return values, exact
        if not literals[0]:
            return None
        start = at + 1
    return None


@functools.cache
def _catalogue_file(name: str) -> dict[str, Any]:
    """An engine's catalogue file, parsed once: each reading below takes its own part."""
    found: dict[str, Any] = packaged(f"errors-{name}.json")
    return found


@functools.cache
def templates(engine: Engine | None = None) -> tuple[Template, ...]:
    """Every recorded template (of one engine, or of all)."""
    engines = ENGINES if engine is None else (engine,)
    found: list[Template] = []
    for name in engines:
        for entry in _catalogue_file(name)["templates"]:
            found.append(
                Template(
                    name,
                    entry["exception"],
                    tuple(entry["parts"]),
                    entry["file"],
                    tuple(entry["releases"]),
                )
            )
    return tuple(found)


@functools.cache
def _features(engine: Engine) -> dict[str, dict[str, list[str]]]:
    found: dict[str, dict[str, list[str]]] = _catalogue_file(engine).get("features", {})
    return found


def feature_releases(engine: Engine, feature: str, name: str) -> tuple[str, ...]:
    """The releases read of ``engine`` where ``name`` has ``feature``, oldest first
    (tools/read_model_classes.py): a vLLM model class's ``lora``, ``pp`` or ``bnb``; a server
    setting (``settings``); a parser a flag takes by name (``choices:--tool-call-parser``,
    ``choices:--reasoning-parser``)."""
    return tuple(_features(engine).get(feature, {}).get(name, ()))


def features_of(engine: Engine, feature: str) -> tuple[str, ...]:
    """Every name the releases read of ``engine`` recorded ``feature`` for."""
    return tuple(_features(engine).get(feature, {}))


def feature_by_release(engine: Engine, feature: str) -> dict[str, str]:
    """The value of a feature each release read has one of (its ``torch_pin``, its
    ``requires_python``, the ``glibc`` its extensions need), by release."""
    return {
        release: name
        for name, found in _features(engine).get(feature, {}).items()
        for release in found
    }


def features_named(engine: Engine, prefix: str) -> tuple[str, ...]:
    """Every feature recorded for ``engine`` whose name starts with ``prefix`` (the
    ``scheme_capability:<Scheme>`` of each compressed-tensors scheme, say)."""
    return tuple(f for f in _features(engine) if f.startswith(prefix))


def has_feature(engine: Engine, feature: str) -> bool:
    """Whether the releases read of ``engine`` recorded ``feature`` for any name."""
    return bool(_features(engine).get(feature))


def declared(engine: Engine, flag: str, within: tuple[str, ...] | None = None) -> bool:
    """Whether a read release of ``engine`` (one of ``within``, when given) has the flag
    ``flag``: its command-line parser defines it (``flags``, read per release: the server
    settings, vLLM's ``EngineArgs`` and SGLang's ``ServerArgs``, and the server's own flags),
    or, for a catalogue read before the parsers were, it declares the setting."""
    if engine == "transformers":
        return False
    having = (
        feature_releases(engine, "flags", flag)
        if has_feature(engine, "flags")
        else feature_releases(engine, "settings", flag[2:].replace("-", "_"))
    )
    return bool(having) if within is None else any(r in having for r in within)


def feature_span(engine: Engine, feature: str, name: str) -> tuple[str, str | None] | None:
    """The last unbroken run of releases read where ``name`` has ``feature``: its first
    release, and the first release read after it (None: the run reaches the newest read);
    None when no release read has it."""
    return span_where(engine, feature, lambda named: named == name)


def read_span(engine: Engine, feature: str, name: str) -> str | None:
    """:func:`feature_span` in words, for a fix's note: "0.4.0 on" where the run reaches the
    newest release read, "0.4.0 to 0.5.19" where it ends; None where no release read has it."""
    span = feature_span(engine, feature, name)
    if span is None:
        return None
    return (
        f"{span[0]} on"
        if span[1] is None
        else f"{span[0]} to {feature_releases(engine, feature, name)[-1]}"
    )


def span_where(
    engine: Engine, feature: str, accept: Callable[[str], bool]
) -> tuple[str, str | None] | None:
    """:func:`feature_span` over every name of ``feature`` that ``accept`` takes: the last
    unbroken run of releases read where one of them holds (a method's recorded minimum
    capability at or below a GPU's, say)."""
    having = {
        r for name, rels in _features(engine).get(feature, {}).items() if accept(name) for r in rels
    }
    return span_of(engine, having.__contains__)


def span_of(engine: Engine, holds: Callable[[str], bool]) -> tuple[str, str | None] | None:
    """The last unbroken run of releases read of ``engine`` where ``holds(release)``: its
    first release and the first release read after it (None: the run reaches the newest)."""
    span: tuple[str, str | None] | None = None
    start: str | None = None
    for release in releases(engine):
        if holds(release):
            start = start or release
            span = (start, None)
        elif start is not None:
            span, start = (start, release), None
    return span


def within(first: str, after: str | None) -> str:
    """A span of releases read as a pip specifier: ``>=first`` and, where a later release read
    is outside it, ``,<after``."""
    return f">={first}" + (f",<{after}" if after else "")


def at_or_below(candidates: Iterable[str], version: tuple[int, ...]) -> str | None:
    """The newest of ``candidates`` (releases read) at or below ``version``: the read release
    whose reading answers for a log of that version; None when all are newer."""
    below = [r for r in candidates if _key(r)[:3] <= version[:3]]
    return max(below, key=_key) if below else None


@functools.cache
def releases(engine: Engine) -> dict[str, str]:
    """The releases whose errors were read, oldest first, each with the date it was read."""
    read: dict[str, str] = _catalogue_file(engine).get("read", {})
    return dict(sorted(read.items(), key=lambda item: _key(item[0])))


@functools.cache
def model_types() -> dict[str, tuple[str, str]]:
    """Each model type a read transformers release's ``AutoConfig`` knows, with the first and
    the last release read that knows it."""
    read: dict[str, list[str]] = _catalogue_file("transformers").get("model_types", {})
    return {name: (span[0], span[1]) for name, span in read.items()}


@functools.cache
def config_classes() -> dict[str, tuple[str, str]]:
    """Each config class a read transformers release ships (``CONFIG_MAPPING_NAMES``' values,
    ``LlamaConfig``), with the first and the last release read that ships it."""
    read: dict[str, list[str]] = _catalogue_file("transformers").get("config_classes", {})
    return {name: (span[0], span[1]) for name, span in read.items()}


@functools.cache
def config_types() -> dict[str, str]:
    """The model type each transformers config class declares (``LlavaConfig``: ``llava``),
    read from transformers' wheels (tools/read_model_configs.py)."""
    read: dict[str, str] = _catalogue_file("transformers").get("config_types", {})
    return dict(read)


def no_longer_raised(engine: Engine, fragment: str, file: str | None = None) -> str | None:
    """The first release read after the last one with a message holding ``fragment`` (the
    release that no longer raises it), in ``file`` where given (a model's own config class),
    else in any file; None when the newest release read still does, or no release has it."""
    raising = [
        t.releases[-1]
        for t in templates(engine)
        if fragment in t.text and (file is None or t.file == file)
    ]
    if not raising:
        return None
    last = max(raising, key=_key)
    later = [r for r in releases(engine) if _key(r) > _key(last)]
    return min(later, key=_key) if later else None


def stopped_by_model(fragment: str) -> dict[str, str]:
    """Each transformers model whose own config class raised a message holding ``fragment``,
    with the first release read that no longer raises it there (models that still do are
    left out)."""
    files = {
        t.file for t in templates("transformers") if fragment in t.text and "/models/" in t.file
    }
    found = {f.split("/")[-2]: no_longer_raised("transformers", fragment, f) for f in files}
    return {model: after for model, after in sorted(found.items()) if after is not None}


def version_key(version: str) -> tuple[int, ...]:
    """A release's number as a tuple (its first three numbers), for comparing releases."""
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


_key = version_key


def strict_since() -> str | None:
    """The first transformers release read whose config classes validate strictly
    (huggingface_hub's ``@strict``), or None when none does."""
    found: str | None = _catalogue_file("transformers").get("strict_since")
    return found


@functools.cache
def flags(engine: Engine | None = None) -> frozenset[str]:
    """Every command-line flag the read engines' messages name (``--kv-cache-dtype``), or one
    engine's: the flags a message's setting can be told as, and no other."""
    return frozenset(
        flag for t in templates(engine) for flag in re.findall(r"--[a-z][a-z0-9-]*[a-z0-9]", t.text)
    )


@functools.cache
def _index() -> dict[str, tuple[Template, ...]]:
    """Each matchable template filed under its rarest literal word (and its start's)."""
    kept = [t for t in templates() if t.matchable]
    words = {t: set(_WORD.findall(t.literal)) for t in kept}
    counts = Counter(w for ws in words.values() for w in ws)
    index: dict[str, set[Template]] = {}
    for template, ws in words.items():
        # Also under the rarest word of the message's start, for a line cut short.
        early = set(_WORD.findall(template.head[0][: MIN_PREFIX + 8]))
        for group in (ws, early):
            if group:
                word = min(group, key=lambda w: (counts[w], -len(w)))
                index.setdefault(word, set()).add(template)
    return {word: tuple(group) for word, group in index.items()}


def _fill_cut(literals: tuple[str, ...], line: str) -> list[str] | None:
    """What fills the holes of a line cut short inside the message: the literals before the
    cut found in order (at least two, with ``MIN_PREFIX`` letters and digits between them), the
    line ending in a hole or in the start of the next literal, e.g. ``... max_model_len
    (128000).`` where the message goes on ``). This effectively limits ...``."""
    at = line.find(literals[0]) if literals[0] else -1
    if at < 0:
        return None
    cursor, values = at + len(literals[0]), []
    end = len(line.rstrip())
    for index, literal in enumerate(literals[1:], 1):
        found = line.find(literal, cursor) if literal else -1
        if found >= 0:
            values.append(line[cursor:found])
            cursor = found + len(literal)
            continue
        if index < 2 or sum(c.isalnum() for c in "".join(literals[:index])) < MIN_PREFIX:
            return None
        rest = line[cursor:end]
        # the hole, then the next literal's start (no longer than the literal itself)
        for split in range(max(0, len(rest) - len(literal)), len(rest) + 1):
            if literal.startswith(rest[split:]) and (split == len(rest) or rest[split:].strip()):
                return [*values, rest[:split]]
        return None
    return None


@functools.cache
def _compiled(template: Template) -> re.Pattern[str] | None:
    """The start of the message, for a line cut short (None: too short to tell apart)."""
    words: list[str] = []
    for word in template.head[0].split():
        if sum(c.isalnum() for c in "".join(words)) >= MIN_PREFIX:
            break
        words.append(word)
    if sum(c.isalnum() for c in "".join(words)) < MIN_PREFIX:
        return None
    return re.compile(r"\s*".join(re.escape(w) for w in words))


def _solid_words(parts: tuple[str, ...]) -> frozenset[str]:
    """The literal words of ``parts`` that a line shows whole: not glued to a hole."""
    found: set[str] = set()
    for index in range(0, len(parts), 2):
        part = parts[index]
        for word in _WORD.finditer(part):
            glued_left = word.start() == 0 and index > 0
            glued_right = word.end() == len(part) and index < len(parts) - 1
            if not glued_left and not glued_right:
                found.add(word.group(0))
    return frozenset(found)


@functools.cache
def _needs(template: Template) -> tuple[frozenset[str], frozenset[str] | None]:
    """The words a line must hold to be the template whole, and to be its start cut short."""
    if _compiled(template) is None:
        # cut after its second literal at the earliest (``_fill_cut``)
        cut = _solid_words(template.head[:3]) if len(template.head) > 3 else None
        return _solid_words(template.head), cut
    start = template.head[0]
    return _solid_words(template.head), _solid_words((start[: MIN_PREFIX + 8].rsplit(" ", 1)[0],))


def _first_sentence(first: str, line: str) -> bool:
    """Whether ``line`` ends with the message's first sentences only (a report or a wrapper
    quoting "DeepGEMM backend is not available or outdated." of a message that goes on
    "Please install ..."): at least ``MIN_PREFIX - 10`` letters and digits of them."""
    text = line.rstrip().rstrip("'\"")
    if not text.endswith("."):
        return False
    at = text.find(first[:20])
    said = text[at:] if at >= 0 else ""
    return (
        len(said) < len(first)
        and first.startswith(said)
        and sum(c.isalnum() for c in said) >= MIN_PREFIX - 10
    )


@functools.cache
def _unquoted(template: Template) -> Template:
    """``template`` with the backticks of its literal text left out."""
    parts = tuple(p.replace("`", "") if i % 2 == 0 else p for i, p in enumerate(template.parts))
    return replace(template, parts=parts)


def _read(template: Template, line: str) -> Matched | None:
    filled = _fill(template.head[::2], line)
    if filled is not None:
        filling, exact = filled
        pairs = tuple(zip(template.holes(), filling, strict=False))
        return Matched(template, line, pairs, exact=exact)
    prefix = _compiled(template)
    if prefix is not None and prefix.search(line) and len(line) >= 60:
        return Matched(template, line, (), whole=False)
    if prefix is not None and _first_sentence(template.head[0], line):
        return Matched(template, line, (), whole=False)
    if prefix is None and len(template.head) > 3:
        values = _fill_cut(template.head[::2], line)
        if values is not None:
            holes = zip(template.holes(), values, strict=False)
            return Matched(template, line, tuple(holes), whole=False)
    return None


def match(line: str, engine: Engine | None = None) -> Matched | None:
    """The template ``line`` was made from, or None. Where several fit, a template of
    ``engine`` (the log's) or of transformers (whose config classes the engines call) wins,
    then a whole match over a cut one, then the longest literal text, then vLLM's (the same
    answer in every run)."""
    index = _index()
    line = line[:MAX_LINE]
    words = set(_WORD.findall(line))
    candidates = {t for w in words for t in index.get(w, ())}
    best: Matched | None = None
    best_key: tuple[bool, bool, bool, int, str, str, tuple[str, ...]] | None = None
    for template in candidates:
        whole, start = _needs(template)
        if not whole <= words and (start is None or not start <= words):
            continue  # a word of the message is missing: no pattern can match
        found = _read(template, line)
        if found is None and "`" not in line and "`" in template.text:
            # quoted without the message's backticks (an issue title, rendered Markdown)
            bare = _read(_unquoted(template), line)
            found = replace(bare, template=template) if bare is not None else None
        if found is None:
            continue
        # The engine, file and parts last: a tie is settled the same way in every process (a
        # set's order is not), vLLM's over SGLang's when the log names neither.
        key = (
            template.engine in (engine, "transformers"),
            found.whole,
            found.exact,
            len(template.literal),
            template.engine,
            template.file,
            template.parts,
        )
        if best_key is None or key > best_key:
            best, best_key = found, key
    if best is None:
        return None
    # The same words raised where the source names its holes otherwise (self.x, then x): one
    # message, raised by every release of either.
    same = [
        t
        for t in candidates
        if t.engine == best.template.engine and t.head[::2] == best.template.head[::2]
    ]
    if len(same) > 1:
        releases = sorted({r for t in same for r in t.releases}, key=_key)
        best = replace(best, template=replace(best.template, releases=tuple(releases)))
    return best
