"""The failures of transformers' own code the engines call (patcher/advice/transformers_rules.py):
here, a model type this transformers does not know, which an engine release may read with a
config class of its own (``own_config``, read per release from its ``_CONFIG_REGISTRY`` by
tools/read_own_configs.py). The logs are written from transformers' own words
(``AutoConfig.from_pretrained``); the model types and releases come from the catalogue."""

from __future__ import annotations

import pytest

from patcher.advice.catalogue import (
    feature_releases,
    features_of,
    model_types,
    stopped_by_model,
)
from patcher.advice.doctor import diagnose_text

WORDS = (
    "The checkpoint you are trying to load has model type `{}` but Transformers does not "
    "recognize this architecture. This could be because of an issue with the checkpoint, or "
    "because your version of Transformers is out of date."
)


def _registered_and_known() -> tuple[str, str, str]:
    """A model type some vLLM release reads with its own class and some transformers knows:
    the type, vLLM's first release with the class, transformers' first release knowing it."""
    known = model_types()
    for model_type in sorted(features_of("vllm", "own_config")):
        if model_type in known:
            return (
                model_type,
                feature_releases("vllm", "own_config", model_type)[0],
                known[model_type][0],
            )
    pytest.fail("no model type both registered by vLLM and known to transformers was read")


def test_vllms_own_config_class_is_named_before_the_transformers_upgrade() -> None:
    model_type, first, knows = _registered_and_known()
    # pydantic's "Value error, " is vLLM's ModelConfig refusing
    found = diagnose_text(f"  Value error, {WORDS.format(model_type)}\n")
    texts = [f.text for f in found.fixes]
    assert texts[0] == f"pip install 'vllm>={first}'"
    assert f"pip install 'transformers>={knows}'" in texts
    assert not any(t.startswith("pip install 'sglang") for t in texts)


def test_a_release_that_already_has_the_class_is_not_named() -> None:
    model_type, first, _ = _registered_and_known()
    found = diagnose_text(
        f"INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version {first}\n"
        f"ValueError: {WORDS.format(model_type)}\n"
    )
    assert not any(f.text.startswith("pip install 'vllm") for f in found.fixes)


def test_a_type_no_engine_registers_gets_only_the_transformers_upgrade() -> None:
    known = model_types()
    registered = set(features_of("vllm", "own_config")) | set(features_of("sglang", "own_config"))
    model_type = next(t for t in sorted(known) if t not in registered and t.startswith("qwen"))
    found = diagnose_text(f"ValueError: {WORDS.format(model_type)}\n")
    assert [f.kind for f in found.fixes] == ["dependency"]
    assert found.fixes[0].text == f"pip install 'transformers>={known[model_type][0]}'"


ROPE_WORDS = (
    "ValueError: `rope_scaling` must be a dictionary with two fields, `type` and `factor`, "
    "got {'factor': 8.0, 'low_freq_factor': 1.0, 'high_freq_factor': 4.0, "
    "'original_max_position_embeddings': 8192, 'rope_type': 'llama3'}"
)


def _first_building(rope_type: str) -> str:
    return feature_releases("vllm", "rope_type", rope_type)[0]


def test_an_engine_release_that_cannot_build_the_rope_type_is_named_first() -> None:
    # vLLM 0.4.3's get_rope reads only rope_scaling["type"] (read as type-key-only): a newer
    # transformers alone leaves it unable to build llama3; the first release that builds it is
    # the way out, and its own transformers requirement comes with it
    first = _first_building("llama3")
    assert "0.4.3" in feature_releases("vllm", "rope_type", "type-key-only")
    found = diagnose_text(
        "INFO 07-23 16:04:42 api_server.py:219] vLLM API server version 0.4.3\n" + ROPE_WORDS + "\n"
    )
    assert found.code == "rope-scaling-fields"
    assert found.fixes[0].text == f"pip install 'vllm>={first}'"
    assert "0.4.3 does not" in (found.fixes[0].note or "")


