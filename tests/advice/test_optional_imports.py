"""doctor on ``None`` called or read where an engine imported a name only if a library was
installed (tools/read_optional_imports.py's reading, patcher/advice/optional_imports.py)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from patcher.advice.doctor import diagnose_text
from patcher.advice.optional_imports import optional_imports
from tools import read_optional_imports

SITE = "/opt/conda/lib/python3.10/site-packages"


def _traceback(path: str, code: str, error: str, prefix: str = "") -> str:
    """A traceback whose last frame is ``path`` of the engine's package showing ``code``."""
    lines = [
        "Traceback (most recent call last):",
        f'  File "{SITE}/vllm/worker/worker.py", line 173, in determine_num_available_blocks',
        "    self.model_runner.profile_run()",
        f'  File "{SITE}/{path}", line 1201, in execute_model',
        f"    {code}",
        error,
    ]
    return "".join(f"{prefix}{line}\n" for line in lines)


def _recorded(engine: str, library: str) -> tuple[str, str, str]:
    """A file, a name and its module of the reading whose module is ``library``'s."""
    for path, names in optional_imports(engine).items():
        for name, (module, _) in sorted(names.items()):
            if module.split(".")[0] == library and name[0].isupper():
                return path, name, module
    raise AssertionError(f"no optional name of {library} recorded for {engine}")


@pytest.mark.parametrize(
    "prefix",
    [
        "",
        "[rank0]: ",
        "(VllmWorkerProcess pid=120787) ERROR 07-15 21:21:21 multiproc_worker_utils.py:226] ",
    ],
)
def test_a_name_set_to_none_without_its_library_and_called_names_the_library(prefix: str) -> None:
    path, name, module = _recorded("vllm", "flashinfer")
    log = _traceback(path, f"{name}(", "TypeError: 'NoneType' object is not callable", prefix)
    found = diagnose_text(log)
    assert found.code == "dependency"
    assert f"imports {name} from {module}" in found.cause
    (fix,) = found.fixes
    assert fix.kind == "dependency"
    # vLLM's own requirement spells the distribution (flashinfer-python), not the import
    assert fix.text == "pip install flashinfer-python"


def test_an_attribute_of_a_module_set_to_none_names_the_module_s_library() -> None:
    path = "vllm/executor/ray_utils.py"
    assert optional_imports("vllm")[path]["ray"][0] == "ray"
    log = _traceback(
        path,
        "ray.init(address=ray_address, ignore_reinit_error=True)",
        "AttributeError: 'NoneType' object has no attribute 'init'",
    )
    found = diagnose_text(log)
    assert found.code == "dependency"
    assert found.fixes[0].text == "pip install ray"


def test_none_called_on_a_line_without_an_optional_name_is_not_this_answer() -> None:
    path, name, _ = _recorded("vllm", "flashinfer")
    log = _traceback(path, "self.sampler(logits)", "TypeError: 'NoneType' object is not callable")
    assert diagnose_text(log).code != "dependency"
    # nor the name read in a file that does not set it to None
    other = _traceback(
        "vllm/worker/cache_engine.py", f"{name}(", "TypeError: 'NoneType' object is not callable"
    )
    assert diagnose_text(other).code != "dependency"


def test_the_reader_finds_names_a_failed_import_sets_to_none(tmp_path: Path) -> None:
    source = (
        "import os\n"
        "try:\n"
        "    from flashinfer import Wrapper, other as renamed\n"
        "    import ray\n"
        "except ImportError:\n"
        "    Wrapper = None\n"
        "    renamed = ray = None\n"
        "try:\n"
        "    from vllm.own import Kept\n"  # the engine's own module: not a library's
        "except ImportError:\n"
        "    Kept = None\n"
        "try:\n"
        "    from xformers import ops\n"
        "except ValueError:\n"  # not an import's failure
        "    ops = None\n"
    )
    wheel = tmp_path / "vllm-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("vllm/worker/runner.py", source)
    read = read_optional_imports.read_wheel(wheel, "vllm")
    assert read == {
        "vllm/worker/runner.py": {"Wrapper": "flashinfer", "renamed": "flashinfer", "ray": "ray"}
    }
