"""doctor on a model whose name has a '.' that transformers imports its own code under
(patcher/advice/module_names.py; the reading in snapshots/engines/module-names-transformers.txt,
tools/read_module_names.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from patcher.advice.doctor import diagnose_text
from patcher.advice.module_names import SANITIZED_FROM
from tests.conftest import wheel_of

READING = Path(__file__).resolve().parents[2] / "snapshots/engines/module-names-transformers.txt"
# One line per rule (test_doctor's marker test takes them with its own cases).
MODULE_NAME_LINES = ["ModuleNotFoundError: No module named 'transformers_modules.Qwen1'"]


def test_the_release_named_is_the_first_read_that_replaces_the_dot() -> None:
    rows = [r.split("\t") for r in READING.read_text().splitlines() if r and r[0] != "#"]
    before = [r for r in rows if Version(r[0]) < Version(SANITIZED_FROM)]
    since = [r for r in rows if Version(r[0]) >= Version(SANITIZED_FROM)]
    assert before and since
    assert all(r[1:] == ["no", "no"] for r in before)
    assert all(r[1:] == ["yes", "yes"] for r in since)  # a local directory's and a Hub name's


@pytest.mark.parametrize(
    "module",
    [
        "transformers_modules.Qwen1",  # a local "Qwen1.5-7B-Chat", cut at its dot
        "transformers_modules.baidu.ERNIE-4",  # the Hub's "baidu/ERNIE-4.5-VL-28B-A3B-PT"
        "transformers_modules.ERNIE-4.5-VL-28B-A3B-PT",  # named whole by a relative import
    ],
)
def test_a_name_with_a_dot_is_renamed_or_transformers_replaces_it(module: str) -> None:
    found = diagnose_text(
        '  File "/root/.cache/huggingface/modules/transformers_modules/m/processing_m.py", '
        "line 46, in <module>\n"
        "    from .tokenization_m import MTokenizer\n"
        f"ModuleNotFoundError: No module named '{module}'\n"
    )
    assert found.code == "remote-code-path"
    assert found.fixes[0].text.startswith("the model in a directory whose name has no '.'")
    assert found.fixes[1].text == f"pip install 'transformers>={SANITIZED_FROM}'"


@pytest.mark.parametrize(
    "module",
    [
        "transformers_modules",  # Ray's workers without the module cache (vllm#4169)
        "transformers_modules.Qwen-7B-Chat",  # a whole name, absent on another node
        "transformers_modules.mymodel.modeling_mymodel",  # the code's own file missing
        "transformers_modules.Qwen-7B.modeling_qwen2",  # one that ends in a digit, too
    ],
)
def test_a_module_missing_for_another_reason_is_not_this(module: str) -> None:
    found = diagnose_text(f"ModuleNotFoundError: No module named '{module}'\n")
    assert found.code != "remote-code-path"


def test_the_reader_tells_a_release_that_replaces_the_dot(tmp_path: Path) -> None:
    from tools.read_module_names import sanitizes

    old = (
        "import os\n"
        "def get_cached_module_file(path):\n"
        "    if os.path.isdir(path):\n"
        "        submodule = os.path.basename(path)\n"
        "    else:\n"
        "        submodule = path.replace('/', os.path.sep)\n"
    )
    new = (
        "import os\n"
        "def _sanitize_module_name(name):\n"
        "    return name.replace('.', '_dot_')\n"
        "def get_cached_module_file(path):\n"
        "    if os.path.isdir(path):\n"
        "        submodule = _sanitize_module_name(os.path.basename(path))\n"
        "    else:\n"
        "        submodule = os.path.sep.join(map(_sanitize_module_name, path.split('/')))\n"
    )
    archive = wheel_of(tmp_path / "t.whl", {"transformers/dynamic_module_utils.py": new})
    assert sanitizes(archive.read("transformers/dynamic_module_utils.py").decode()) == (
        True,
        True,
    )
    assert sanitizes(old) == (False, False)
