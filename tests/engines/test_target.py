"""A target's KV dtype and the flags always passed: from make_target, profiles and the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from patcher.engines.target import Target, make_target
from patcher.errors import TargetError

GPU = "rtx-pro-6000"


def test_a_kv_cache_dtype_the_release_does_not_take_is_refused() -> None:
    """vLLM 0.10 has no bfloat16 choice (its argparse refuses it); 0.11 has."""
    with pytest.raises(TargetError) as refused:
        make_target(engine="vllm==0.10.1", gpu=GPU, kv_cache_dtype="bfloat16")
    assert "vllm==0.10.1 has no --kv-cache-dtype bfloat16" in refused.value.problem
    assert "fp8_e4m3" in refused.value.problem
    assert make_target(engine="vllm==0.11.0", gpu=GPU, kv_cache_dtype="bfloat16").kv_cache_dtype
    # SGLang spells it bf16 too; vLLM does not.
    assert make_target(engine="sglang==0.5.23", gpu=GPU, kv_cache_dtype="bf16").kv_cache_dtype
    with pytest.raises(TargetError):
        make_target(engine="vllm==0.33.0", gpu=GPU, kv_cache_dtype="bf16")


def test_a_profiles_kv_cache_dtype_names_its_line(tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text('engine = "vllm==0.16.0"\ngpu = "rtx-pro-6000"\nkv_cache_dtype = "fp4"\n')
    with pytest.raises(TargetError) as refused:
        make_target(profile=profile)
    assert refused.value.file == str(profile) and refused.value.pointer == "/kv_cache_dtype"


def test_flags_naming_a_launch_setting_become_that_setting() -> None:
    target = make_target(
        engine="vllm==0.16.0",
        gpu=GPU,
        flags=[
            "--enable-prefix-caching",
            "-tp",
            "8",
            "--kv-cache-dtype=bfloat16",
            "--served-model-name",
            "kimi",
            "--max-model-len",
            "auto",
        ],
    )
    assert target.tensor_parallel == 8 and target.kv_cache_dtype == "bfloat16"
    assert target.max_model_len is None  # auto: the engine fits it; nothing to plan
    assert target.flags == ("--enable-prefix-caching", "--served-model-name", "kimi")


def test_a_flag_that_contradicts_its_setting_is_refused_naming_both(tmp_path: Path) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(
        'engine = "vllm==0.16.0"\ngpu = "rtx-pro-6000"\ntensor_parallel = 8\n'
        'flags = ["--tensor-parallel-size", "4"]\n'
    )
    with pytest.raises(TargetError) as refused:
        make_target(profile=profile)
    assert "--tensor-parallel-size 4" in refused.value.problem
    assert "tensor_parallel is 8" in refused.value.problem
    assert refused.value.pointer == "/flags"
    # The same value twice is no contradiction.
    profile.write_text(
        'engine = "vllm==0.16.0"\ngpu = "rtx-pro-6000"\ntensor_parallel = 8\n'
        'flags = ["-tp", "8", "--kv-cache-memory-bytes", "1G"]\nkv_cache_memory = "1GiB"\n'
    )
    assert make_target(profile=profile).tensor_parallel == 8


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('flags = "--enforce-eager"', "a list of argv words"),
        ('flags = ["--max-model-len", "lots"]', "cannot read --max-model-len 'lots'"),
        # vLLM's argparse refuses a unit (human_readable_int: int("1GiB") fails).
        ('flags = ["--kv-cache-memory-bytes", "1GiB"]', "takes bytes: 1073741824, 1G"),
        ('flags = ["--max-model-len", "1.5K"]', "128k, 128K or auto"),
        # A setting's flag with no value is refused, not dropped from the command line.
        ('flags = ["--tensor-parallel-size"]', "--tensor-parallel-size needs a value"),
        ('flags = ["--enforce-eager", "--kv-cache-dtype"]', "--kv-cache-dtype needs a value"),
    ],
)
def test_bad_flags_in_a_profile_name_the_line(tmp_path: Path, line: str, problem: str) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(f'engine = "vllm==0.16.0"\ngpu = "rtx-pro-6000"\n{line}\n')
    with pytest.raises(TargetError) as refused:
        make_target(profile=profile)
    assert problem in refused.value.problem and refused.value.pointer == "/flags"


def test_the_journal_records_the_choice_and_never_the_flags() -> None:
    """The KV dtype decides what is needed, so the journal keeps it; the flags are passed
    through and may hold a secret (--api-key), so the journal does not."""
    target = make_target(
        engine="vllm==0.16.0", gpu=GPU, kv_cache_dtype="bfloat16", flags=["--api-key", "sk-1"]
    )
    assert target.record()["kv_cache_dtype"] == "bfloat16"
    assert "sk-1" not in str(target.record())


def test_the_last_spelling_given_wins_as_argparse_takes_it() -> None:
    target = make_target(
        engine="vllm==0.16.0", gpu=GPU, flags=["-tp", "4", "--tensor-parallel-size", "8"]
    )
    assert target.tensor_parallel == 8
    with pytest.raises(TargetError) as refused:
        make_target(
            engine="vllm==0.16.0",
            gpu=GPU,
            tensor_parallel=4,
            flags=["-tp", "4", "--tensor-parallel-size", "8"],
        )
    assert "the flags say --tensor-parallel-size 8" in refused.value.problem


def _through_plan_options(words: tuple[str, ...]) -> Target:
    """The target ``patcher plan CKPT WORDS`` builds: parsed by the CLI's own parser."""
    from typer.main import get_command

    from patcher.cli.app import app
    from patcher.cli.engine_commands import target_from

    group: Any = get_command(app)
    parent = group.make_context("patcher", ["plan", "CKPT", *words])
    return target_from(
        group.commands["plan"].make_context("plan", ["CKPT", *words], parent=parent).params
    )


