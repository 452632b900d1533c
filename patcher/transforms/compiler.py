"""Compile a transform against the current files: one guarded RFC 6902 patch per file, its
inverse, and the new bytes, all computed in memory.

Lenient forms (``if_present``, ``set``, ``append``, guards) are resolved here against the
current values, so the recorded patches are plain RFC 6902. Every ``remove`` and ``replace``
is preceded by a ``test`` of the old value, every inverse step by a ``test`` of the new one.
Inverse steps that re-insert a value carry ``x-raw``, its exact source text (RFC 6902 says
unknown members are ignored), so a forced revert can put back ``1e30`` rather than ``1e+30``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from typing import Any, Literal

import jsonpatch

from patcher.errors import DoesNotApplyError, InputFileError, TransformError
from patcher.results import ShortRepr
from patcher.store.fsio import Digest, sha256
from patcher.store.snapshot import Snapshot
from patcher.text import jsontext, pointers, scanner
from patcher.text.document import MISSING as _MISSING
from patcher.text.document import Op, canonical, decode_text, json_problem, not_utf8
from patcher.text.jsontext import JsonText
from patcher.transforms.definition import Edit, Guard, Transform, substitute
from patcher.transforms.op_kinds import OP_KINDS, Resolving, described
from patcher.transforms.params import ResolvedParams


@dataclass(frozen=True, slots=True, repr=False)
class FilePlan(ShortRepr):
    """What applying a transform does to one file."""

    path: str
    kind: Literal["json", "text"]
    before: bytes
    after: bytes
    forward: tuple[Op, ...]
    inverse: tuple[Op, ...]
    link: str | None
    before_hash: str = field(init=False, repr=False)
    after_hash: str = field(init=False, repr=False)
    before_digest: InitVar[Digest | None] = None  # ``before``'s, when already being hashed

    def __post_init__(self, before_digest: Digest | None) -> None:
        # Each buffer is hashed once, here; everything after uses these.
        before_hash = sha256(self.before) if before_digest is None else before_digest.result()
        object.__setattr__(self, "before_hash", before_hash)
        object.__setattr__(self, "after_hash", sha256(self.after))


@dataclass(slots=True)
class _FileState:
    path: str
    before: bytes
    text: str  # a text file's current text ("" for JSON, whose bytes are in ``json``)
    json: JsonText | None
    kind: Literal["json", "text"]
    link: str | None
    forward: list[Op] = field(default_factory=list)
    inverse: list[Op] = field(default_factory=list)
    original: JsonText | None = None  # the untouched document, with its scan, to verify against
    digest: Digest | None = None  # of ``before``, started as soon as it is read

    @property
    def doc(self) -> JsonText:
        assert self.json is not None
        return self.json


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _guard_holds(guard: Guard, value: Any) -> bool:
    if guard.exists is not None and (value is not _MISSING) != guard.exists:
        return False
    if guard.has_equals and (value is _MISSING or canonical(value) != canonical(guard.equals)):
        return False
    if guard.one_of is not None and (
        value is _MISSING or canonical(value) not in {canonical(v) for v in guard.one_of}
    ):
        return False
    if guard.type is not None:
        if value is _MISSING:
            return False
        name = _type_name(value)
        if guard.type != name and not (guard.type == "number" and name == "integer"):
            return False
    return True


def _expected(guard: Guard) -> str:
    if guard.has_equals:
        return json.dumps(guard.equals)
    if guard.one_of is not None:
        return "one of " + ", ".join(json.dumps(v) for v in guard.one_of)
    if guard.type is not None:
        return f"{'an' if guard.type[0] in 'aeiou' else 'a'} {guard.type}"  # an integer, an array
    return "present" if guard.exists else "absent"


_found = described


def _does_not_apply(
    transform: Transform, file: str, pointer: str, problem: str
) -> DoesNotApplyError:
    return DoesNotApplyError(problem, file=file, pointer=pointer, hint=transform.explained_by)


def _not_finite(value: Any) -> bool:
    """Whether ``value`` holds NaN or an infinity (Python's JSON reads them; JSON has none)."""
    if isinstance(value, float):
        return value != value or value in (float("inf"), float("-inf"))
    if isinstance(value, dict):
        return any(_not_finite(v) for v in value.values())
    if isinstance(value, list):
        return any(_not_finite(v) for v in value)
    return False


class _Compiler:
    def __init__(
        self,
        snapshot: Snapshot,
        transform: Transform,
        params: ResolvedParams,
    ):
        self.snapshot = snapshot
        self.checkpoint = snapshot.checkpoint
        self.transform = transform
        self.params = params
        self.states: dict[str, _FileState] = {}

    def path(self, relative: str) -> Path:
        """Where ``relative`` is, for messages (held bytes stand for the checkpoint's file)."""
        return self.snapshot.path(relative)

    def fail(self, relative: str, pointer: str, problem: str) -> DoesNotApplyError:
        return _does_not_apply(
            self.transform, str(self.checkpoint.root / relative), pointer, problem
        )

    def pointers(self, file: str) -> list[str]:
        """Every pointer the transform may read or edit in ``file`` (to scan in one pass)."""
        found: list[str] = []
        for edit in self.transform.edits:
            if edit.file != file or edit.is_text:
                continue
            paths = [g.path for g in (*edit.when, *edit.require)]
            for op in edit.ops:
                op = substitute(dict(op), self.params.values)
                paths += [op["path"]] + ([op["from"]] if "from" in op else [])
            bases = ["", "/text_config"] if edit.scope == "language-model" else [""]
            found += [base + path for base in bases for path in paths]
        return found

    def load(self, edit: Edit) -> _FileState | None:
        if edit.file in self.states:
            return self.states[edit.file]
        path = self.path(edit.file)
        # A folder or a pipe in the file's place is refused, not skipped as a missing file.
        data = self.snapshot.read(edit.file)
        if data is None:
            if edit.optional:
                return None
            raise _does_not_apply(
                self.transform, str(path), "", "file not found, and this transform needs it"
            )
        hint = f"fix the file, then run: patcher apply {self.checkpoint.arg} {self.transform.name}"
        link = self.snapshot.link(edit.file)
        digest = Digest(data)  # hashed while the file is validated
        if edit.is_text:
            text = decode_text(data, str(path), hint)
            state = _FileState(edit.file, data, text, None, "text", link)
        else:
            bad = scanner.check_utf8(data)
            if bad is not None:
                raise not_utf8(data, bad, str(path), hint)
            document = JsonText(data)
            try:
                document.prepare(self.pointers(edit.file))
            except scanner.JsonSyntaxError as exc:
                raise InputFileError(f"invalid JSON at {exc}", file=path, hint=hint) from None
            except jsontext.DuplicateKeyError as exc:
                raise exc.refusal(self.checkpoint.root / edit.file) from None
            except (RecursionError, ValueError) as exc:
                raise InputFileError(json_problem(exc), file=path, hint=hint) from None
            state = _FileState(
                edit.file, data, "", document, "json", link, original=document.fork()
            )
        state.digest = digest
        self.states[edit.file] = state
        return state

    def run(self) -> tuple[FilePlan, ...]:
        for edit in self.transform.edits:
            state = self.load(edit)
            if state is None:
                continue
            if state.kind == "text" or edit.is_text:
                self.write_text(state, edit)
                continue
            try:
                self.edit_json(state, edit)
            except UnicodeEncodeError:
                raise self.not_unicode(edit.file) from None
            except jsontext.DuplicateKeyError as exc:
                raise exc.refusal(self.checkpoint.root / edit.file) from None
            except (RecursionError, ValueError) as exc:
                path = self.path(edit.file)
                raise InputFileError(json_problem(exc), file=path, hint="fix the file") from None
        plans = []
        for state in self.states.values():
            if not state.forward:
                continue
            if state.kind == "json":
                after = state.doc.data
                self.verify(state)
            else:
                try:
                    after = state.text.encode("utf-8")
                except UnicodeEncodeError:
                    raise self.not_unicode(state.path) from None
            plans.append(
                FilePlan(
                    path=state.path,
                    kind=state.kind,
                    before=state.before,
                    after=after,
                    forward=tuple(state.forward),
                    inverse=tuple(state.inverse),
                    link=state.link,
                    before_digest=state.digest,
                )
            )
        return tuple(plans)

    def not_unicode(self, relative: str) -> TransformError:
        return TransformError(
            "a new value is not valid Unicode (a lone surrogate such as \\ud800)",
            file=self.path(relative),
            hint=self.transform.explained_by,
        )

    def write_text(self, state: _FileState, edit: Edit) -> None:
        if state.kind != "text" or not edit.is_text:
            raise self.fail(edit.file, "", "one transform cannot both edit and replace a file")
        if edit.ops[0]["op"] == "strip-bom":
            new = state.text.removeprefix("\ufeff")
        else:
            new = substitute(edit.ops[0]["value"], self.params.values)
        if not isinstance(new, str):
            raise self.fail(edit.file, "", "'write' needs a string value")
        if new == state.text:
            return
        state.forward.append({"op": "replace", "path": "", "value": new})
        state.inverse.insert(0, {"op": "replace", "path": "", "value": state.text})
        state.text = new

    def edit_json(self, state: _FileState, edit: Edit) -> None:
        doc = state.doc
        base = ""
        if edit.scope == "language-model" and doc.kind("/text_config") == "object":
            base = "/text_config"
        for guard in edit.when:
            if not _guard_holds(guard, doc.get(base + guard.path)):
                return
        for guard in edit.require:
            value = doc.get(base + guard.path)
            if not _guard_holds(guard, value):
                raise self.fail(
                    edit.file,
                    base + guard.path,
                    f"expected {_expected(guard)}, found {_found(value)}; this transform does not "
                    "understand this layout and changed nothing",
                )
        for raw_op in edit.ops:
            op = substitute(dict(raw_op), self.params.values)
            op["path"] = base + op["path"]
            if "from" in op:
                op["from"] = base + op["from"]
            default = _default_named(raw_op, self.params.defaulted)
            for concrete in self.resolve(state, op):
                if default is not None and concrete["op"] == "replace":
                    # A default never rewrites a value the checkpoint chose (DeepSeek-V3's
                    # own YaRN factor 40 is not set-rope-scaling-yarn's 4).
                    raise self.fail(
                        edit.file,
                        concrete["path"],
                        f"holds {_found(state.doc.get(concrete['path']))}; the default "
                        f"{default}={json.dumps(concrete['value'])} would replace it, so "
                        f"nothing changed (give --set {default}=... to mean it)",
                    )
                self.apply(state, concrete)

    def resolve(self, state: _FileState, op: Op) -> list[Op]:
        """``op`` resolved against the file's current values by its kind's entry in the
        registry (patcher.transforms.op_kinds)."""
        ctx = Resolving(
            state.doc,
            lambda pointer, problem: self.fail(state.path, pointer, problem),
            lambda other: self.resolve(state, other),
        )
        return OP_KINDS[op["op"]](ctx, op)

    def apply(self, state: _FileState, op: Op) -> None:
        kind, path, doc = op["op"], op["path"], state.doc
        old = doc.get(path)
        if old is not _MISSING and _not_finite(old):
            # NaN equals nothing, itself included: no RFC 6902 test could ever guard it.
            raise InputFileError(
                "holds NaN or Infinity, which is not JSON, so the edit cannot be guarded",
                file=str(self.checkpoint.root / state.path),
                pointer=path,
                hint="replace it by hand with a JSON value (a number, or null), then run the "
                "command again",
            )
        if kind == "test":
            if old is _MISSING or canonical(old) != canonical(op["value"]):
                raise self.fail(
                    state.path,
                    path,
                    f"test failed: expected {_found(op['value'])}, found {_found(old)}",
                )
            state.forward.append(op)
            return
        if kind == "add":
            self.apply_add(state, op, old)
            return
        if old is _MISSING:
            raise self.fail(state.path, path, f"nothing to {kind} here")
        if kind == "remove":
            raw = doc.remove(path)
            state.inverse.insert(0, {"op": "add", "path": path, "value": old, "x-raw": raw})
        else:
            raw = doc.replace(path, op["value"])
            state.inverse[:0] = [
                {"op": "test", "path": path, "value": op["value"]},
                {"op": "replace", "path": path, "value": old, "x-raw": raw},
            ]
        state.forward += [{"op": "test", "path": path, "value": old}, op]

    def apply_add(self, state: _FileState, op: Op, old: Any) -> None:
        doc = state.doc
        path = op["path"]
        tokens = pointers.split_pointer(path)
        parent_pointer = pointers.join_pointer(tokens[:-1])
        parent_kind = doc.kind(parent_pointer)
        if parent_kind not in ("object", "array"):
            raise self.fail(
                state.path, parent_pointer, "cannot add here: the parent object does not exist"
            )
        if parent_kind == "array":
            size = len(doc.container(tokens[:-1]).slots)
            index = size if tokens[-1] == "-" else int(tokens[-1]) if tokens[-1].isdigit() else -1
            if not 0 <= index <= size:
                raise self.fail(state.path, path, f"cannot add here: no index {tokens[-1]!r}")
            path = pointers.join_pointer([*tokens[:-1], str(index)])
            op = {"op": "add", "path": path, "value": op["value"]}
            inverse: list[Op] = [{"op": "remove", "path": path}]
            forward = [op]
            doc.add(path, op["value"])
        elif old is not _MISSING:
            raw = doc.replace(path, op["value"])
            inverse = [{"op": "replace", "path": path, "value": old, "x-raw": raw}]
            forward = [{"op": "test", "path": path, "value": old}, op]
        else:
            inverse = [{"op": "remove", "path": path}]
            forward = [op]
            doc.add(path, op["value"])
        state.forward += forward
        state.inverse[:0] = [{"op": "test", "path": path, "value": op["value"]}, *inverse]

    def verify(self, state: _FileState) -> None:
        """Check the text edits against the RFC 6902 patch they claim to be, at no more cost
        than the edit: the patch applied by jsonpatch to the old document, as far as the edited
        paths reach, must equal the new bytes rescanned along those paths, and every value
        beside the paths must hash the same as before (the first scan validated those)."""
        assert state.original is not None
        paths = sorted({op[k] for op in state.forward for k in ("path", "from") if k in op})
        expected = jsonpatch.apply_patch(state.original.sparse(paths), state.forward)
        edited = state.doc.rescanned()
        edited.prepare(paths)
        if not jsontext.same_sparse(expected, edited.sparse(paths)):
            raise AssertionError(f"{state.path}: text edit and patch disagree (a patcher bug)")


def _default_named(op: Mapping[str, Any], defaulted: frozenset[str]) -> str | None:
    """The parameter an op's value is, when that value is exactly a defaulted ``{{param}}``."""
    value = op.get("value")
    if not isinstance(value, str):
        return None
    match = re.fullmatch(r"\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}", value)
    return match.group(1) if match and match.group(1) in defaulted else None


def _vocabulary_size(data: bytes | None) -> tuple[int, str] | None:
    """config.json's vocab_size (its text_config's for a multimodal config) and where, or
    None."""
    try:
        config = json.loads(data) if data is not None else None
    except ValueError:
        return None  # the transform's own edit reports an unreadable config.json
    if not isinstance(config, dict):
        return None
    text = config.get("text_config")
    nested = isinstance(text, dict) and "vocab_size" in text
    size = (text if isinstance(text, dict) and nested else config).get("vocab_size")
    if isinstance(size, int) and not isinstance(size, bool) and size > 0:
        return size, "/text_config/vocab_size" if nested else "/vocab_size"
    return None


def _check_token_ids(snapshot: Snapshot, transform: Transform, params: ResolvedParams) -> None:
    """A token id given for a token-ids parameter must be inside the model's vocabulary: an
    id past it is one the model never generates, so an engine would never stop on it."""
    given = [p for p in transform.params if p.meaning == "token-ids" and p.name in params.recorded]
    if not given:
        return
    if (found := _vocabulary_size(snapshot.read("config.json"))) is None:
        return
    size, pointer = found
    for param in given:
        value = params.recorded[param.name]
        for token in value if isinstance(value, list) else [value]:
            if isinstance(token, int) and token >= size:
                raise TransformError(
                    f"{transform.name}: parameter {param.name!r}: token id {token} is past the "
                    f"vocabulary (config.json vocab_size {size}): the model never generates it",
                    file=str(snapshot.checkpoint.root / "config.json"),
                    pointer=pointer,
                    hint=f"give ids below {size}; the tokenizer's special tokens are in "
                    "tokenizer_config.json added_tokens_decoder",
                )


def compile_transform(
    snapshot: Snapshot, transform: Transform, params: ResolvedParams
) -> tuple[FilePlan, ...]:
    """Compile ``transform`` against the files of ``snapshot``: the checkpoint's as it read
    them, or bytes it holds in memory (a rebuild's, which stand for the checkpoint's and are
    plain, not links). Nothing is written."""
    _check_token_ids(snapshot, transform, params)
    return _Compiler(snapshot, transform, params).run()
