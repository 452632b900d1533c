"""doctor on an import written for another release of the engine: the releases read that have
the module or the name (tools/read_exports.py), and where the log's release keeps it."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from patcher.advice.doctor import diagnose_text
from patcher.advice.engine_exports import exports
from tools import read_exports

BANNER = "INFO 02-10 17:06:00 [api_server.py:1] vLLM API server version {}\n"


def _admitted(text: str, engine: str) -> list[str]:
    """The releases read that a ``pip install 'ENGINE<specifier>'`` fix admits."""
    spec = SpecifierSet(re.fullmatch(rf"pip install '{engine}(.*)'", text).group(1))  # type: ignore[union-attr]
    read = exports(engine)
    assert read is not None
    return [r for r in read.releases if Version(r) in spec]


def _holding(engine: str, module: str) -> set[str]:
    read = exports(engine)
    assert read is not None
    return set(read.holding(read.modules.get(module, 0)))


def test_a_module_of_another_release_names_releases_that_all_have_it() -> None:
    read = exports("vllm")
    assert read is not None
    # a module some releases read have and others not, and a release without it
    module = "vllm.inputs.data"
    held = _holding("vllm", module)
    assert held and len(held) < len(read.releases)
    without = next(r for r in reversed(read.releases) if r not in held)
    found = diagnose_text(
        BANNER.format(without) + f"ModuleNotFoundError: No module named '{module}'\n"
    )
    assert found.code == "engine-module"
    assert f"vllm {without} has no {module}" in found.cause
    admitted = _admitted(found.fixes[0].text, "vllm")
    assert admitted and set(admitted) <= held  # every release it lets pip pick has it


def test_a_module_the_log_s_release_has_is_a_folder_shadowing_it() -> None:
    read = exports("vllm")
    assert read is not None
    module = "vllm.inputs.data"
    present = next(r for r in read.releases if r in _holding("vllm", module))
    found = diagnose_text(
        BANNER.format(present) + f"ModuleNotFoundError: No module named '{module}'\n"
    )
    assert "shadows the installed release" in found.cause
    assert not any(f.kind == "dependency" for f in found.fixes)


def test_a_module_every_release_has_names_no_release() -> None:
    module = "vllm.sampling_params"
    read = exports("vllm")
    assert read is not None and _holding("vllm", module) == set(read.releases)
    found = diagnose_text(f"ModuleNotFoundError: No module named '{module}'\n")
    assert "shadows the installed release" in found.cause


def test_a_name_of_another_release_names_releases_that_have_it_there() -> None:
    read = exports("sglang")
    assert read is not None
    module, name = "sglang.srt.utils", "is_port_available"
    held = set(read.holding(read.name_mask(module, name)))
    assert held and len(held) < len(read.releases)
    found = diagnose_text(
        f"ImportError: cannot import name '{name}' from '{module}' (/x/sglang/srt/utils/"
        "__init__.py)\n"
    )
    assert found.code == "library-version"
    for fix in found.fixes:
        if fix.kind == "dependency":
            admitted = _admitted(fix.text, "sglang")
            assert admitted and set(admitted) <= held


def test_the_failing_import_s_name_is_found_where_the_log_s_release_keeps_it() -> None:
    read = exports("vllm")
    assert read is not None
    module = "vllm.v1.attention.backends.registry"
    held = _holding("vllm", module)
    release = next(
        r for r in read.releases if r not in held and read.keeping("AttentionBackendEnum", r)
    )
    log = (
        BANNER.format(release)
        + "Traceback (most recent call last):\n"
        + '  File "/w/plugin/platform.py", line 23, in <module>\n'
        + f"    from {module} import AttentionBackendEnum\n"
        + f"ModuleNotFoundError: No module named '{module}'\n"
    )
    found = diagnose_text(log)
    moved = [f.text for f in found.fixes if f.text.startswith("or change the import")]
    assert moved and all(m in moved[0] for m in read.keeping("AttentionBackendEnum", release)[:1])


def test_a_namespace_folder_of_the_engine_s_name_is_told_as_such() -> None:
    found = diagnose_text("ImportError: cannot import name 'LLM' from 'vllm' (unknown location)\n")
    assert "without __init__.py" in found.cause
    assert "another directory" in found.fixes[0].text


def test_a_source_tree_of_the_engine_is_told_from_an_installed_release() -> None:
    # Python names the file it found: a tree outside site-packages has no built extensions
    tree = diagnose_text(
        "ImportError: cannot import name 'activation_ops' from 'vllm' "
        "(/workspace/vllm-main/vllm/__init__.py)\n"
    )
    assert "source tree in /workspace/vllm-main" in tree.cause
    assert [f.text for f in tree.fixes][
        1
    ] == "or build the tree in place: pip install -e /workspace/vllm-main"
    installed = diagnose_text(
        "ImportError: cannot import name 'activation_ops' from 'vllm' "
        "(/usr/lib/python3.10/site-packages/vllm/__init__.py)\n"
    )
    assert "source tree" not in installed.cause


def test_the_reading_binds_definitions_own_imports_and_star_imports(tmp_path: Path) -> None:
    wheel = tmp_path / "eng-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("eng/__init__.py", "from eng.utils import *\nimport torch\n")
        archive.writestr("eng/utils/__init__.py", "from .common import *\n")
        archive.writestr(
            "eng/utils/common.py",
            "import os\nfrom typing import Any\nfrom ..core import helper as h\n"
            "def is_port_available(): ...\n_private = 1\nif os.name:\n    class Late: ...\n",
        )
        archive.writestr("eng/core.py", "def helper(): ...\nX: int = 2\n")
        archive.writestr("eng/data/readme.txt", "not a module")
    read = read_exports.read_wheel(wheel, "eng")
    assert read["eng.utils.common"] == {"is_port_available", "_private", "Late", "h"}
    assert read["eng.core"] == {"helper", "X"}
    # a star import brings the public names, through a chain of them
    assert {"is_port_available", "Late", "h"} <= read["eng.utils"]
    assert "_private" not in read["eng.utils"]
    assert "is_port_available" in read["eng"] and "torch" not in read["eng"]
    assert set(read) == {"eng", "eng.utils", "eng.utils.common", "eng.core"}


def test_the_names_a_module_s_getattr_serves_are_bound_there(tmp_path: Path) -> None:
    # a release that moved a name keeps it importable from the old module (PEP 562)
    wheel = tmp_path / "eng-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("eng/__init__.py", "")
        archive.writestr(
            "eng/old.py",
            "_MOVED = {'moved_a': 'eng.new'}\n_ALSO = ('moved_b', 'moved_c')\n"
            "def __getattr__(name):\n"
            "    if name == 'get_tokenizer' or name in _MOVED or name in _ALSO:\n"
            "        return 1\n"
            "    if name in ('moved_d',) or name in _MOVED.keys():\n"
            "        return 2\n"
            "    raise AttributeError(name)\n",
        )
        archive.writestr(
            "eng/other.py",
            "def __getattr__(attr):\n"
            "    if attr == 'removed':\n"
            "        raise ImportError('removed in 2.0')\n"
            "    return attr == 'x'\n",
        )
    read = read_exports.read_wheel(wheel, "eng")
    assert read["eng.old"] >= {"get_tokenizer", "moved_a", "moved_b", "moved_c", "moved_d"}
    # a comparison it returns, or a branch that only raises, serves no name
    assert read["eng.other"] == {"__getattr__"}


def test_a_name_vllm_moved_but_kept_importable_is_answered_with_the_last_release_keeping_it() -> (
    None
):
    # vLLM 0.12 to 0.21 keep get_tokenizer in vllm.transformers_utils.tokenizer through its
    # __getattr__ (moved to vllm.tokenizers); 0.22 drops the module (LocalAI#10252's kind)
    log = (
        '  File "/build/backend/python/vllm/backend.py", line 30, in <module>\n'
        "    from vllm.transformers_utils.tokenizer import get_tokenizer\n"
        "ModuleNotFoundError: No module named 'vllm.transformers_utils.tokenizer'\n"
    )
    found = diagnose_text(log)
    assert found.fixes[0].text == "pip install 'vllm<=0.21.0'"


def test_a_missing_module_s_releases_are_those_that_have_every_name_the_import_asks() -> None:
    read = exports("vllm")
    assert read is not None
    module, name = "vllm.model_executor.layers.attention", "MLAAttention"
    with_name = set(read.holding(read.name_mask(module, name)))
    assert with_name < _holding("vllm", module)  # the name came later than the module
    log = (
        '  File "/w/plugin/model_runner.py", line 62, in <module>\n'
        f"    from {module} import Attention, {name}\n"
        f"ModuleNotFoundError: No module named '{module}'\n"
    )
    found = diagnose_text(log)
    admitted = _admitted(found.fixes[0].text, "vllm")
    assert admitted and set(admitted) <= with_name


def test_a_module_only_the_oldest_releases_read_had_names_them() -> None:
    # SGLang 0.1's vllm.model_executor.input_metadata, gone in vLLM 0.4.0 (sglang#350's kind):
    # vLLM 0.2.7 and 0.3.3 are read for what they let other code import.
    module = "vllm.model_executor.input_metadata"
    read = exports("vllm")
    assert read is not None and read.releases[0] == "0.2.7"
    held = _holding("vllm", module)
    assert held and "0.4.0.post1" not in held
    found = diagnose_text(f"ModuleNotFoundError: No module named '{module}'\n")
    assert found.code == "engine-module"
    admitted = _admitted(found.fixes[0].text, "vllm")
    assert admitted and set(admitted) <= held


def test_a_library_module_an_engine_imports_names_the_library_s_releases_that_have_it() -> None:
    # SGLang before 0.4 imports outlines.fsm.regex, which outlines 0.1 dropped
    module = "outlines.fsm.regex"
    held = _holding("outlines", module)
    read = exports("outlines")
    assert read is not None and held and "0.1.0" not in held
    log = (
        '  File "/usr/local/lib/python3.11/site-packages/sglang/srt/constrained/__init__.py", '
        "line 22, in <module>\n"
        "    from outlines.fsm.regex import FSMInfo, make_byte_level_fsm\n"
        f"ModuleNotFoundError: No module named '{module}'\n"
    )
    found = diagnose_text(log)
    assert found.code == "library-module"
    assert "the engine (or code beside it) imports" in found.cause
    admitted = _admitted(found.fixes[0].text, "outlines")
    names = ("FSMInfo", "make_byte_level_fsm")
    assert admitted and all(  # every release pip may pick has the module with both names
        all(r in read.holding(read.name_mask(module, n)) for n in names) for r in admitted
    )


def test_a_library_name_an_engine_imports_names_the_releases_whose_module_has_it() -> None:
    module, name = "outlines.fsm.json_schema", "build_regex_from_object"
    read = exports("outlines")
    assert read is not None
    held = set(read.holding(read.name_mask(module, name)))
    assert held and read.releases[-1] not in held  # a later release dropped it
    found = diagnose_text(f"ImportError: cannot import name '{name}' from '{module}'\n")
    assert found.code == "library-version"
    admitted = _admitted(found.fixes[0].text, "outlines")
    assert admitted and set(admitted) <= held


def test_a_library_module_every_release_has_gets_no_release_answer() -> None:
    read = exports("outlines")
    assert read is not None
    full = (1 << len(read.releases)) - 1
    every = next(m for m, mask in read.modules.items() if "." in m and mask == full)
    found = diagnose_text(f"ModuleNotFoundError: No module named '{every}'\n")
    assert found.code != "library-module"


def test_an_attribute_a_module_lacks_is_answered_like_an_import_of_it() -> None:
    # Python's words when code asks the module for the name after importing it: the same
    # reading (vllm.envs serves its variables through __getattr__; 0.12 dropped VLLM_USE_V1)
    read = exports("vllm")
    assert read is not None
    held = set(read.holding(read.name_mask("vllm.envs", "VLLM_USE_V1")))
    found = diagnose_text(
        "INFO 01-20 13:01:00 [api_server.py:1] vLLM API server version 0.16.0\n"
        "AttributeError: module 'vllm.envs' has no attribute 'VLLM_USE_V1'\n"
    )
    assert found.code == "library-version"
    admitted = _admitted(found.fixes[0].text, "vllm")
    assert admitted and set(admitted) <= held and "0.16.0" not in held
    # a module caught half imported is no release's doing
    circular = diagnose_text(
        "AttributeError: module 'vllm.envs' has no attribute 'VLLM_USE_V1' (most likely due to "
        "a circular import)\n"
    )
    assert circular.code != "library-version"
