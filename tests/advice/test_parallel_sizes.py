"""doctor's answers to a parallel size or mode the engine refuses (patcher/advice/
parallel_sizes.py): the executor a mode runs on, the release whose model class has it."""

from __future__ import annotations

import pytest

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
