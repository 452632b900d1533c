"""doctor's answer when transformers refuses a class a model's own code registers under a name:
``AttributeError: 'str' object has no attribute '__module__'`` raised in the Auto classes'
``register``.

A model's code, loaded with remote code as the engine starts, often registers its processor or
tokenizer under a name (``AutoProcessor.register("dots_ocr", DotsVLProcessor)``) where
transformers documents a config class. Every ``Auto*.register`` ends in
``_LazyAutoMapping.register`` (``models/auto/auto_factory.py``); transformers 5.13.0 alone of
the releases read (4.37.2 to 5.25.0) reads the key's ``__module__`` there without asking first,
so a name raises; 5.13.1 asks with ``getattr`` again. Read by running each wheel's method on a
stand-in mapping (tools/read_auto_register.py, snapshots/engines/auto-register-transformers.txt).
Answered only where the traceback's last frame is that ``register``: the same words from any
other code are not this.
"""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix, LogContext, Rule

# The transformers releases read whose registration refuses a ``str`` key.
REFUSED_IN = ("5.13.0",)
REFUSED = re.compile(r"AttributeError: 'str' object has no attribute '__module__'")


def name_refused(_m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """A class registered under a name, refused by the transformers releases that read the
    key's module: any other transformers release, or the model's code registering under its
    config class. No answer where the traceback did not end in the registration."""
    if not ctx.registering:
        return "", []
    releases = ", ".join(REFUSED_IN)
    excluded = ",".join(f"!={r}" for r in REFUSED_IN)
    return (
        f"the model's own code registers a class of its under a name (a str) where transformers "
        f"takes a config class, and transformers {releases} reads the key's module as it "
        "registers it, so a name fails; the transformers releases read before and after it "
        "accept a name",
        [
            Fix(
                "dependency",
                f"pip install 'transformers{excluded}'",
                note=f"any release read but {releases}; only where the engine release accepts "
                "that transformers (pip check tells)",
            ),
            Fix(
                "advice",
                "or the model's code registering under its config class "
                "(AutoProcessor.register(ItsConfig, ItsProcessor))",
            ),
        ],
    )


AUTO_REGISTER_RULES: tuple[Rule, ...] = (("registered-name", REFUSED, name_refused),)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
AUTO_REGISTER_MARKERS = ("Error: 'str' object has no attribute '__module__'",)
