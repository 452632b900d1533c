"""doctor's answer to a config field transformers' class lacks in the installed release
(patcher/advice/config_fields.py), held to the reading of the wheels
(tools/read_config_fields.py: patcher/advice/config-fields-transformers.json.gz)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from patcher.advice.config_fields import _indices, _reading
from patcher.advice.doctor import diagnose_text
from tools.read_config_fields import read, spans

_QWEN2_MOE = (
    "INFO 07-01 10:00:00 api_server.py:177] vLLM API server version 0.5.0.post1\n"
    '[rank0]:   File "/venv/lib/python3.10/site-packages/vllm/model_executor/models/'
    'qwen2_moe.py", line 305, in __init__\n'
    "[rank0]:     if (layer_idx not in config.mlp_only_layers) and (\n"
    "[rank0]: AttributeError: 'Qwen2MoeConfig' object has no attribute 'mlp_only_layers'\n"
)


def _first_with(cls: str, field: str) -> str:
    releases, classes = _reading()
    return releases[_indices(classes[cls][field])[0]]


def test_a_field_a_later_transformers_gave_the_class_is_answered_with_that_release() -> None:
    found = diagnose_text(_QWEN2_MOE)
    first = _first_with("Qwen2MoeConfig", "mlp_only_layers")
    assert [f.text for f in found.fixes] == [f"pip install 'transformers>={first}'"]
    # the release before it in the reading has the class without the field
    releases, classes = _reading()
    before = releases[releases.index(first) - 1]
    assert releases.index(before) in _indices(classes["Qwen2MoeConfig"][""])


def test_a_field_transformers_dropped_is_answered_with_the_release_before() -> None:
    found = diagnose_text(
        '  File "/venv/lib/python3.12/site-packages/vllm/model_executor/models/llama.py", line '
        "120, in __init__\n"
        "AttributeError: 'LlamaConfig' object has no attribute 'max_length'\n"
    )
    # generation settings left the config classes (read): code reading them needs one before
    releases, classes = _reading()
    gone = releases[_indices(classes["LlamaConfig"]["max_length"])[-1] + 1]
    assert [f.text for f in found.fixes] == [f"pip install 'transformers<{gone}'"]


def test_a_field_no_release_gives_the_class_keeps_the_engines_answer() -> None:
    # Qwen2.5-Omni nests the text model's fields: no transformers has them on the outer class
    found = diagnose_text(
        "INFO 04-15 00:06:13 [api_server.py:981] vLLM API server version 0.8.2\n"
        "AttributeError: 'Qwen2_5OmniConfig' object has no attribute 'num_attention_heads'\n"
    )
    assert all("transformers" not in f.text for f in found.fixes)
    assert any(f.text.startswith("pip install 'vllm>=") for f in found.fixes)


def test_the_reader_takes_assignments_aliases_and_the_base_classes(tmp_path: Path) -> None:
    base = (
        "class PretrainedConfig:\n"
        "    def __init__(self, **kwargs):\n"
        "        self.pad_token_id = kwargs.pop('pad_token_id', None)\n"
        "        for name, default in self._defaults().items():\n"
        "            setattr(self, name, kwargs.pop(name, default))\n"
        "        setattr(self, 'chunk_size', 0)\n"
        "    @staticmethod\n"
        "    def _defaults():\n"
        "        return {'max_length': 20, 'num_beams': 1}\n"
    )
    model = (
        "from ...configuration_utils import PretrainedConfig\n"
        "class ToyConfig(PretrainedConfig):\n"
        "    attribute_map = {'num_attention_heads': 'n_head'}\n"
        "    def __init__(self, n_head=2, **kwargs):\n"
        "        self.n_head = n_head\n"
        "        super().__init__(**kwargs)\n"
        "    @property\n"
        "    def head_dim(self):\n"
        "        return 4\n"
        "class ToyTextConfig(ToyConfig):\n"
        "    pass\n"
    )
    wheel = tmp_path / "transformers-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("transformers/configuration_utils.py", base)
        archive.writestr("transformers/models/toy/configuration_toy.py", model)
    release, fields = read(str(wheel))
    assert release == "9.9.9"
    # setattr by name, and over the items of a dict a method returns (4.x's generation
    # defaults): read as fields, not as names a release dropped
    expected = {"n_head", "num_attention_heads", "head_dim", "pad_token_id", "chunk_size"}
    expected |= {"max_length", "num_beams"}
    assert expected <= fields["ToyTextConfig"]
    assert spans([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert _indices("0-2,5,7-8") == [0, 1, 2, 5, 7, 8]


def test_the_packaged_reading_is_what_the_reader_writes() -> None:
    releases, classes = _reading()
    assert releases == tuple(sorted(releases, key=lambda r: [int(p) for p in r.split(".")]))
    # every field kept varies: a field every release with the class has is left out
    for spans_ in classes.values():
        every = set(_indices(spans_[""]))
        for field, span in spans_.items():
            if field:
                assert set(_indices(span)) < every
