"""The transform model: a named, documented, parameterised edit of a checkpoint's files.

A transform is a TOML file; the built-in catalog and a user's own transforms use the same
format (see docs/transform-format.md).
"""

from __future__ import annotations

import datetime
import json
import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from patcher.errors import TransformError
from patcher.store.checkpoint import name_problem
from patcher.store.fsio import read_regular
from patcher.text.document import json_problem, strict_loads
from patcher.transforms.op_kinds import OP_KINDS

ParamType = Literal["int", "float", "bool", "str", "file", "json"]
PARAM_TYPES: tuple[str, ...] = ("int", "float", "bool", "str", "file", "json")
Scope = Literal["root", "language-model"]
# Ops on the file's text as a whole (a template, or a JSON file's leading byte-order mark);
# the JSON ops are the registry's (patcher.transforms.op_kinds).
TEXT_OPS = ("write", "strip-bom")
ALL_OPS = (*OP_KINDS, *TEXT_OPS)
# What an engine derives that a transform can claim to set (see patcher.engines).
EFFECTS = ("max_model_len", "kv_cache_dtype", "quantization", "dtype", "eos_token_id")
_NAME = re.compile(r"[a-z][a-z0-9-]*")
_TEMPLATE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}")


@dataclass(frozen=True, slots=True)
class Param:
    """A typed parameter; ``required`` when it has no default."""

    name: str
    type: ParamType
    help: str
    default: Any = None
    required: bool = True
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[Any, ...] | None = None
    # What the value means, checked beyond its type: "token-ids" (an integer id or a list of
    # them), "generation-keys" (an object of known generation_config.json keys), "class-name"
    # (a Python class name, not a list).
    meaning: str | None = None


MEANINGS = ("token-ids", "generation-keys", "class-name")


@dataclass(frozen=True, slots=True)
class Guard:
    """A condition on a value of the file: ``equals``, ``one_of``, ``exists`` or ``type``."""

    path: str
    equals: Any = None
    has_equals: bool = False
    one_of: tuple[Any, ...] | None = None
    exists: bool | None = None
    type: str | None = None


@dataclass(frozen=True, slots=True)
class Edit:
    """The operations on one file, with the conditions under which they run."""

    file: str
    ops: tuple[Mapping[str, Any], ...]
    optional: bool = False
    scope: Scope = "root"
    when: tuple[Guard, ...] = ()
    require: tuple[Guard, ...] = ()

    @property
    def is_text(self) -> bool:
        """Whether this edit replaces the whole file (non-JSON files such as templates)."""
        return any(op["op"] in TEXT_OPS for op in self.ops)


@dataclass(frozen=True, slots=True)
class Runtime:
    """What an engine can do instead of the file edit (for ``patcher overrides``)."""

    hf_overrides: Mapping[str, Any]
    flags: tuple[str, ...]
    nest_in_text_config: bool
    note: str
    requires: str | None = None


