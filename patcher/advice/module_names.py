"""doctor's answer when transformers cannot import a local model directory's own code because
of the directory's name: ``ModuleNotFoundError: No module named 'transformers_modules.Qwen1'``.

transformers copies a local directory's code files under ``transformers_modules/<name>`` and
imports ``transformers_modules.<name>.<file>``; before 4.57.0 ``<name>`` is the directory's
base name as it is, so a ``.`` in it ("Qwen1.5-7B-Chat") splits the import path and the module
Python looks for is the name cut at that dot. From 4.57.0 the name goes through
``_sanitize_module_name`` (``.`` becomes ``_dot_``). Read from transformers' wheels 4.37.2 to
5.25.0 (tools/read_module_names.py, snapshots/engines/module-names-transformers.txt).

A Hub repository's name is imported as ``transformers_modules.<owner>.<name>`` (the same cut
at its dot); a relative import inside the copied code names the package whole
("transformers_modules.ERNIE-4.5-VL-28B-A3B-PT"). Only these are read so: a name whose last
part ends in a digit (a dot in a model's name is a version's, "1.5", "4.5", so the part
before it ends in one), or one with a digit on each side of a dot. A module of the code itself
missing (``transformers_modules.<name>.modeling_qwen2``) is named as transformers names those
files, and a directory that is whole but absent on another node ends as its name does.
"""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix, LogContext, Rule

# The first transformers release read that replaces the '.' of the directory's name.
SANITIZED_FROM = "4.57.0"
CUT = re.compile(
    r"No module named 'transformers_modules\."
    # an owner's name, then a name cut at its dot, not one of the code's own files
    r"((?:[\w-]+\.)?(?!(?:modeling|configuration|tokenization|processing|image_processing|"
    r"feature_extraction|generation|quantization)_)[\w-]*\d"
    # or a name whole with its dot
    r"|[\w.-]*\d\.\d[\w.-]*)'"
)


def cut_at_dot(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """The model's name, cut at a '.' by the import (or named whole by a relative import):
    a directory named without one, or a transformers that replaces it."""
    named = m.group(1)
    return (
        f"transformers imports the model's own code as the module transformers_modules.<its "
        f"name>, and the name has a '.' (transformers_modules.{named}): Python splits the "
        f"import path there; transformers before {SANITIZED_FROM} uses the name as it is",
        [
            Fix(
                "advice",
                "the model in a directory whose name has no '.' ('_' for it), and the engine "
                "given that path (a Hub model: hf download OWNER/NAME --local-dir DIR first)",
            ),
            Fix(
                "dependency",
                f"pip install 'transformers>={SANITIZED_FROM}'",
                note="its releases turn the '.' into '_dot_'; only where the engine release "
                "accepts that transformers (pip check tells)",
            ),
        ],
    )


MODULE_NAME_RULES: tuple[Rule, ...] = (("remote-code-path", CUT, cut_at_dot),)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
MODULE_NAME_MARKERS = ("No module named 'transformers_modules",)
