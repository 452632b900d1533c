"""doctor's answers to a parallel size or mode the engine refuses (patcher/advice/
parallel_sizes.py): the executor a mode runs on, the release whose model class has it."""

from __future__ import annotations

import pytest

from patcher.advice import catalogue
from patcher.advice.doctor import diagnose_text


def test_a_parallel_mode_refused_on_one_executor_is_the_other_executor() -> None:
    # vLLM 0.5's ParallelConfig._verify_args: pipeline parallelism ran only on Ray's executor
    found = diagnose_text(
        "NotImplementedError: Pipeline parallelism is not supported yet with multiprocessing.\n"
    )
    assert [f.text for f in found.fixes] == ["--distributed-executor-backend ray"]


@pytest.mark.parametrize(
    ("architecture", "fix"),
    [
        # the catalogue's pp: Llama 4's class has SupportsPP from 0.8.5.post1 read
        ("Llama4ForConditionalGeneration", "pip install 'vllm>=0.8.5.post1'"),
        ("NoSuchForCausalLM", "no vLLM release read"),
    ],
)
def test_no_pipeline_path_names_the_release_whose_class_has_one(
    architecture: str, fix: str
) -> None:
    found = diagnose_text(
        "INFO 04-08 10:00:00 [api_server.py:1000] vLLM API server version 0.8.3\n"
        f"INFO 04-08 10:00:00 [model.py:600] Resolved architecture: {architecture}\n"
        "NotImplementedError: Pipeline parallelism is not supported for this model. Supported "
        "models implement the `SupportsPP` interface.\n"
    )
    assert found.code == "parallel-sizes"
    assert found.fixes[-1].text.startswith(fix)


@pytest.mark.parametrize(
    ("quantization", "offered"),
    [("awq_marlin", False), (None, True)],
)
def test_marlins_gptq_way_out_is_not_offered_for_an_awq_checkpoint(
    quantization: str | None, offered: bool
) -> None:
    # marlin_utils.py's message names --quantization gptq for both Marlin methods; AWQ's own
    # kernel (awq.py) refuses the same slice
    head = (
        f"INFO 02-13 14:18:00 llm_engine.py:234] Initializing an LLM engine with config: "
        f"model='m', quantization={quantization}, seed=0\n"
        if quantization
        else ""
    )
    found = diagnose_text(
        head + "ValueError: Weight input_size_per_partition = 14784 is not divisible by "
        "min_thread_k = 128. Consider reducing tensor_parallel_size or running with "
        "--quantization gptq.\n"
    )
    texts = [f.text for f in found.fixes]
    assert ("--quantization gptq" in texts) is offered
    assert any(t.startswith("--tensor-parallel-size") for t in texts)


def test_pipeline_parallelism_through_the_llm_class_is_tensor_parallelism_or_the_server() -> None:
    # vLLM 0.5 to 0.10's LLMEngine.step: pipeline parallelism only under AsyncLLMEngine
    (template,) = [
        t
        for t in catalogue.templates("vllm")
        if t.text.startswith("Pipeline parallelism is only supported through AsyncLLMEngine")
    ]
    assert template.releases[0] == "0.5.5" and "0.11.0" not in template.releases
    log = (
        "INFO 08-10 10:11:02 llm_engine.py:184] Initializing an LLM engine (v0.5.4) with config: "
        "model='/models/m', tensor_parallel_size=2, pipeline_parallel_size=2, quantization=None\n"
        f"[rank0]: NotImplementedError: {template.text}\n"
    )
    found = diagnose_text(log)
    assert found.code == "parallel-sizes"
    assert found.fixes[0].text == "--tensor-parallel-size 4 --pipeline-parallel-size 1"
    assert "vllm serve" in found.fixes[1].text
