"""Errors in Python's own words that a release's source raises whenever the line runs: a name
imported only where another package imports, or never bound at all (``NameError``), a logger
method no logger has. Read per release from the engines' files (tools/read_defects.py); doctor
names the releases read without the defect (patcher/advice/engine_defects.py)."""

from __future__ import annotations

import ast
import zipfile
from pathlib import Path

import pytest

from patcher.advice.catalogue import feature_releases, releases, version_key
from patcher.advice.doctor import diagnose_text
from tools.read_defects import defects, logger_calls, optional_imports

GPTQ = "/usr/local/lib/python3.10/dist-packages/sglang/srt/layers/quantization/gptq.py"
AWQ_MARLIN = "/opt/env/site-packages/vllm/model_executor/layers/quantization/awq_marlin.py"
# the errors the rules read (test_doctor's marker test takes them with its own cases)
DEFECT_LINES = [
    "NameError: name 'check_marlin_supported' is not defined",
    "AttributeError: 'Logger' object has no attribute 'warning_one'",
    "ImportError: cannot import name 'ServerArgs' from partially initialized module 'sglang' "
    "(most likely due to a circular import) (/x/sglang/__init__.py)",
]


def test_a_name_sglang_imported_from_vllm_names_the_release_that_imports_its_own() -> None:
    # SGLang 0.4.6's gptq.py took check_marlin_supported from vLLM inside try/except
    found = diagnose_text(
        f'  File "{GPTQ}", line 347, in is_gptq_marlin_compatible\n'
        "    return check_marlin_supported(\n"
        "NameError: name 'check_marlin_supported' is not defined\n"
    )
    assert found.code == "engine-defect"
    assert found.fixes[0].text == "pip install 'sglang>=0.4.10'"
    assert "vllm" in found.fixes[1].text and "vllm.model_executor" in found.cause


def test_a_logger_method_no_logger_has_names_the_release_without_the_call() -> None:
    # vLLM 0.8.5's awq_marlin.py called logger.warning_one
    lines = (
        f'  File "{AWQ_MARLIN}", line 141, in get_quant_method\n'
        "    logger.warning_one(\n"
        "AttributeError: [address=0.0.0.0:38425, pid=462] 'Logger' object has no attribute "
        "'warning_one'\n"
    )
    found = diagnose_text(lines)
    assert found.code == "engine-defect"
    assert found.fixes[0].text == "pip install 'vllm>=0.9.0.1'"
    assert "0.8.5.post1" in (found.fixes[0].note or "")
    # a release read without the call does not raise it: the rule does not answer for it
    later = diagnose_text(
        "INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.9.2\n" + lines
    )
    assert later.code != "engine-defect"


def test_a_name_error_in_a_file_without_the_defect_is_not_answered() -> None:
    found = diagnose_text(
        f'  File "{GPTQ}", line 10, in f\n'
        "    return not_a_recorded_name(\n"
        "NameError: name 'not_a_recorded_name' is not defined\n"
    )
    assert found.code != "engine-defect"
    assert not found.recognised


def _read(tmp_path: Path, files: dict[str, str], patterns: tuple[str, ...]) -> dict[str, list[str]]:
    """The defects tools/read_defects.py reads in a wheel holding ``files``."""
    wheel = tmp_path / "eng-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    with zipfile.ZipFile(wheel) as archive:
        return defects(archive, patterns)


def test_the_readings_are_recorded_per_release() -> None:
    record = "sglang/srt/layers/quantization/gptq.py|check_marlin_supported|"
    having = [
        r
        for name in ("vllm.model_executor.layers.quantization.utils.marlin_utils",)
        for r in feature_releases("sglang", "optional_import", record + name)
    ]
    assert "0.4.6" in having and "0.4.10" not in having
    assert feature_releases(
        "vllm",
        "missing_method",
        "vllm/model_executor/layers/quantization/awq_marlin.py|logger.warning_one",
    ) == ("0.8.5.post1",)


def test_the_reader_finds_optional_imports_and_calls_no_logger_has(tmp_path: Path) -> None:
    module = (
        "import logging\n"
        "logger = logging.getLogger(__name__)\n"
        "try:\n"
        "    from other.pkg import helper, kept\n"
        "    from other.pkg import fallback\n"
        "except ImportError:\n"
        "    fallback = None\n"
        "if True:\n"
        "    try:\n"
        "        from other.more import deep\n"
        "    except (ImportError, OSError):\n"
        "        pass\n"
        "kept = 1\n"
        "def f():\n"
        "    logger.warning_one('x')\n"
        "    logger.warning_once('y')\n"
        "    logger.info('z')\n"
    )
    tree = ast.parse(module)
    # fallback is bound by the handler and kept by a later assignment: neither can go unbound
    assert sorted(optional_imports(tree)) == [("deep", "other.more"), ("helper", "other.pkg")]
    assert logger_calls(tree) == {"warning_one", "warning_once", "info"}
    own = module.replace(
        "logger = logging.getLogger(__name__)",
        "from eng.logger import init_logger\nlogger = init_logger(__name__)",
    )
    wheel = tmp_path / "eng.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("eng/layers/q.py", module)
        archive.writestr("eng/layers/own.py", own)
        archive.writestr("eng/layers/bound.py", "logger = make()\nlogger.anything()\n")
        archive.writestr("eng/logger.py", "PATCH = {'warning_once': print}\n")
        archive.writestr(
            "eng/other.py", "try:\n    from x import y\nexcept ImportError:\n    y=0\n"
        )
    with zipfile.ZipFile(wheel) as archive:
        read = defects(archive, ("eng/layers/*.py",))
    # transformers adds warning_once to every stdlib logger, the engine's factory may add more;
    # a logger bound some other way is not judged
    assert read["missing_method"] == [
        "eng/layers/own.py|logger.warning_one",
        "eng/layers/q.py|logger.warning_one",
    ]
    assert "eng/layers/q.py|helper|other.pkg" in read["optional_import"]
    assert not any(r.startswith("eng/other.py") for r in read["optional_import"])


