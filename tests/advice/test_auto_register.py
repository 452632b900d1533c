"""doctor on a model's class that transformers refuses to register under a name
(patcher/advice/auto_register.py; the reading in snapshots/engines/auto-register-transformers.txt,
tools/read_auto_register.py)."""

from __future__ import annotations

from pathlib import Path

from patcher.advice.auto_register import REFUSED_IN
from patcher.advice.doctor import diagnose_text
from tests.conftest import wheel_of

READING = Path(__file__).resolve().parents[2] / "snapshots/engines/auto-register-transformers.txt"
# One line per rule (test_doctor's marker test takes them with its own cases).
AUTO_REGISTER_LINES = ["AttributeError: 'str' object has no attribute '__module__'"]

# The frames transformers 5.13.0 shows when a model's processing file registers under a name.
_REGISTERING = (
    "Traceback (most recent call last):\n"
    '  File "/root/.cache/huggingface/modules/transformers_modules/DotsOCR/'
    'configuration_dots.py", line 72, in <module>\n'
    '    AutoProcessor.register("dots_ocr", DotsVLProcessor)\n'
    '  File "/usr/local/lib/python3.12/dist-packages/transformers/models/auto/'
    'processing_auto.py", line 466, in register\n'
    "    PROCESSOR_MAPPING.register(config_class, processor_class, exist_ok=exist_ok)\n"
    '  File "/usr/local/lib/python3.12/dist-packages/transformers/models/auto/'
    'auto_factory.py", line 680, in register\n'
    '    if key.__module__.startswith("transformers."):\n'
    "       ^^^^^^^^^^^^^^\n"
    "AttributeError: 'str' object has no attribute '__module__'. Did you mean: '__mod__'?\n"
)


def test_the_releases_named_are_those_read_to_refuse_a_name() -> None:
    rows = [r.split("\t") for r in READING.read_text().splitlines() if r and r[0] != "#"]
    refused = tuple(r[0] for r in rows if r[1].startswith("refused"))
    assert refused == REFUSED_IN
    assert len(rows) > 30 and all(r[1] == "accepted" for r in rows if r[0] not in refused)


def test_a_name_refused_in_the_registration_gets_another_transformers() -> None:
    found = diagnose_text(_REGISTERING)
    assert found.code == "registered-name"
    assert found.fixes[0].text == "pip install 'transformers!=5.13.0'"
    assert "config class" in found.fixes[1].text


def test_a_buildkite_log_copied_from_its_web_view_is_read_the_same() -> None:
    # Buildkite's view puts "Actions for L<n>" and the number before each line it copies,
    # and brackets its own time stamp (vllm-omni's weekly CI, 2026-07-18)
    stamp = "[2026-07-18T22:18:04Z] ERROR 07-18 22:18:04 [stage_runtime.py:251] "
    lines = _REGISTERING.splitlines()
    copied = "".join(
        f"Actions for L{n}\n{n}\n{stamp}{line}\n" for n, line in enumerate(lines, start=300)
    )
    found = diagnose_text(
        "[2026-07-18T22:18:03Z] ERROR 07-18 22:18:03 [registry.py:987] Error in loading model "
        "architecture 'AudioXPipeline'\n" + copied
    )
    assert found.code == "registered-name"
    assert found.error.startswith("AttributeError: 'str' object")


def test_the_same_words_from_other_code_are_not_this() -> None:
    found = diagnose_text(
        "Traceback (most recent call last):\n"
        '  File "/app/serve.py", line 12, in <module>\n'
        "    name.__module__\n"
        "AttributeError: 'str' object has no attribute '__module__'\n"
    )
    assert found.code != "registered-name"
    assert not found.fixes
    bare = diagnose_text("AttributeError: 'str' object has no attribute '__module__'\n")
    assert bare.code != "registered-name" and not bare.fixes  # no frame: unsure


def test_the_reader_runs_each_release_registration(tmp_path: Path) -> None:
    from tools.read_auto_register import registers_a_name

    method = (
        "class _LazyAutoMapping:\n"
        "    def register(self, key: type[PreTrainedConfig], value, exist_ok=False) -> None:\n"
        '        """Register a new model in this mapping."""\n'
        '        if hasattr(key, "__name__") and key.__name__ in self._reverse_config_mapping:\n'
        "            raise ValueError(key)\n"
        "{check}"
        "        self._extra_content[key] = value\n"
    )
    refusing = method.format(
        check='        if key.__module__.startswith("transformers."):\n            return\n'
    )
    asking = method.format(
        check='        if getattr(key, "__module__", "").startswith("transformers."):\n'
        "            return\n"
    )
    archive = wheel_of(tmp_path / "t.whl", {"transformers/models/auto/auto_factory.py": refusing})
    read = registers_a_name(archive.read("transformers/models/auto/auto_factory.py").decode())
    assert read.startswith("refused: AttributeError: 'str' object has no attribute '__module__'")
    assert read.endswith('at line 6, `if key.__module__.startswith("transformers."):`')
    assert registers_a_name(asking) == "accepted"
    assert registers_a_name(method.format(check="")) == "accepted"
