"""doctor's answer when vLLM's own logging setup fails as it is imported
(patcher/advice/logging_config.py): its handler 'vllm' takes its level from
VLLM_LOGGING_LEVEL (logger.py and envs.py, every release read)."""

from __future__ import annotations

from patcher.advice.doctor import diagnose_text

HANDLER = "ValueError: Unable to configure handler 'vllm'"
LEVEL = "ValueError: Unknown level: ''"
LOGGING_LINES = [HANDLER, LEVEL]
VERSION = "INFO 08-06 15:13:32 api_server.py:212] vLLM API server version 0.5.2.2\n"
# logging.config chains the level's refusal to the handler's (Python 3.11's configure())
CHAINED = (
    VERSION
    + "Traceback (most recent call last):\n"
    + '  File "/usr/lib64/python3.11/logging/__init__.py", line 207, in _checkLevel\n'
    + f"{LEVEL}\n\nThe above exception was the direct cause of the following exception:\n\n"
    + "Traceback (most recent call last):\n"
    + '  File "/site-packages/vllm/logger.py", line 61, in _configure_vllm_root_logger\n'
    + f"{HANDLER}\n"
)


def test_vllms_handler_is_told_to_take_a_level_logging_knows() -> None:
    for log in (VERSION + HANDLER + "\n", CHAINED):
        found = diagnose_text(log)
        assert found.code == "logging-config", log
        assert "VLLM_LOGGING_LEVEL" in found.cause
        assert found.fixes[0].kind == "env" and found.fixes[0].text == "VLLM_LOGGING_LEVEL=INFO"
        assert any("VLLM_LOGGING_CONFIG_PATH" in f.text for f in found.fixes)
    # the level the chain names is said
    assert "an empty value" in diagnose_text(CHAINED).cause


def test_a_level_refused_outside_vllm_is_not_sent_to_vllms_variable() -> None:
    found = diagnose_text("[2025-01-01 10:00:00] server_args=ServerArgs()\n" + LEVEL + "\n")
    assert found.code == "logging-config"
    assert not any("VLLM_" in f.text for f in found.fixes)