def test_a_circular_import_of_the_package_s_root_names_the_release_without_it() -> None:
    # SGLang 0.5.3's decode_kvcache_offload_manager.py: "from sglang import ServerArgs"
    offload = "/u/site-packages/sglang/srt/disaggregation/decode_kvcache_offload_manager.py"
    found = diagnose_text(
        f'  File "{offload}", line 7, in <module>\n'
        "    from sglang import ServerArgs\n"
        f"{DEFECT_LINES[2]}\n"
    )
    assert found.code == "engine-defect"
    assert found.fixes[0].text == "pip install 'sglang>=0.5.4'"
    assert "circular" in found.cause


def test_a_circular_import_in_a_file_no_release_read_carries_is_not_answered() -> None:
    found = diagnose_text(
        f'  File "/u/site-packages/sglang/srt/other.py", line 7, in <module>\n{DEFECT_LINES[2]}\n'
    )
    assert found.code != "engine-defect"


def test_the_reader_records_a_root_import_but_not_a_submodule(tmp_path: Path) -> None:
    wheel = tmp_path / "eng-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("eng/__init__.py", "from eng.srt.a import Args\n")
        archive.writestr("eng/envs.py", "")
        archive.writestr(
            "eng/srt/a.py",
            "from eng import Args, envs\nfrom eng import ops as o\n"
            "if TYPE_CHECKING:\n    from eng import Hint\n",
        )
    with zipfile.ZipFile(wheel) as archive:
        read = defects(archive, ("eng/srt/*.py",))
    # envs is a submodule, which imports even from a partial root; ops is read as it is named;
    # an import for the type checker never runs
    assert read["root_import"] == ["eng/srt/a.py|Args", "eng/srt/a.py|ops"]


COMPRESSED = (
    "/usr/local/lib/python3.10/dist-packages/sglang/srt/layers/quantization/compressed_tensors/"
    "compressed_tensors.py"
)


def test_a_name_a_release_s_file_never_binds_names_the_first_release_that_binds_it() -> None:
    # SGLang 0.4.6 to 0.5.2's compressed_tensors.py returns CompressedTensorsW8A8Int8(...) for an
    # int8 W8A8 checkpoint and imports it nowhere
    record = "sglang/srt/layers/quantization/compressed_tensors/compressed_tensors.py|"
    having = feature_releases("sglang", "unbound", record + "CompressedTensorsW8A8Int8")
    assert having, "the catalogue records the name unbound in the releases that carry it"
    found = diagnose_text(
        "[2025-06-22 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        f'  File "{COMPRESSED}", line 428, in _get_scheme_from_parts\n'
        "    return CompressedTensorsW8A8Int8(\n"
        "NameError: name 'CompressedTensorsW8A8Int8' is not defined. Did you mean: "
        "'CompressedTensorsW8A8Fp8'?\n"
    )
    assert found.code == "engine-defect"
    (upgrade,) = found.fixes
    first = upgrade.text.split(">=")[1].rstrip("'")
    later = [r for r in releases("sglang") if version_key(r) > version_key(having[-1])]
    assert first == min(later, key=version_key)
    assert "never imports or defines" in found.cause


def test_the_reader_records_a_name_a_file_reads_and_binds_nowhere(tmp_path: Path) -> None:
    wheel = tmp_path / "eng-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(
            "eng/srt/q.py",
            "import os\nfrom x import Fp8\n"
            "def scheme(bits, *rest, **kw):\n"
            "    if bits == 8:\n        return Int8(bits)\n"
            "    for (a, b) in kw.items():\n        print(a, b, os.sep, __name__, rest)\n"
            "    try:\n        pass\n    except OSError as exc:\n        raise exc\n"
            "    return Fp8() if (n := len(rest)) else n\n",
        )
        # names read through globals() are not all written in the file: not judged
        archive.writestr("eng/srt/dyn.py", "def f():\n    return globals()['A'] or Missing\n")
        archive.writestr("eng/srt/star.py", "from y import *\nUsed()\n")
    with zipfile.ZipFile(wheel) as archive:
        read = defects(archive, ("eng/srt/*.py",))
    assert read["unbound"] == ["eng/srt/q.py|Int8"]


