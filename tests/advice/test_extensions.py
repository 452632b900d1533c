"""A compiled extension that does not load (``undefined symbol: _ZN3c10...``): built against
another torch. The engines' own extensions get the torch their release pins (each wheel's
``Requires-Dist: torch==X``, read per release: patcher/advice/extensions.py)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from patcher.advice.doctor import diagnose_text

SYMBOL = "_ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"


@pytest.mark.parametrize(
    ("version", "pin"),
    [("0.9.2", "2.7.0"), ("0.34.0", "2.14.0"), ("0.4.3", "2.3.0")],
)
def test_vllms_own_extension_gets_the_torch_its_release_pins(version: str, pin: str) -> None:
    found = diagnose_text(
        f"INFO 02-10 17:06:00 [api_server.py:1] vLLM API server version {version}\n"
        f"ImportError: /env/site-packages/vllm/_C.abi3.so: undefined symbol: {SYMBOL}\n"
    )
    assert found.code == "undefined-symbol"
    assert found.fixes[0].text == f"pip install 'torch=={pin}'"
    assert "another torch" in found.cause


def test_without_a_release_the_engine_is_installed_again_with_its_own_pin() -> None:
    found = diagnose_text(f"ImportError: /tmp/vllm/vllm/_C.abi3.so: undefined symbol: {SYMBOL}\n")
    # the release is not in the log, so it is prose, not a command to paste
    assert (found.fixes[0].kind, found.fixes[0].text) == (
        "advice",
        "pip install --force-reinstall vllm==<the release installed>",
    )


def test_the_reader_takes_the_torch_pin_from_the_wheels_metadata(tmp_path: Path) -> None:
    from tools.read_metadata import torch_pin

    wheel = tmp_path / "vllm-9.9.9-cp38-abi3-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(
            "vllm-9.9.9.dist-info/METADATA",
            "Name: vllm\nRequires-Dist: torch_memory_saver\nRequires-Dist: torch ==2.3.0\n",
        )
    with zipfile.ZipFile(wheel) as archive:
        assert torch_pin(archive) == {"torch_pin": ["2.3.0"]}


def test_a_chat_template_path_that_is_not_there_is_that_path_to_fix() -> None:
    # vLLM 0.24's chat_utils, for a recipe's examples/ template the wheel does not carry
    found = diagnose_text(
        "ValueError: The supplied chat template string (examples/tool_chat_template_gemma4.jinja)"
        " appears path-like, but doesn't exist! Tried: examples/tool_chat_template_gemma4.jinja\n"
    )
    assert found.code == "chat-template"
    assert [f.text for f in found.fixes] == [
        "--chat-template /path/to/tool_chat_template_gemma4.jinja"
    ]


def test_a_kernel_wheel_an_engine_pins_is_installed_again_with_that_engine() -> None:
    # SGLang pins sgl-kernel==X beside torch==Y (its wheels' Requires-Dist, read per release):
    # the kernel is a prebuilt wheel of that pair, so a reinstall of it alone builds nothing
    from patcher.advice.catalogue import features_of

    assert any(p.startswith("sgl-kernel==") for p in features_of("sglang", "requires"))
    found = diagnose_text(
        "ImportError: /home/u/.local/lib/python3.10/site-packages/sgl_kernel/common_ops.abi3.so: "
        "undefined symbol: _ZN3c104cuda9SetDeviceEa\n"
    )
    assert found.code == "undefined-symbol"
    assert "pins beside the torch" in found.cause
    assert (
        found.fixes[0].text
        == "pip install --force-reinstall 'sglang[all]==<the release installed>'"
    )
    assert all("sgl_kernel" not in f.text or "source" in f.text for f in found.fixes)


def test_tensorrt_llms_prebuilt_extension_gets_the_torch_its_wheel_requires_not_a_rebuild() -> None:
    found = diagnose_text(
        '  File "/venv/lib/python3.12/site-packages/tensorrt_llm/_utils.py", line 42, in <module>\n'
        "    from tensorrt_llm.bindings import DataType, GptJsonConfig\n"
        "ImportError: /venv/lib/python3.12/site-packages/tensorrt_llm/bindings.cpython-312-x86_64-"
        "linux-gnu.so: undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationESs\n"
    )
    assert found.code == "undefined-symbol"
    assert "pip check" in found.fixes[0].text
    assert not any("--no-build-isolation" in f.text for f in found.fixes)
    assert any("pypi.nvidia.com" in f.text for f in found.fixes)
