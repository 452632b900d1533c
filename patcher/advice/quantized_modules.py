"""doctor's answer when a checkpoint ships the scales of a quantized module its engine built
unquantized: an exclude list that names the module, or (vLLM's ModelOpt before the release
the reading names, ``modelopt_quantized_lm_head``) an LM head it never quantizes."""

from __future__ import annotations

import re
from dataclasses import replace

from patcher.advice.log_rules import Fix, LogContext
from patcher.engines.readings import vllm_readings


def excluded_scale(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """``There is no module or parameter named 'lm_head.x_scale'``: the checkpoint ships a
    quantized LM head that the engine built unquantized."""
    module = m.group(1).split(".")[0]
    exclude = replace(
        ctx.apply("remove-quant-exclude-modules", f" --set 'pattern={module}*'"),
        note="the pattern exactly as exclude_modules holds it (lm_head* or lm_head)",
    )
    if module == "lm_head" and ctx.engine != "sglang":
        # vLLM's ModelOpt quantizes the LM head only from the release the reading names;
        # before it, lm_head loads unquantized whatever the exclude list says.
        readings = vllm_readings()
        since = next((v for v, r in readings.items() if r.modelopt_quantized_lm_head), None)
        release = ".".join(map(str, since or ()))
        upgrade = Fix(
            "dependency",
            f"pip install 'vllm>={release}'",
            note="the releases read whose ModelOpt quantizes the LM head",
        )
        if since is not None and ctx.version is not None and ctx.version[:3] < since:
            return (
                f"the checkpoint ships {m.group(1)} (a quantized LM head), and this vLLM's "
                "ModelOpt loads the LM head unquantized whatever the exclude list says: no "
                "config edit loads it",
                [upgrade],
            )
        if since is not None and ctx.version is None:
            return (
                f"the checkpoint ships {m.group(1)} (a quantized LM head) that this engine "
                "has no parameter for: vLLM's ModelOpt quantizes the LM head from "
                f"{release} (before, whatever the exclude list says), and "
                "from then on only where the exclude list does not name it",
                [
                    replace(upgrade, note="on an older vLLM"),
                    replace(exclude, kind="advice", text="on a newer one: " + exclude.text),
                ],
            )
    return (
        f"the checkpoint ships {m.group(1)} (a quantized module) while the quantization "
        "config's exclude list names that module as unquantized",
        [exclude],
    )