def test_a_release_that_builds_it_gets_only_the_transformers_its_requirement_admits() -> None:
    # vLLM 0.9.2 builds llama3; the per-model releases include 5.0.0, which no vLLM release
    # before the run that admits transformers 5 installs with (the catalogue's requirements)
    assert "0.9.2" in feature_releases("vllm", "rope_type", "llama3")
    found = diagnose_text(
        "INFO 07-23 16:04:42 api_server.py:219] vLLM API server version 0.9.2\n" + ROPE_WORDS + "\n"
    )
    assert found.code == "rope-scaling-fields"
    assert all(not f.text.startswith("pip install 'vllm") for f in found.fixes)
    first = found.fixes[0]
    assert first.text.startswith("pip install 'transformers>=4.")
    assert "5.0.0 is beyond this vLLM release's requirement" in (first.note or "")


def test_without_the_engine_every_models_release_is_told() -> None:
    per_model = stopped_by_model("`rope_scaling` must be a dictionary with two fields")
    found = diagnose_text(ROPE_WORDS + "\n")
    assert found.code == "rope-scaling-fields"
    assert f"llama {per_model['llama']}" in (found.fixes[0].note or "")


def _listed_later() -> tuple[str, str, str]:
    """A model type whose transformers class vLLM's registry lists only from a release after the
    first read: the type, a read release without the class, the first read release with it."""
    from patcher.advice.catalogue import config_types
    from patcher.engines.registries import architectures

    registry = architectures("vllm")
    order = sorted(registry)
    known = model_types()
    for config, model_type in sorted(config_types().items()):
        name = config.removesuffix("Config") + "ForCausalLM"
        listed = [v for v in order if name in registry[v]]
        if (
            model_type in known
            and listed
            and listed[0] > order[0]
            and listed == order[order.index(listed[0]) :]
        ):
            before = order[order.index(listed[0]) - 1]
            return model_type, ".".join(map(str, before)), ".".join(map(str, listed[0]))
    pytest.fail("no model class that a later vLLM release read added was found")


def test_a_release_read_without_the_model_class_names_the_release_that_has_it() -> None:
    model_type, without, first = _listed_later()
    found = diagnose_text(
        f"INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version {without}\n"
        f"ValueError: {WORDS.format(model_type)}\n"
    )
    texts = [f.text for f in found.fixes]
    assert texts[0] == f"pip install 'vllm>={first}'"
    assert f"vLLM {without} has no " in (found.fixes[0].note or "")
    assert texts[-1].startswith("pip install 'transformers>=")
    assert len(texts) == len(set(texts))
    # a release before the registries read: what it lists is not known, and not claimed
    older = diagnose_text(
        "INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.1.7\n"
        f"ValueError: {WORDS.format(model_type)}\n"
    )
    assert not any("has no " in (f.note or "") for f in older.fixes)


def test_a_log_without_its_release_gets_the_release_that_added_the_class_as_a_way_out() -> None:
    from patcher.advice.catalogue import config_types
    from patcher.engines.registries import architectures

    registry = architectures("sglang")
    order = sorted(registry)
    known = model_types()
    registered = set(features_of("sglang", "own_config"))
    for config, model_type in sorted(config_types().items()):
        name = config.removesuffix("Config") + "ForCausalLM"
        listed = [v for v in order if name in registry[v]]
        if model_type in known and model_type not in registered and listed[:1] > order[:1]:
            break
    else:
        pytest.fail("no model class SGLang's registry added after its first release read")
    found = diagnose_text(
        "[2025-03-14 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=2)\n"
        f"ValueError: {WORDS.format(model_type)}\n"
    )
    first = ".".join(map(str, listed[0]))
    texts = [f.text for f in found.fixes]
    assert texts[0] == f"pip install 'transformers>={known[model_type][0]}'"
    assert f"pip install 'sglang>={first}'" in texts
    assert (found.fixes[texts.index(f"pip install 'sglang>={first}'")].note or "").startswith(
        "if this SGLang release has no "
    )
    # a class every release read lists says nothing of the log's release: no such way out
    plain = diagnose_text(
        "[2025-03-14 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=2)\n"
        f"ValueError: {WORDS.format('qwen2')}\n"
    )
    assert not any("if this SGLang release" in (f.note or "") for f in plain.fixes)


