"""doctor's answer to a tokenizer attribute a transformers release dropped
(patcher/advice/tokenizer_attributes.py), held to the reading of the wheels
(snapshots/engines/tokenizer-attributes-transformers.txt)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from patcher.advice.doctor import diagnose_text
from patcher.advice.tokenizer_attributes import DROPPED_IN, LAST_WITH
from tests.conftest import SNAPSHOTS

READING = SNAPSHOTS / "engines" / "tokenizer-attributes-transformers.txt"


def _rows() -> dict[str, set[str]]:
    rows: dict[str, set[str]] = {}
    for line in READING.read_text().splitlines():
        if line and not line.startswith("#"):
            release, names = line.split("\t")
            rows[release] = set(names.split())
    return rows


def test_the_dropped_names_are_the_readings_difference_between_the_releases() -> None:
    rows = _rows()
    for release, names in DROPPED_IN.items():
        assert names == rows[LAST_WITH[release]] - rows[release]


def test_a_dropped_tokenizer_name_an_engine_reads_is_answered_with_the_earlier_transformers() -> (
    None
):
    found = diagnose_text(
        "(APIServer pid=7) INFO 03-06 14:50:33 [api_server.py:1839] vLLM API server version "
        "0.11.0\n"
        '(APIServer pid=7)   File "/venv/lib/python3.11/site-packages/vllm/transformers_utils/'
        'tokenizer.py", line 99, in get_cached_tokenizer\n'
        "(APIServer pid=7)     tokenizer.all_special_tokens_extended)\n"
        "(APIServer pid=7) AttributeError: Qwen2Tokenizer has no attribute "
        "all_special_tokens_extended. Did you mean: 'num_special_tokens_to_add'?\n"
    )
    assert found.fixes[0].text == "pip install 'transformers<5'"
    assert not any(f.kind == "transform" for f in found.fixes)


def test_a_name_no_release_dropped_keeps_the_tokenizer_files_answer() -> None:
    found = diagnose_text(
        '  File "/venv/lib/python3.11/site-packages/vllm/transformers_utils/tokenizer.py", line '
        "99, in get_tokenizer\n"
        "AttributeError: 'BaichuanTokenizer' object has no attribute 'sp_model'\n"
    )
    assert not any("transformers<5" in f.text for f in found.fixes)


def test_the_reader_takes_each_base_modules_class_names_from_the_wheel(tmp_path: Path) -> None:
    from tools.read_tokenizer_attributes import read

    wheel = tmp_path / "transformers-9.9.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(
            "transformers/tokenization_utils_base.py",
            "class SpecialTokensMixin:\n    pad = None\n    def all_special_ids(self): ...\n"
            "    def _private(self): ...\ndef module_function(): ...\n",
        )
        archive.writestr(
            "transformers/tokenization_python.py",
            "class PythonBackend:\n    def encode(self): ...\n",
        )
    assert read(str(wheel)) == ("9.9.0", {"pad", "all_special_ids", "encode"})
