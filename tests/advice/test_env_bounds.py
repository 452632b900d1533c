"""A kernel's check against a bound the engine sets from an environment variable
(patcher/advice/env_bounds.py). DeepEP's check and its two wordings are read from DeepEP's source
(snapshots/engines/deepep-dispatch-bound.txt); which variable SGLang sets the bound from, its
default and its cap are read from SGLang's wheels per release (the ``env_bound:``,
``env_default:`` and ``env_cap:`` features of the catalogue). No log here copies a report."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from patcher.advice.catalogue import feature_by_release, feature_releases
from patcher.advice.doctor import diagnose_text

SNAPSHOT = Path(__file__).resolve().parents[2] / "snapshots/engines/deepep-dispatch-bound.txt"
VARIABLE = "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK"
# A line of the rule's for tests/advice/test_doctor.py's every-rule check: DeepEP's check as
# SGLang's scheduler prints it.
ENV_BOUND_LINES = [
    "RuntimeError: Failed: Assertion error /sgl-workspace/DeepEP/csrc/deep_ep.cpp:1553 "
    "'x.size(0) == topk_idx.size(0) and x.size(0) <= num_max_dispatch_tokens_per_rank'",
]


def _check() -> str:
    """DeepEP's check as its source writes it."""
    text = SNAPSHOT.read_text()
    found = re.search(
        r"EP_HOST_ASSERT\((x\.size\(0\) == .*?num_max_dispatch_tokens_per_rank)\);", text
    )
    assert found is not None
    return found.group(1)


def _words(check: str, newer: bool) -> str:
    """The check raised in DeepEP's words: before EPv2 ("Failed: Assertion error FILE:LINE
    'cond'") and from EPv2 on ("Assertion exception (FILE:LINE): cond")."""
    if newer:
        where = "/build/DeepEP/csrc/legacy/buffer.hpp:1481"
        return f"RuntimeError: Assertion exception ({where}): {check}"
    where = "/sgl-workspace/DeepEP/csrc/deep_ep.cpp:1553"
    return f"RuntimeError: Failed: Assertion error {where} '{check}'"


def _log(error: str, capture: bool = False) -> str:
    lines = [
        "[2026-04-17 08:12:40 DP3 TP3 EP3] Load weight end. type=DeepseekV3ForCausalLM, "
        "dtype=torch.bfloat16, avail mem=120.52 GB, mem usage=45.11 GB.",
        "[2026-04-17 08:12:58 DP3 TP3 EP3] Scheduler hit an exception: Traceback (most recent "
        "call last):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/layers/moe/token_dispatcher/deepep.py",'
        " line 640, in _dispatch_core",
        "    self.get_deepep_buffer().low_latency_dispatch(",
        error,
    ]
    if capture:
        lines += [
            "",
            "During handling of the above exception, another exception occurred:",
            "",
            "Traceback (most recent call last):",
            '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py"'
            ", line 289, in __init__",
            "    raise Exception(",
            f"Exception: Capture cuda graph failed: {error.split(': ', 1)[1]}",
            "Possible solutions:",
            "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)",
        ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("newer", [False, True])
def test_the_dispatch_bound_is_the_variable_sglang_sets_it_from(newer: bool) -> None:
    releases = feature_releases("sglang", "env_bound:num_max_dispatch_tokens_per_rank", VARIABLE)
    assert releases, "SGLang's reading of the variable behind the bound is missing"
    default = feature_by_release("sglang", f"env_default:{VARIABLE}")[releases[-1]]
    cap = feature_by_release("sglang", f"env_cap:{VARIABLE}").get(releases[-1])
    found = diagnose_text(_log(_words(_check(), newer)))
    assert found.code == "env-bound"
    env = found.fixes[0]
    assert env.kind == "env"
    name, value = env.text.split("=")
    assert name == VARIABLE  # DeepEP's own, not Mooncake's or MORI's of the same name
    assert int(value) > int(default)
    assert cap is None or int(value) <= int(cap)
    assert f"default {default}" in (env.note or "")
    assert any("--cuda-graph-max-bs" in f.text for f in found.fixes[1:])


def test_a_capture_that_failed_on_the_bound_is_answered_by_the_bound() -> None:
    found = diagnose_text(_log(_words(_check(), False), capture=True))
    assert found.fixes[0].text.startswith(f"{VARIABLE}=")


def test_a_bound_no_release_sets_from_the_environment_is_not_this_answer() -> None:
    found = diagnose_text(
        _log("RuntimeError: Failed: Assertion error /x/kernel.cpp:10 'n <= max_tokens_per_block'")
    )
    assert found.code != "env-bound"


def test_a_message_that_prints_the_values_is_its_familys_not_this() -> None:
    # vLLM's own words (config/parallel.py) name a setting some release assigns from
    # VLLM_DP_SIZE; a message is answered by its family, only an assertion's condition here
    found = diagnose_text(
        "ValueError: data_parallel_size_local (4) must be <= data_parallel_size (2)\n"
    )
    assert found.code != "env-bound"
    assert not any(f.text.startswith("VLLM_DP_SIZE") for f in found.fixes)