@dataclass(frozen=True, slots=True)
class Transform:
    """A named transform, with everything a user needs to decide whether to apply it."""

    name: str
    summary: str
    why: str
    undo_when: str
    evidence: tuple[str, ...]
    engine_flag: str | None
    symptom: str | None
    params: tuple[Param, ...]
    edits: tuple[Edit, ...]
    source: str
    text: str
    runtime: Runtime | None = None
    effects: Mapping[str, Any] = field(default_factory=dict)
    needed_when: tuple[str, ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        """The files this transform may touch, in order, without repeats."""
        return tuple(dict.fromkeys(edit.file for edit in self.edits))

    @property
    def explained_by(self) -> str:
        """The command that explains this transform, for a refusal's hint: ``patcher show``
        with its name (built in) or its file; a one-off edit's own help (it has no entry)."""
        import shlex

        if self.source in ("patcher set", "patcher unset"):
            return f"{self.source} --help"
        if self.source.startswith("builtin:"):
            return f"patcher show {self.name}"
        return f"patcher show {shlex.quote(self.source)}"

    def param(self, name: str) -> Param | None:
        """The parameter called ``name``, if any."""
        return next((p for p in self.params if p.name == name), None)

    def to_json(self, flags_verdict: str | None = None) -> dict[str, Any]:
        """The transform as JSON (``show --json``); ``flags_verdict``: whether its runtime flags
        work on the engine asked about."""
        return {
            "effects": dict(self.effects),
            "runtime": None
            if self.runtime is None
            else {
                "flags": list(self.runtime.flags),
                "hf_overrides": dict(self.runtime.hf_overrides),
                "requires": self.runtime.requires,
                "note": self.runtime.note,
                "on_engine": flags_verdict,
            },
            "name": self.name,
            "summary": self.summary,
            "why": self.why,
            "symptom": self.symptom,
            "undo_when": self.undo_when,
            "evidence": list(self.evidence),
            "engine_flag": self.engine_flag,
            "files": list(self.files),
            "params": [
                {
                    "name": p.name,
                    "type": p.type,
                    "help": p.help,
                    "default": p.default,
                    "required": p.required,
                }
                for p in self.params
            ],
            "source": self.source,
        }


class _Reader:
    """Validates the parsed TOML of one transform file, naming the key on every error."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, problem: str) -> TransformError:
        return TransformError(
            problem,
            file=self.source,
            pointer=where,
            hint="fix the transform file (format: docs/transform-format.md)",
        )

    def text(self, table: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str:
        value = table.get(key)
        if value is None and not required:
            return ""
        if not isinstance(value, str) or (required and not value.strip()):
            raise self.fail(f"{where}/{key}", "expected a non-empty string")
        return value.strip()

    def guards(self, raw: Any, where: str) -> tuple[Guard, ...]:
        if raw is None:
            return ()
        if not isinstance(raw, list):
            raise self.fail(where, "expected a list of conditions")
        guards: list[Guard] = []
        for index, item in enumerate(raw):
            here = f"{where}/{index}"
            if not isinstance(item, dict) or not isinstance(item.get("path"), str):
                raise self.fail(here, "a condition needs a 'path' (a JSON pointer)")
            self.pointer(item["path"], f"{here}/path")
            unknown = set(item) - {"path", "equals", "one_of", "exists", "type"}
            if unknown:
                raise self.fail(here, f"unknown key {sorted(unknown)[0]!r}")
            one_of = item.get("one_of")
            guards.append(
                Guard(
                    path=item["path"],
                    equals=item.get("equals"),
                    has_equals="equals" in item,
                    one_of=tuple(one_of) if isinstance(one_of, list) else None,
                    exists=item.get("exists"),
                    type=item.get("type"),
                )
            )
        return tuple(guards)

    def pointer(self, value: Any, where: str) -> None:
        if not isinstance(value, str) or (value and not value.startswith("/")):
            raise self.fail(where, "expected a JSON pointer such as '/quantization_config'")

    def op(self, raw: Any, where: str) -> Mapping[str, Any]:
        if not isinstance(raw, dict):
            raise self.fail(where, "an operation is a table with 'op' and 'path'")
        kind = raw.get("op")
        if kind not in ALL_OPS:
            raise self.fail(f"{where}/op", f"unknown op {kind!r} (use one of {', '.join(ALL_OPS)})")
        if kind not in TEXT_OPS:
            self.pointer(raw.get("path"), f"{where}/path")
        if kind in ("remove", "move") and raw.get("path") == "":
            raise self.fail(f"{where}/path", f"'{kind}' cannot take the whole document ('')")
        if "value_json" in raw:
            # TOML has no null: a value may also be given as JSON text.
            if "value" in raw or not isinstance(raw["value_json"], str):
                raise self.fail(where, "give either 'value' or 'value_json' (a JSON string)")
            try:
                raw = {
                    **{k: v for k, v in raw.items() if k != "value_json"},
                    "value": strict_loads(raw["value_json"]),
                }
            except (ValueError, RecursionError) as exc:
                problem = exc.msg if isinstance(exc, json.JSONDecodeError) else json_problem(exc)
                raise self.fail(f"{where}/value_json", f"invalid JSON ({problem})") from None
        if kind in ("add", "replace", "test", "set", "merge", "append", "discard", "write") and (
            "value" not in raw
        ):
            raise self.fail(where, f"'{kind}' needs a 'value'")
        if kind in ("move", "copy"):
            self.pointer(raw.get("from"), f"{where}/from")
        allowed = {"op", "path", "value", "from", "if_present", "if_absent", "ignore_null"}
        unknown = set(raw) - allowed
        if unknown:
            raise self.fail(where, f"unknown key {sorted(unknown)[0]!r}")
        return dict(raw)

    def param(self, name: str, raw: Any) -> Param:
        where = f"/params/{name}"
        if not isinstance(raw, dict):
            raise self.fail(where, "a parameter is a table with 'type' and 'help'")
        kind = raw.get("type")
        if kind not in PARAM_TYPES:
            raise self.fail(f"{where}/type", f"expected one of {', '.join(PARAM_TYPES)}")
        for bound in ("min", "max"):
            value = raw.get(bound)
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
            ):
                raise self.fail(f"{where}/{bound}", f"expected a number, got {value!r}")
        if "default" in raw and raw["default"] is not None:
            self.default(kind, raw["default"], f"{where}/default")
        choices = raw.get("choices")
        meaning = raw.get("meaning")
        if meaning is not None and meaning not in MEANINGS:
            raise self.fail(f"{where}/meaning", f"expected one of {', '.join(MEANINGS)}")
        return Param(
            name=name,
            type=kind,
            help=self.text(raw, "help", where),
            default=raw.get("default"),
            required="default" not in raw,
            minimum=raw.get("min"),
            maximum=raw.get("max"),
            choices=tuple(choices) if isinstance(choices, list) else None,
            meaning=meaning,
        )

    def default(self, kind: str, value: Any, where: str) -> None:
        number = isinstance(value, int | float) and not isinstance(value, bool)
        fits = {
            "int": number and isinstance(value, int),
            "float": number and math.isfinite(value),
            "bool": isinstance(value, bool),
            "str": isinstance(value, str),
            "file": isinstance(value, str),
            "json": True,
        }[kind]
        if not fits:
            raise self.fail(where, f"a {kind} parameter cannot default to {value!r}")

    def runtime(self, raw: Any) -> Runtime | None:
        if raw is None:
            return None
        if not isinstance(raw, dict):
            raise self.fail("/runtime", "expected a table")
        unknown = set(raw) - {"hf_overrides", "flags", "nest_in_text_config", "note", "requires"}
        if unknown:
            raise self.fail("/runtime", f"unknown key {sorted(unknown)[0]!r}")
        overrides = raw.get("hf_overrides", {})
        flags = raw.get("flags", [])
        if not isinstance(overrides, dict):
            raise self.fail("/runtime/hf_overrides", "expected a table")
        if not isinstance(flags, list) or not all(isinstance(f, str) for f in flags):
            raise self.fail("/runtime/flags", "expected a list of strings")
        return Runtime(
            hf_overrides=overrides,
            flags=tuple(flags),
            nest_in_text_config=bool(raw.get("nest_in_text_config", False)),
            note=self.text(raw, "note", "/runtime", required=False),
            requires=self.text(raw, "requires", "/runtime", required=False) or None,
        )

    def needed_when(self, raw: Any) -> tuple[str, ...]:
        if raw is None:
            return ()
        errors = raw.get("startup_errors") if isinstance(raw, dict) else None
        if not isinstance(errors, list) or not all(isinstance(e, str) for e in errors):
            raise self.fail(
                "/needed_when", "expected startup_errors = [codes of the engine model's errors]"
            )
        return tuple(errors)

    def effects(self, raw: Any) -> dict[str, Any]:
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            raise self.fail("/effects", "expected a table")
        for key in raw:
            if key not in EFFECTS:
                raise self.fail(
                    f"/effects/{key}", f"unknown effect (use one of {', '.join(EFFECTS)})"
                )
        return dict(raw)

    def edit(self, raw: Any, where: str) -> Edit:
        if not isinstance(raw, dict):
            raise self.fail(where, "an edit is a table with 'file' and 'ops'")
        file = self.text(raw, "file", where)
        problem = name_problem(file)
        if problem is not None:
            raise self.fail(f"{where}/file", f"{file}: {problem[0]}")
        ops_raw = raw.get("ops")
        if not isinstance(ops_raw, list) or not ops_raw:
            raise self.fail(f"{where}/ops", "expected a non-empty list of operations")
        ops = tuple(self.op(op, f"{where}/ops/{i}") for i, op in enumerate(ops_raw))
        text_op = next((op["op"] for op in ops if op["op"] in TEXT_OPS), None)
        if text_op is not None and len(ops) != 1:
            raise self.fail(
                f"{where}/ops", f"'{text_op}' edits the whole file and must stand alone"
            )
        scope = raw.get("scope", "root")
        if scope not in ("root", "language-model"):
            raise self.fail(f"{where}/scope", "expected 'root' or 'language-model'")
        unknown = set(raw) - {"file", "ops", "optional", "scope", "when", "require"}
        if unknown:
            raise self.fail(where, f"unknown key {sorted(unknown)[0]!r}")
        return Edit(
            file=file,
            ops=ops,
            optional=bool(raw.get("optional", False)),
            scope=scope,
            when=self.guards(raw.get("when"), f"{where}/when"),
            require=self.guards(raw.get("require"), f"{where}/require"),
        )


def parse_transform(text: str, source: str) -> Transform:
    """Parse and validate a transform file's TOML text."""
    reader = _Reader(source)
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise TransformError(
            f"invalid TOML ({json_problem(exc)})", file=source, hint="fix the transform file"
        ) from None
    stray = first_datetime(data, "")
    if stray is not None:
        raise reader.fail(stray, "TOML dates and times are not JSON values; quote it as a string")
    name = reader.text(data, "name", "")
    if not _NAME.fullmatch(name):
        raise reader.fail(
            "/name", "a name is lower-case words joined by '-', starting with a letter"
        )
    params_raw = data.get("params", {})
    if not isinstance(params_raw, dict):
        raise reader.fail("/params", "expected a table of parameters")
    edits_raw = data.get("edits")
    if not isinstance(edits_raw, list) or not edits_raw:
        raise reader.fail("/edits", "expected at least one [[edits]] table")
    evidence = data.get("evidence", [])
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        raise reader.fail("/evidence", "expected a list of links")
    known = {
        "name",
        "summary",
        "why",
        "undo_when",
        "evidence",
        "engine_flag",
        "symptom",
        "params",
        "edits",
        "runtime",
        "effects",
        "needed_when",
    }
    unknown = set(data) - known
    if unknown:
        raise reader.fail(f"/{sorted(unknown)[0]}", "unknown key")
    params = tuple(reader.param(n, p) for n, p in params_raw.items())
    transform = Transform(
        name=name,
        summary=reader.text(data, "summary", ""),
        why=reader.text(data, "why", ""),
        undo_when=reader.text(data, "undo_when", ""),
        evidence=tuple(evidence),
        engine_flag=reader.text(data, "engine_flag", "", required=False) or None,
        symptom=reader.text(data, "symptom", "", required=False) or None,
        params=params,
        edits=tuple(reader.edit(e, f"/edits/{i}") for i, e in enumerate(edits_raw)),
        source=source,
        text=text,
        runtime=reader.runtime(data.get("runtime")),
        effects=reader.effects(data.get("effects")),
        needed_when=reader.needed_when(data.get("needed_when")),
    )
    used = [edits_raw, data.get("runtime", {}), data.get("effects", {})]
    for name_used in _template_names(used):
        if transform.param(name_used) is None:
            raise reader.fail(
                "/edits", f"uses '{{{{{name_used}}}}}' but declares no such parameter"
            )
    return transform


def first_datetime(value: Any, where: str) -> str | None:
    """The pointer of the first TOML date/time value, if any (JSON has none)."""
    if isinstance(value, datetime.date | datetime.time):
        return where or "/"
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        found = first_datetime(item, f"{where}/{key}")
        if found is not None:
            return found
    return None


def _template_names(value: Any) -> set[str]:
    if isinstance(value, str):
        return set(_TEMPLATE.findall(value))
    if isinstance(value, dict):
        return set().union(*(_template_names(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(_template_names(v) for v in value)) if value else set()
    return set()


def substitute(value: Any, params: Mapping[str, Any]) -> Any:
    """Replace ``{{name}}`` in strings: a whole-string template keeps the parameter's type."""
    if isinstance(value, str):
        whole = _TEMPLATE.fullmatch(value.strip())
        if whole:
            return params[whole.group(1)]
        return _TEMPLATE.sub(lambda m: str(params[m.group(1)]), value)
    if isinstance(value, dict):
        return {k: substitute(v, params) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, params) for v in value]
    return value


def load_transform_file(path: Path) -> Transform:
    """Load a user's transform file."""
    try:
        text = read_regular(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TransformError(
            f"cannot read transform file ({exc})", file=path, hint="check the path"
        ) from None
    return parse_transform(text, str(path))