def test_a_transformers_beyond_the_engine_releases_requirement_is_said_to_be() -> None:
    """glm_ocr (transformers 5.1 on) on a vLLM whose release with the class pins
    ``transformers<5``: the upgrade is beyond that requirement, and said so, with the release
    whose requirement admits it; a type the requirement admits stays within it."""
    from patcher.advice.catalogue import config_types
    from patcher.advice.requirements import required
    from patcher.advice.transformers_rules import _admits_from
    from patcher.engines.registries import architectures

    registry = architectures("vllm")
    order = sorted(registry)
    pins = required("vllm", "transformers")
    known = model_types()
    cases: dict[bool, tuple[str, str, str]] = {}
    for config, model_type in sorted(config_types().items()):
        if model_type not in known or model_type in features_of("vllm", "own_config"):
            continue
        prefix = config.removesuffix("Config")
        for name in (prefix + "ForCausalLM", prefix + "ForConditionalGeneration"):
            listed = [v for v in order if name in registry[v]]
            if not listed or listed[0] == order[0] or listed != order[order.index(listed[0]) :]:
                continue
            first = ".".join(map(str, listed[0]))
            before = ".".join(map(str, order[order.index(listed[0]) - 1]))
            if first in pins:
                admits = _admits_from(pins[first], known[model_type][0])
                cases.setdefault(admits, (model_type, before, first))
    assert set(cases) == {True, False}, "no model type on each side of a vLLM requirement"
    for admits, (model_type, before, first) in cases.items():
        found = diagnose_text(
            f"INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version {before}\n"
            f"ValueError: {WORDS.format(model_type)}\n"
        )
        assert found.fixes[0].text == f"pip install 'vllm>={first}'"
        upgrade = found.fixes[-1]
        assert upgrade.text == f"pip install 'transformers>={known[model_type][0]}'"
        if admits:
            assert "within the engine release's own bounds" in (upgrade.note or "")
        else:
            assert f"beyond vLLM {first}'s own requirement ({pins[first]})" in (upgrade.note or "")
            assert "conflict warning" in (upgrade.note or "")


def test_the_class_the_earliest_release_lists_names_the_release() -> None:
    """A model type with a text-only and a multimodal class listed from different releases
    (Qwen3.5: the multimodal one from 0.17, the text-only one later): the earlier release; and
    where that release also reads the type with its own config class, no transformers upgrade
    (it starts whatever transformers is installed)."""
    from patcher.advice.catalogue import config_types, feature_releases
    from patcher.engines.registries import architectures

    registry = architectures("vllm")
    order = sorted(registry)
    known = model_types()
    seen = set()
    for config, model_type in sorted(config_types().items()):
        prefix = config.removesuffix("Config")
        firsts = [
            min((v for v in order if name in registry[v]), default=None)
            for name in (prefix + "ForCausalLM", prefix + "ForConditionalGeneration")
        ]
        if model_type not in known or None in firsts or not firsts[0] > firsts[1] > order[0]:
            continue
        earliest = ".".join(map(str, firsts[1]))
        before = ".".join(map(str, max(v for v in order if v < firsts[1])))
        found = diagnose_text(
            f"INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version {before}\n"
            f"ValueError: {WORDS.format(model_type)}\n"
        )
        assert found.fixes[0].text == f"pip install 'vllm>={earliest}'", model_type
        own = feature_releases("vllm", "own_config", model_type)
        reads_it = bool(own) and own[0] == earliest
        upgrade = any(f.text.startswith("pip install 'transformers") for f in found.fixes)
        assert upgrade != reads_it, model_type
        seen.add(reads_it)
    assert seen == {True, False}, "not both: with and without the release's own config class"
