"""Promise 1 and 2 as properties: apply then revert is byte-identical for any formatting, an
apply changes only the edited members, and A, B, revert A, revert B ends byte-identical."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patcher import api
from patcher.text.pointers import join_pointer, split_pointer
from patcher.transforms.definition import Edit, Transform
from tests.strategies import document_texts, plain, trees
from tests.text.test_jsontext import check_minimal, pointers

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def transform(name: str, *ops: dict[str, Any]) -> Transform:
    return Transform(
        name=name,
        summary="s",
        why="w",
        undo_when="u",
        evidence=(),
        engine_flag=None,
        symptom=None,
        params=(),
        edits=(Edit(file="config.json", ops=tuple(ops)),),
        source="test",
        text=f"name = '{name}'",
    )


def checkpoint(text: str) -> tuple[tempfile.TemporaryDirectory[str], Path]:
    holder = tempfile.TemporaryDirectory()
    root = Path(holder.name)
    (root / "config.json").write_bytes(text.encode("utf-8"))
    return holder, root


def draw_edit(data: st.DataObject, doc: Any, avoid: str | None = None) -> dict[str, Any]:
    choices = [(p, k) for p, k in pointers(doc) if avoid is None or not _related(p, avoid)]
    choices = [c for c in choices if c[1] == "object"]
    if not choices:
        key = data.draw(st.text(max_size=4).filter(lambda k: k not in doc))
        return {"op": "add", "path": join_pointer([key]), "value": plain(data.draw(trees))}
    pointer, _ = data.draw(st.sampled_from(choices))
    if data.draw(st.booleans()):
        return {"op": "remove", "path": pointer}
    return {"op": "replace", "path": pointer, "value": plain(data.draw(trees))}


def _related(a: str, b: str) -> bool:
    ta, tb = split_pointer(a), split_pointer(b)
    n = min(len(ta), len(tb))
    return ta[:n] == tb[:n]


@SETTINGS
@given(st.data())
def test_apply_then_revert_is_byte_identical(data: st.DataObject) -> None:
    text = document_texts(data)
    op = draw_edit(data, json.loads(text))
    holder, root = checkpoint(text)
    with holder:
        result = api.apply(root, transform("t", op))
        after = (root / "config.json").read_text(encoding="utf-8")
        if result.outcome == "applied":
            check_minimal(text, after, op["path"], "object")
        api.revert(root, every=True)
        assert (root / "config.json").read_bytes() == text.encode("utf-8")


@SETTINGS
@given(st.data())
def test_revert_earlier_under_later_then_later(data: st.DataObject) -> None:
    text = document_texts(data)
    doc = json.loads(text)
    first = draw_edit(data, doc)
    holder, root = checkpoint(text)
    with holder:
        api.apply(root, transform("a", first))
        middle = json.loads((root / "config.json").read_text(encoding="utf-8"))
        second = draw_edit(data, middle, avoid=first["path"])
        if _related(second["path"], first["path"]):
            return
        api.apply(root, transform("b", second))
        applied = {e.transform for e in api.status(root).applied}
        if "a" in applied:
            api.revert(root, "a")
        if "b" in applied:
            api.revert(root, "b")
        assert (root / "config.json").read_bytes() == text.encode("utf-8")
        assert not api.status(root).applied
