"""overrides' fixes held to the engine: the ``--hf-overrides`` and flags it prints for the
applied transforms make the engine derive, from the upstream files, what it derives from the
patched ones. vLLM applies ``--hf-overrides`` to the config it loads (a dict under a nested
config such as text_config is merged into it, any other key replaced), so the upstream
config.json with the overrides merged in stands for the upstream files plus the flag."""

from __future__ import annotations

import copy
import json
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from patcher import api
from patcher.engines.engine import parse_engine
from patcher.engines.files import read_config_files
from patcher.engines.model import derive
from patcher.store.checkpoint import open_checkpoint
from tests.conftest import CONFIGS, MODELS
from tests.test_golden import params_for

WITH_OVERRIDES = [
    name
    for name in sorted(t.name for t in api.list_transforms())
    if api.get_transform(name).runtime.hf_overrides
]
ENGINES = ("vllm==0.16.0", "vllm==0.33.0")


def _merged(config: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(config)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict) and key == "text_config":
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def _view(root: Path, engine: str) -> tuple[Any, ...]:
    view = derive(parse_engine(engine), read_config_files(open_checkpoint(root)), None)
    return (
        view.max_model_len.value,
        view.quantization.value,
        view.kv_cache_dtype.value,
        view.dtype.value,
        [e.code for e in view.startup_errors],
    )


def test_the_transforms_with_overrides_are_the_ones_expected() -> None:
    assert {"set-context-length", "set-architectures", "set-rope-scaling-yarn"} <= set(
        WITH_OVERRIDES
    )


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("name", WITH_OVERRIDES)
def test_the_printed_overrides_do_what_the_file_edit_does(
    tmp_path: Path, name: str, model: str, engine: str
) -> None:
    patched = tmp_path / "patched model"  # a space: the printed line must quote it
    shutil.copytree(CONFIGS / model, patched)
    try:
        result = api.apply(patched, name, params_for(name, tmp_path))
    except api.DoesNotApplyError:
        pytest.skip("the transform does not apply to this config")
    if result.outcome != "applied" or not any(f.path == "config.json" for f in result.files):
        pytest.skip("no config.json edit")
    printed = api.overrides(patched, engine=engine)
    words = shlex.split(printed.command)  # the line runs as pasted: it splits as argv
    assert words[:3] == ["vllm", "serve", str(patched)]
    hf = json.loads(words[words.index("--hf-overrides") + 1]) if "--hf-overrides" in words else {}
    assert hf == printed.hf_overrides
    flagged = tmp_path / "upstream-with-flags"
    shutil.copytree(CONFIGS / model, flagged)
    config = json.loads((flagged / "config.json").read_text())
    (flagged / "config.json").write_text(json.dumps(_merged(config, hf)))
    assert _view(flagged, engine) == _view(patched, engine), printed.command
