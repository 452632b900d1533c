"""doctor's answers to a parallel size or mode the engine refuses (patcher/advice/
parallel_sizes.py): the executor a mode runs on, the release whose model class has it."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest

from patcher.advice import catalogue
from patcher.advice.doctor import diagnose, diagnose_text
from tests.conftest import SNAPSHOTS
from tools import read_model_classes


def test_a_parallel_mode_refused_on_one_executor_is_the_other_executor() -> None:
    # vLLM 0.5's ParallelConfig._verify_args: pipeline parallelism ran only on Ray's executor
    found = diagnose_text(
        "NotImplementedError: Pipeline parallelism is not supported yet with multiprocessing.\n"
    )
    assert [f.text for f in found.fixes] == ["--distributed-executor-backend ray"]


@pytest.mark.parametrize(
    ("architecture", "fix"),
    [
        # the catalogue's pp: Llama 4's class has SupportsPP from 0.8.4 read
        ("Llama4ForConditionalGeneration", "pip install 'vllm>=0.8.4'"),
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
    assert template.releases[0] == "0.5.1" and "0.11.0" not in template.releases
    log = (
        "INFO 08-10 10:11:02 llm_engine.py:184] Initializing an LLM engine (v0.5.4) with config: "
        "model='/models/m', tensor_parallel_size=2, pipeline_parallel_size=2, quantization=None\n"
        f"[rank0]: NotImplementedError: {template.text}\n"
    )
    found = diagnose_text(log)
    assert found.code == "parallel-sizes"
    assert found.fixes[0].text == "--tensor-parallel-size 4 --pipeline-parallel-size 1"
    assert "vllm serve" in found.fixes[1].text


SGLANG_NO_PIPELINE = (
    "[2026-02-27 10:00:00] server_args=ServerArgs(model_path='moonshotai/Kimi-K2.5', tp_size=8, "
    "pp_size=2)\n"
    "{loaded}"
    "[2026-02-27 10:01:00 PP0 TP0] Scheduler hit an exception: Traceback (most recent call "
    "last):\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 426, '
    "in __init__\n"
    "    self.support_pp\n"
    "AssertionError: Pipeline Parallel is not compatible with this model.\n"
)


def test_sglang_s_pipeline_check_names_the_release_whose_class_takes_the_proxy_tensors() -> None:
    # sglang#19503: SGLang's check is the class's forward taking pp_proxy_tensors
    # (snapshots/engines/sglang-pipeline-check.txt); the class comes from its load line
    snapshot = (SNAPSHOTS / "engines" / "sglang-pipeline-check.txt").read_text()
    assert '"pp_proxy_tensors" in inspect.signature(self.model.forward)' in snapshot
    loaded = (
        "[2026-02-27 10:00:50 PP0 TP0] Load weight end. elapsed=300.1 s, "
        "type=KimiK25ForConditionalGeneration, dtype=torch.bfloat16, avail mem=20.1 GB\n"
    )
    found = diagnose_text(SGLANG_NO_PIPELINE.format(loaded=loaded))
    having = catalogue.feature_releases("sglang", "pp", "KimiK25ForConditionalGeneration")
    # the reading agrees with the class's forward in the snapshot (0.5.9 without, 0.5.10 with)
    forwards = re.findall(
        r"## sglang (\S+): sglang/srt/models/kimi_k25\.py.*\n((?:.+\n)+)", snapshot
    )
    assert {v for v, body in forwards if "pp_proxy_tensors" in body} <= set(having)
    assert not {v for v, body in forwards if "pp_proxy_tensors" not in body} & set(having)
    assert [f.text for f in found.fixes] == [
        "--tp-size 16 --pp-size 1",
        f"pip install 'sglang>={having[0]}'",
    ]


def test_without_the_load_line_the_checkpoint_names_the_class(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(SGLANG_NO_PIPELINE.format(loaded=""))
    assert diagnose(log).fixes[-1].text.endswith("(the log does not name the architecture)")
    root = tmp_path / "ckpt"
    root.mkdir()
    (root / "config.json").write_text(
        json.dumps({"architectures": ["KimiK25ForConditionalGeneration"]})
    )
    assert diagnose(log, checkpoint=root).fixes[-1].text == "pip install 'sglang>=0.5.10'"


def test_the_reader_takes_forward_in_python_s_method_resolution_order(tmp_path: Path) -> None:
    # a mixin without forward is passed over, and in a diamond the right-hand base's forward
    # comes before the shared base's (C3), as SGLang's inspect.signature(model.forward) sees it
    models = (
        "class Base(nn.Module):\n"
        "    def forward(self, input_ids, positions):\n        pass\n"
        "class Mixin:\n    pass\n"
        "class Piped(Base):\n"
        "    def forward(self, input_ids, positions, pp_proxy_tensors=None):\n        pass\n"
        "class MixedForCausalLM(Mixin, Piped):\n    pass\n"
        "class Left(Base):\n    pass\n"
        "class Right(Base):\n"
        "    def forward(self, input_ids, *, pp_proxy_tensors=None):\n        pass\n"
        "class DiamondForCausalLM(Left, Right):\n    pass\n"
        "class PlainForCausalLM(Left):\n    pass\n"
    )
    wheel = tmp_path / "sglang-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("sglang/srt/models/toy.py", models)
    with zipfile.ZipFile(wheel) as archive:
        found = read_model_classes.sglang_pipeline(archive)
    assert found == {"pp": ["DiamondForCausalLM", "MixedForCausalLM"]}


def test_a_size_that_does_not_divide_gets_the_next_size_up_that_does_too() -> None:
    # SGLang on six GPUs, a vision tower of 16 heads: four GPUs may not hold the weights, so
    # the next power of two above six that divides 16 is named beside the one below
    log = "\n".join(
        [
            "[2026-03-04 09:11:08 TP1] Scheduler hit an exception: Traceback (most recent call "
            "last):",
            '  File "/x/sglang/srt/distributed/utils.py", line 23, in ensure_divisibility',
            '    assert numerator % denominator == 0, "{} is not divisible by {}".format(',
            "AssertionError: 16 is not divisible by 6",
        ]
    )
    found = diagnose_text(log)
    assert [f.text for f in found.fixes][:2] == ["--tp-size 4", "--tp-size 8"]
    # none above when the next power of two does not divide the dimension
    twelve = diagnose_text(log.replace("16 is not divisible by 6", "12 is not divisible by 24"))
    assert not any(f.text == "--tp-size 32" for f in twelve.fixes)
