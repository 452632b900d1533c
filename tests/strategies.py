"""Hypothesis strategies: JSON documents in generated formattings (as text)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st


@dataclass(frozen=True)
class Num:
    """A JSON number kept as its spelling (``1e30``, ``1.0``, huge integers)."""

    text: str


numbers = st.one_of(
    st.from_regex(r"\A-?(0|[1-9][0-9]{0,31})(\.[0-9]{1,4})?([eE][+-]?[0-9]{1,2})?\Z"),
    st.sampled_from(["1e30", "1.0", "1000000000000000019884624838656", "-0.0", "1E+2", "0.1"]),
).map(Num)
texts = st.text(
    alphabet=st.characters(max_codepoint=0x2FFF, exclude_categories=("Cs",)), max_size=8
)
keys = st.one_of(texts, st.sampled_from(["a/b", "~", "~1", "x~0/y", "0", "-", ""]))
leaves = st.one_of(st.none(), st.booleans(), numbers, texts)
trees = st.recursive(
    leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(keys, children, max_size=4),
    ),
    max_leaves=14,
)
documents = st.dictionaries(keys, trees, min_size=1, max_size=5)


@dataclass(frozen=True)
class Layout:
    """Formatting choices drawn per container."""

    indent: str | None
    key_sep: str
    item_sep: str


layouts = st.builds(
    Layout,
    indent=st.sampled_from([None, "", " ", "  ", "    ", "\t", "   "]),
    key_sep=st.sampled_from([":", ": ", " : "]),
    item_sep=st.sampled_from([",", ", "]),
)


def render(data: st.DataObject, value: Any, depth: int = 0, base: str = "") -> str:
    """Serialise ``value`` drawing a layout for every container and an escape style per string."""
    if isinstance(value, Num):
        return value.text
    if isinstance(value, str):
        escaped = json.dumps(value, ensure_ascii=data.draw(st.booleans()))
        return escaped.replace("/", "\\/") if data.draw(st.booleans()) else escaped
    if not isinstance(value, dict | list):
        return json.dumps(value)
    layout = data.draw(layouts)
    if isinstance(value, dict):
        items = [
            render(data, k, depth + 1)
            + layout.key_sep
            + render(data, v, depth + 1, base + (layout.indent or ""))
            for k, v in value.items()
        ]
        opener, closer = "{", "}"
    else:
        items = [render(data, v, depth + 1, base + (layout.indent or "")) for v in value]
        opener, closer = "[", "]"
    if not items:
        return opener + closer
    if layout.indent is None:
        return opener + layout.item_sep.join(items) + closer
    inner = base + layout.indent
    return opener + "\n" + ",\n".join(inner + i for i in items) + "\n" + base + closer


def plain(value: Any) -> Any:
    """The Python value a parser gives for a generated tree."""
    if isinstance(value, Num):
        return json.loads(value.text)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def document_texts(data: st.DataObject) -> str:
    """A whole document: a generated tree, rendered, with or without a final newline."""
    tree = data.draw(documents)
    text = render(data, tree)
    return text + data.draw(st.sampled_from(["", "\n", "\n\n", "  \n"]))
