"""An engine that imports a name its library lacks: ``cannot import name 'X' from
'flashinfer.sampling'``. The engine's wheel states the versions it requires (read per release,
the catalogue's ``requires``): the log's release's requirement, else ``pip check``
(patcher/advice/requirements.py)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from patcher.advice.doctor import diagnose_text
from tools.read_metadata import requirements

FRAME = '  File "/env/site-packages/sglang/srt/layers/sampler.py", line 9, in <module>\n'


def test_the_log_s_release_gets_the_version_its_wheel_requires() -> None:
    found = diagnose_text(
        "INFO 07-01 10:00:00 [api_server.py:1] vLLM API server version 0.9.2\n"
        '  File "/env/site-packages/vllm/v1/structured_output/backend_xgrammar.py", line 9\n'
        "ImportError: cannot import name 'StructuralTagItem' from 'xgrammar'\n"
    )
    assert found.code == "library-version"
    texts = [f.text for f in found.fixes]
    assert texts[0] == "pip install 'xgrammar==0.1.19'"  # vllm 0.9.2's wheel
    assert "pip check" in texts


def test_without_a_release_pip_check_and_the_read_requirements() -> None:
    found = diagnose_text(
        FRAME + "ImportError: cannot import name '_grouped_size_compiled_for_decode_kernels' "
        "from 'flashinfer.decode' (/usr/lib/python3.10/site-packages/flashinfer/decode.py)\n"
    )
    assert found.code == "library-version"
    assert found.fixes[0].text == "pip check"
    assert "0.4.0: flashinfer>=0.1.6" in found.fixes[1].text


def test_a_library_no_engine_requires_is_not_answered() -> None:
    found = diagnose_text("ImportError: cannot import name 'thing' from 'somelib.mod'\n")
    assert found.code != "library-version"


def test_the_reader_keeps_each_requirement_with_its_specifier(tmp_path: Path) -> None:
    wheel = tmp_path / "eng-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(
            "eng-1.0.dist-info/METADATA",
            'Name: eng\nRequires-Dist: flashinfer_python==0.2.3; extra == "srt"\n'
            "Requires-Dist: torch (>=2.5)\nRequires-Dist: requests\n"
            "Requires-Dist: xgrammar[cuda]>=0.1.4\nRequires-Python: <3.13, >=3.9\n",
        )
    with zipfile.ZipFile(wheel) as archive:
        read = requirements(archive)
    # a requirement with no version says nothing of one: left out
    assert read == {
        "requires": ["flashinfer_python==0.2.3", "torch>=2.5", "xgrammar>=0.1.4"],
        "requires_python": ["<3.13,>=3.9"],
    }


def test_a_requires_python_is_read_by_its_bounds() -> None:
    from patcher.advice.pythons import admits

    assert admits("<3.13,>=3.9", (3, 12)) and not admits("<3.13,>=3.9", (3, 13))
    assert admits(">=3.8", (3, 13)) and not admits("<3.15,>=3.11", (3, 10))


def test_an_upgrade_is_named_for_python_3_13_only_where_a_release_read_excludes_it() -> None:
    from patcher.advice.pythons import first_admitting

    # vLLM 0.8.5.post1 to 0.10.1 say <3.13; every SGLang release read admits 3.13, so an
    # SGLang upgrade would change nothing
    assert first_admitting("vllm", (3, 13)) == "0.11.0"
    assert first_admitting("sglang", (3, 13)) is None
