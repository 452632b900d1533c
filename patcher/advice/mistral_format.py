"""Mistral's own checkpoint format asked of a checkpoint that does not have it.

``--config-format mistral`` makes vLLM read the model's configuration from Mistral's own
``params.json`` instead of ``config.json`` (``load_params_config``, transformers_utils/config.py),
and ``--load-format mistral`` its ``consolidated.safetensors``; a Hugging Face-format checkpoint
(a fine-tune, a quantization such as RedHatAI's FP8) has neither. vLLM 0.6.6.post1 and 0.7.3
``assert isinstance(config_dict, dict)`` on the file it did not find, which prints no words; from
0.8.5.post1 the same check raises "Failed to load mistral 'params.json' config for model ...
Please check if the model is a mistral-format model" (read from the wheels,
snapshots/engines/mistral-params-vllm.txt). Either way the checkpoint is whole: the formats
asked of it are the fault, and the defaults (``auto``) read the Hugging Face files it has.
"""

from __future__ import annotations

import re

from patcher.advice.diagnosis import Diagnosis
from patcher.advice.families import FAMILIES
from patcher.advice.log_rules import Fix, LogContext, Rule

_FAMILY = next(f for f in FAMILIES if f.name == "engine-flags")
PARAMS = re.compile(r"Failed to load mistral '([\w.]+)' config for model")


def _answer(file: str) -> tuple[str, list[Fix]]:
    return (
        f"--config-format mistral reads Mistral's own {file}, and this checkpoint has none: it "
        "is in the Hugging Face format (config.json), which the default formats read",
        [
            Fix(
                "advice",
                "leave out --config-format mistral, --load-format mistral and --tokenizer-mode "
                "mistral",
                note="or the Mistral-format repository the model card names, which ships "
                f"{file} and consolidated.safetensors",
            )
        ],
    )


def mistral_params(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """The newer releases' words for Mistral's config file not found."""
    return _answer(m.group(1))


def by_params_assert(frame: str | None, code: str | None) -> Diagnosis | None:
    """The older releases' bare ``assert isinstance(config_dict, dict)`` in
    ``load_params_config``: the same refusal without its words."""
    if frame is None or "transformers_utils/config.py" not in frame:
        return None
    if "in load_params_config" not in frame or "config_dict" not in (code or ""):
        return None
    cause, fixes = _answer("params.json")
    return Diagnosis("-", _FAMILY.name, "AssertionError", cause, tuple(fixes), None, _FAMILY)


MISTRAL_RULES: tuple[Rule, ...] = (("mistral-format", PARAMS, mistral_params),)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
MISTRAL_MARKERS = ("Failed to load mistral",)
