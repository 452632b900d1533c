"""The engine model's version boundaries against every vLLM release read.

``snapshots/engines/rules-vllm.json`` (tools/record_rules.py, run by ``python -m
tools.read_release``) holds, per release from 0.10.1 to 0.34.0, which side of each rule its own
source is on; the model's constant for each boundary must put every release read on the same
side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from patcher import api
from patcher.engines import launch_flags, vllm, vllm_kv
from patcher.engines.engine import parse_engine
from patcher.engines.readings import reading, releases_read
from patcher.engines.target import make_target
from patcher.errors import TargetError
from tests.conftest import SNAPSHOTS, build_tree

RELEASES: dict[str, dict[str, Any]] = json.loads(
    (SNAPSHOTS / "engines" / "rules-vllm.json").read_text()
)["releases"]
# rule -> (the model's boundary, whether releases from it on have the rule)
BOUNDARIES = {
    "yarn_derives_from_original": (vllm.YARN_KEEPS_MAX_POSITION, False),
    "auto_gptq": (vllm.AUTO_GPTQ_FROM, True),
    "kv_auto_from_checkpoint": (vllm_kv.KV_AUTO_FROM_CHECKPOINT, True),
    "float_kv_matches_model": (vllm_kv.FLOAT_KV_MATCHES_MODEL_FROM, True),
    "max_model_len_auto": (launch_flags.MAX_MODEL_LEN_AUTO_FROM, True),
    "kv_cache_memory_bytes": (launch_flags.KV_CACHE_MEMORY_BYTES_FROM, True),
}


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def test_every_minor_release_from_0_10_to_0_34_was_read() -> None:
    minors = {_version(v)[:2] for v in RELEASES}
    assert {(0, m) for m in range(10, 35)} <= minors, sorted(
        {(0, m) for m in range(10, 35)} - minors
    )
    assert set(RELEASES) == {".".join(map(str, v)) for v in releases_read("vllm")}


@pytest.mark.parametrize("version", sorted(RELEASES, key=_version))
def test_each_boundary_puts_the_release_on_its_side(version: str) -> None:
    for rule, (first, from_on) in BOUNDARIES.items():
        expected = from_on if _version(version) >= first else not from_on
        assert RELEASES[version][rule] is expected, (rule, version, first)


@pytest.mark.parametrize("version", sorted(RELEASES, key=_version))
def test_the_model_takes_exactly_the_quantization_methods_the_release_registers(
    version: str,
) -> None:
    """config/model.py refuses a quant_method its QuantizationMethods lacks ("Unknown
    quantization method"): the package's reading of each release is the release's own list."""
    engine = parse_engine(f"vllm=={version}")
    assert reading(engine).quantization_methods == set(RELEASES[version]["quantization_methods"])


@pytest.mark.parametrize(
    ("method", "last", "gone"),
    [("bitsandbytes", "0.27.0", "0.28.0"), ("fp_quant", "0.33.0", "0.34.0")],
)
def test_a_removed_method_starts_on_its_last_release_and_is_refused_from_the_next(
    tmp_path: Path, method: str, last: str, gone: str
) -> None:
    build_tree(
        tmp_path,
        {
            "config.json": json.dumps(
                {
                    "architectures": ["LlamaForCausalLM"],
                    "model_type": "llama",
                    "torch_dtype": "bfloat16",
                    "quantization_config": {"quant_method": method},
                }
            )
        },
    )
    before = api.check(tmp_path, engine=f"vllm=={last}").engine
    after = api.check(tmp_path, engine=f"vllm=={gone}").engine
    assert before is not None and before.verdict == "yes", before.startup_errors
    assert after is not None and after.verdict == "no"
    assert after.startup_errors[0].message.startswith(f"Unknown quantization method: {method}")
    assert f"last listed in {last}" in (after.startup_errors[0].note or "")


@pytest.mark.parametrize("version", sorted(RELEASES, key=_version))
def test_the_kv_cache_dtype_choices_are_the_releases_own(version: str) -> None:
    """``--kv-cache-dtype`` takes what the release's CacheDType lists, no more and no less:
    a target choosing bfloat16 for 0.10.1 is refused, as its argparse would refuse it."""
    engine = parse_engine(f"vllm=={version}")
    assert set(vllm_kv.kv_cache_dtype_choices(engine)) == set(RELEASES[version]["kv_cache_dtypes"])


@pytest.mark.parametrize("version", sorted(RELEASES, key=_version))
def test_sizes_in_flags_are_read_as_the_releases_own_parser_reads_them(version: str) -> None:
    """--max-model-len 128K and --kv-cache-memory-bytes 1G: patcher reads each word the
    recorder gave the release's own ``human_readable_int`` (run from its source) to the same
    number, and refuses what it refuses (1GiB, 1.5K; 2T before 0.13)."""
    for word, expected in RELEASES[version]["human_readable_int"].items():
        try:
            found: int | str = launch_flags.human_readable_int(word, _version(version))
        except ValueError:
            found = "refused"
        assert found == expected, (version, word)


@pytest.mark.parametrize("version", sorted(RELEASES, key=_version))
def test_a_context_is_read_as_the_releases_own_max_model_len_type_reads_it(version: str) -> None:
    """From 0.14 --max-model-len's type is human_readable_int_or_auto (auto and -1 are -1: the
    engine's own fit); patcher's parse_context gives "auto" exactly where it gives -1."""
    recorded = RELEASES[version]["human_readable_int_or_auto"]
    assert (recorded is not None) is RELEASES[version]["max_model_len_auto"]
    for word, expected in (recorded or {}).items():
        try:
            found: int | str = launch_flags.parse_context(word, _version(version))
        except ValueError:
            found = "refused"
        assert found == ("auto" if expected == -1 else expected), (version, word)


@pytest.mark.parametrize("version", sorted(RELEASES, key=_version))
def test_a_target_asks_only_for_what_the_release_takes(version: str) -> None:
    """max_model_len "auto" and kv_cache_memory make flags (--max-model-len auto,
    --kv-cache-memory-bytes) that a release without them refuses: so does the target."""
    engine = f"vllm=={version}"
    for setting, rule in (
        ({"max_model_len": "auto"}, "max_model_len_auto"),
        ({"kv_cache_memory": "1GiB"}, "kv_cache_memory_bytes"),
    ):
        if RELEASES[version][rule]:
            make_target(engine=engine, gpu="h200", **setting)  # type: ignore[arg-type]
        else:
            with pytest.raises(TargetError, match="has no --"):
                make_target(engine=engine, gpu="h200", **setting)  # type: ignore[arg-type]