@settings(max_examples=60, deadline=None)
@given(
    engine=st.sampled_from(["vllm==0.16.0", "vllm==0.33.0", "sglang==0.5.23"]),
    gpu=st.sampled_from(["rtx-pro-6000", "h200", "sm90", "12.0", "cpu"]),
    tp=st.none() | st.integers(1, 64),
    pp=st.none() | st.integers(1, 8),
    utilization=st.none() | st.floats(0.01, 1.0),
    kv_memory=st.none() | st.floats(0.001, 4096) | st.sampled_from(["1GiB", "590GB", "512MiB"]),
    weights=st.none() | st.floats(0.001, 4096) | st.sampled_from(["590GB", "73GiB"]),
    context=st.none() | st.integers(1, 2**31 - 1) | st.just("auto"),
    kv_dtype=st.none() | st.sampled_from(["auto", "fp8_e4m3", "bfloat16"]),
)
def test_the_options_printed_for_a_target_give_it_back(
    engine: str,
    gpu: str,
    tp: int | None,
    pp: int | None,
    utilization: float | None,
    kv_memory: float | str | None,
    weights: float | str | None,
    context: int | str | None,
    kv_dtype: str | None,
) -> None:
    """run's hints print ``patcher plan CKPT OPTIONS``: pasted, it plans for the same target."""
    # SGLang takes neither a KV space in bytes nor an auto context (refused, tested above).
    assume(engine.startswith("vllm") or (kv_memory is None and context != "auto"))
    target = make_target(
        engine=engine,
        gpu=gpu,
        tensor_parallel=tp,
        pipeline_parallel=pp,
        gpu_memory_utilization=utilization,
        kv_cache_memory=kv_memory,
        weights=weights,
        max_model_len=context,
        kv_cache_dtype=kv_dtype,
    )
    assert _through_plan_options(target.options()) == target


def test_a_profiles_target_is_given_back_by_the_profile_and_what_a_flag_replaced(
    tmp_path: Path,
) -> None:
    profile = tmp_path / "p.toml"
    profile.write_text(
        'engine = "vllm==0.16.0"\ngpu = "rtx-pro-6000"\ntensor_parallel = 8\n'
        'weights = "590GB"\n[transforms]\ndrop-auto-map = {}\n'
    )
    target = make_target(profile=profile, tensor_parallel=4)
    assert target.options() == ("--profile", str(profile.absolute()), "--tp", "4")
    assert _through_plan_options(target.options()) == target


def test_an_auto_context_is_one_setting_however_it_is_spelled(tmp_path: Path) -> None:
    """vLLM takes auto and -1 alike: a profile saying one and its flags the other agree."""
    profile = tmp_path / "p.toml"
    profile.write_text(
        'engine = "vllm==0.16.0"\ngpu = "rtx-pro-6000"\nmax_model_len = -1\n'
        'flags = ["--max-model-len", "auto"]\n'
    )
    target = make_target(profile=profile)
    assert target.fit_context and target.max_model_len is None
    assert target.record()["max_model_len"] == "auto"
