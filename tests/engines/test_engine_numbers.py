"""The numbers the engine model computes with (patcher.engines.numbers): whatever JSON value sits
in their place, the model derives a view or refuses in one line naming it; it never crashes."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from patcher.engines.engine import parse_engine
from patcher.engines.files import ConfigFiles
from patcher.engines.gpus import parse_gpu
from patcher.engines.model import derive
from patcher.engines.numbers import MAX_COUNT, MAX_FACTOR, NUMBER_KEYS
from patcher.errors import InputFileError
from tests.conftest import CONFIGS, SNAPSHOTS

KIMI = json.loads((SNAPSHOTS / "example" / "kimi-k2.5-nvfp4" / "config.json").read_text())
QWEN = json.loads((CONFIGS / "deepseek-r1-distill-qwen-32b" / "config.json").read_text())
ENGINES = [parse_engine(e) for e in ("vllm==0.16.0", "vllm==0.33.0", "sglang==0.5.23")]
ROPE = [
    (rope, key)
    for rope in ("rope_scaling", "rope_parameters", "rope_parameters/full_attention")
    for key in ("factor", "original_max_position_embeddings")
]
NAME = -1  # a place that takes a name: any string
PLACES = (
    [
        (f"{base}/{rope}/{key}", NAME)
        for base in ("", "/text_config")
        for rope in ("rope_scaling", "rope_parameters")
        for key in ("rope_type", "type")
    ]
    + [(f"/{key}", MAX_COUNT) for key in NUMBER_KEYS]
    + [(f"/text_config/{key}", MAX_COUNT) for key in NUMBER_KEYS]
    + [
        (f"{base}/{rope}/{key}", MAX_FACTOR if key == "factor" else MAX_COUNT)
        for base in ("", "/text_config")
        for rope, key in ROPE
    ]
)
values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**1400),
    st.sampled_from([0, 1, 2**20, 2**20 + 1, 4096, 64, 10**30, int(1e30), 2**100, 2**100 + 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.sampled_from(["yarn", "default", "llama3", "longrope", "su", "dynamic"]),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)


def _put(config: dict[str, Any], pointer: str, value: Any) -> None:
    *parents, last = pointer.strip("/").split("/")
    node = config
    for part in parents:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[last] = value


def _usable(value: Any, limit: int, pointer: str) -> bool:
    if limit == NAME:
        return isinstance(value, str)
    if value is None:
        # a length key may be null; a RoPE number (and the one vLLM copies into RoPE) may not
        return "/rope_" not in pointer and not pointer.endswith("original_max_position_embeddings")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return value == value and 0 <= value <= limit  # NaN is not equal to itself


@settings(max_examples=400, deadline=None)
@given(
    base=st.sampled_from([KIMI, QWEN]),
    place=st.sampled_from(PLACES),
    value=values,
    engine=st.sampled_from(ENGINES),
)
def test_any_value_where_a_number_belongs_is_derived_or_refused(
    base: dict[str, Any], place: tuple[str, int], value: Any, engine: Any
) -> None:
    pointer, limit = place
    config = copy.deepcopy(base)
    _put(config, pointer, value)
    files = ConfigFiles(config, None, "/m/config.json")
    try:
        view = derive(engine, files, parse_gpu("h100"))
    except InputFileError as refusal:
        assert not _usable(value, limit, pointer), refusal.message
        assert refusal.message.startswith(f"/m/config.json at {pointer} (JSON pointer): ")
        assert len(refusal.message) < 300 and "\n" not in refusal.message
    else:
        assert _usable(value, limit, pointer)
        assert isinstance(view.max_model_len.value, int)