def test_a_name_every_release_read_leaves_unbound_is_no_config_fix() -> None:
    # a vendored kernel's test module of vLLM 0.24.0 on calls a helper it never imports
    record = "vllm/third_party/fmha_sm100/cute/test_sparse_atten.py|build_triton_sparse_metadata"
    having = feature_releases("vllm", "unbound", record)
    assert having and having[-1] == max(releases("vllm"), key=version_key)
    found = diagnose_text(
        '  File "/env/site-packages/vllm/third_party/fmha_sm100/cute/test_sparse_atten.py", '
        "line 40, in run\n"
        "    meta = build_triton_sparse_metadata(q)\n"
        "NameError: name 'build_triton_sparse_metadata' is not defined\n"
    )
    assert found.code == "engine-defect"
    assert [f.kind for f in found.fixes] == ["advice"]
    assert found.fixes[0].text.startswith("no config fix")


@pytest.mark.parametrize(
    ("line", "upgrade"),
    [
        # an issue's title, a log cut before the frame: the one file that carries the name
        (
            "NameError: name 'CompressedTensorsW8A8Int8' is not defined. Did you mean: "
            "'CompressedTensorsW8A8Fp8'?",
            "pip install 'sglang>=0.5.3'",
        ),
        (DEFECT_LINES[0], "pip install 'sglang>=0.4.10'"),
    ],
)
def test_a_name_error_without_a_frame_is_read_by_the_one_file_that_carries_it(
    line: str, upgrade: str
) -> None:
    found = diagnose_text(line + "\n")
    assert found.code == "engine-defect"
    assert found.fixes[0].text == upgrade


def test_a_one_word_name_without_a_frame_is_not_read_as_an_engine_defect() -> None:
    # SGLang 0.5.3's utils/common.py reads Sequence unbound, but so could any code
    assert feature_releases("sglang", "unbound", "sglang/srt/utils/common.py|Sequence")
    found = diagnose_text("NameError: name 'Sequence' is not defined\n")
    assert found.code != "engine-defect"


def test_the_reader_records_a_raise_under_a_guard_that_always_holds(tmp_path: Path) -> None:
    # vLLM 0.8.5's gptq_marlin.py: `if apply_router_weight_on_input is not None:` for a
    # parameter that defaults to False holds for every call; a guard on the value does not
    source = (
        "def apply(x, on_input: bool = False, scale=None, *, limit=0):\n"
        "    if on_input is not None:\n"
        "        raise NotImplementedError('Apply router weight on input is not supported '\n"
        "                                  'for fused Marlin MoE method.')\n"
        "    if scale is not None:\n        raise ValueError('no scale')\n"
        "    if limit is not None:\n        limit = 1\n        raise ValueError('reassigned')\n"
        "    if on_input:\n        raise ValueError('a real refusal')\n"
    )
    read = _read(tmp_path, {"eng/q.py": source}, ("eng/*.py",))
    assert read["always_raises"] == [
        "eng/q.py|on_input=False|Apply router weight on input is not supported for fused Marlin "
        "MoE method."
    ]


GPTQ_MARLIN = "/usr/local/lib/python3.10/dist-packages/vllm/model_executor/layers/quantization/"


def test_a_refusal_behind_a_guard_that_always_holds_is_the_release_not_the_checkpoint() -> None:
    # vLLM 0.8.3 to 0.8.5's V0 engine logs the message bare, then the traceback whose frame is
    # gptq_marlin.py: every GPTQ Marlin MoE model is refused there (the reading above)
    record = (
        "vllm/model_executor/layers/quantization/gptq_marlin.py|apply_router_weight_on_input="
        "False|Apply router weight on input is not supported forfused Marlin MoE method."
    )
    assert feature_releases("vllm", "always_raises", record) == ("0.8.3", "0.8.4", "0.8.5.post1")
    prefix = "ERROR 06-25 08:31:41 [engine.py:448] "
    log = (
        "INFO 06-25 08:31:12 [llm_engine.py:240] Initializing a V0 LLM engine (v0.8.5) with "
        "config: model='/m', quantization=gptq_marlin\n"
        f"{prefix}Apply router weight on input is not supported forfused Marlin MoE method.\n"
        f"{prefix}Traceback (most recent call last):\n"
        f'{prefix}  File "{GPTQ_MARLIN}gptq_marlin.py", line 610, in apply\n'
        f"{prefix}    raise NotImplementedError(\n"
        f"{prefix}NotImplementedError: Apply router weight on input is not supported forfused "
        "Marlin MoE method.\n"
    )
    found = diagnose_text(log)
    assert found.code == "engine-defect"
    assert [f.text for f in found.fixes] == ["pip install 'vllm>=0.9.0.1'"]
    # AWQ's Marlin MoE refuses the same words behind a real guard: not the defect
    awq = log.replace("gptq_marlin.py", "awq_marlin.py")
    assert diagnose_text(awq).code != "engine-defect"
