"""doctor on vLLM's hybrid KV cache manager turned off for a model whose KV cache specs cannot be
made one type without it (hybrid_manager.py): the switches the log shows are dropped, or named
as a condition where it shows none; held to the engine's wording per release (the catalogue)
and to its source (the recorded reading)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from patcher.advice import catalogue
from patcher.advice.doctor import diagnose_text

RECORDED = Path(__file__).parents[2] / "snapshots" / "engines" / "vllm-hybrid-kv-manager.txt"
# one line of the wording, for the rule table's test (test_doctor.py)
HYBRID_MANAGER_LINES = [
    "ValueError: Hybrid KV cache manager is disabled but failed to convert the KV cache specs "
    "to one unified type."
]


def _messages() -> list[tuple[str, str]]:
    """Each wording of the failure in the catalogue, with the first release that raises it."""
    return [
        (t.parts[0], t.releases[0])
        for t in catalogue.templates("vllm")
        if len(t.parts) == 1 and t.parts[0].endswith("to one unified type.")
    ]


def _log(version: str, message: str, *before: str) -> str:
    return "\n".join(
        (
            f"(APIServer pid=1) INFO 04-01 08:02:10 [api_server.py:1805] vLLM API server version "
            f"{version}",
            *before,
            "(EngineCore_DP0 pid=251) ERROR 04-01 08:05:30 [core.py:1029] EngineCore failed to "
            "start.",
            f"(EngineCore_DP0 pid=251) ERROR 04-01 08:05:30 [core.py:1029] ValueError: {message}",
        )
    )


def test_every_release_s_wording_is_answered_and_both_are_recorded() -> None:
    messages = _messages()
    assert len(messages) == 2  # 0.9.1 to 0.26.0, and 0.27.0 on
    recorded = RECORDED.read_text()
    assert "convert the KV cache specs to one unified type." in recorded
    for message, first in messages:
        found = diagnose_text(_log(first, message))
        assert found.code == "hybrid-kv-manager", message
        assert "no config fix" not in found.cause


def test_the_switches_the_command_shows_are_dropped() -> None:
    args = (
        "INFO 04-01 08:02:11 [utils.py:261] non-default args: {'model': 'tclf90/Qwen3.5-122B-A10B"
        "-AWQ', 'tensor_parallel_size': 4, 'kv_offloading_backend': 'native', "
        "'kv_offloading_size': 80.0, 'disable_hybrid_kv_cache_manager': True}"
    )
    message = _messages()[0][0]
    found = diagnose_text(_log("0.17.0", message, args))
    assert [(f.kind, f.text) for f in found.fixes] == [
        (
            "advice",
            "drop --disable-hybrid-kv-cache-manager --kv-offloading-size --kv-offloading-backend",
        )
    ]
    assert "--kv-offloading-backend" not in found.cause  # it starts nothing without a size
    backend_alone = args.replace("'kv_offloading_size': 80.0, ", "")
    assert "backend" not in diagnose_text(_log("0.17.0", message, backend_alone)).fixes[0].text
    # a preference for the manager is not a switch that turns it off
    kept = args.replace("'disable_hybrid_kv_cache_manager': True", "'max_model_len': 131072")
    kept_found = diagnose_text(_log("0.17.0", message, kept))
    assert "--disable-hybrid" not in kept_found.fixes[0].text


def test_vllm_s_own_warning_names_the_connector() -> None:
    warning = (
        "WARNING 03-04 12:47:30 [vllm.py:1188] Turning off hybrid kv cache manager because "
        "`--kv-transfer-config` is set. This will reduce the performance of vLLM on LLMs with "
        "sliding window attention or Mamba attention. If you are a developer of kv connector, "
        "please consider supporting hybrid kv cache manager for your connector by making sure "
        "your connector is a subclass of `SupportsHMA` defined in kv_connector/v1/base.py and "
        "use --no-disable-hybrid-kv-cache-manager to start vLLM."
    )
    message = _messages()[-1][0]
    found = diagnose_text(_log("0.27.0", message, warning))
    assert [f.text for f in found.fixes] == ["drop --kv-transfer-config"]


def test_with_no_switch_shown_they_are_named_as_a_condition() -> None:
    found = diagnose_text(_log("0.26.0", _messages()[0][0]))
    (fix,) = found.fixes
    assert fix.kind == "advice" and "where the command has them" in fix.text
    assert fix.note is not None and "no config fix there" in fix.note


@pytest.mark.parametrize(
    "switch",
    [
        "--disable-hybrid-kv-cache-manager",
        "--kv-transfer-config",
        "--kv-offloading-size",
        "--kv-events-config",
    ],
)
def test_each_switch_named_is_one_the_source_turns_the_manager_off_by(switch: str) -> None:
    """The source recorded sets the manager off for each: the explicit flag, a connector
    without SupportsHMA (the offloading's one resolved before the check in 0.26.0), KV events
    in 0.17.0."""
    recorded = RECORDED.read_text()
    setting = switch.removeprefix("--").replace("-", "_")
    if switch == "--disable-hybrid-kv-cache-manager":
        assert "self.scheduler_config.disable_hybrid_kv_cache_manager" in recorded
    elif switch == "--kv-offloading-size":
        assert re.search(r"kv_offloading_size := self\.cache_config\.kv_offloading_size", recorded)
        assert "before the HMA check below" in recorded
    else:
        assert f"self.{setting} is not None" in recorded
