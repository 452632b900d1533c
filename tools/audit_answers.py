"""doctor's answer to every message of the catalogue, for reading a family's answers against
their messages and for comparing two revisions.

    python -m tools.audit_answers OUT.json            # every distinct template, diagnosed
    python -m tools.audit_answers OUT.json BEFORE.json  # and how many answers changed since

Each template's first line is filled (the holes with fixed values, as the tests fill them),
logged as its engine logs it, and read by ``diagnose_text``; OUT.json maps
``engine|template text`` to ``[family, code, [fix texts]]``. Run it from another checkout
(``PYTHONPATH=that/checkout``) to get BEFORE.json.
"""

from __future__ import annotations

import json
import sys
import zlib
from collections import Counter
from pathlib import Path

from patcher.advice import catalogue
from patcher.advice.catalogue import Template
from patcher.advice.doctor import diagnose_text
from patcher.advice.families import family_of

_VALUES = ("40", "16", "fp8", "DeepseekV3ForCausalLM", "131072", "0.9", "cutlass")
_PREFIX = {
    "sglang": "[2026-12-04 10:00:00 TP0] ",
    "vllm": "(EngineCore_DP0 pid=1) ERROR 12-04 10:00:00 [core.py:1] ",
}


def log_line(template: Template, seed: int) -> str:
    """The message's first line as its engine logs it, each hole filled with a value."""
    body = "".join(
        part if i % 2 == 0 else _VALUES[(seed + i) % len(_VALUES)]
        for i, part in enumerate(template.head)
    )
    prefix = _PREFIX.get(template.engine, _PREFIX["vllm"])
    return f"{prefix}{template.exception or 'ValueError'}: {body}"


def audit() -> dict[str, list[object]]:
    """Every distinct matchable template: its family, doctor's code and fixes."""
    answers: dict[str, list[object]] = {}
    for template in catalogue.templates():
        key = f"{template.engine}|{template.text}"
        if not template.matchable or key in answers:
            continue
        family = family_of(template)
        # The fill values by the message's own words, not its place in the catalogue: reading
        # more releases does not refill the templates that were there (a stable comparison).
        found = diagnose_text(log_line(template, zlib.crc32(key.encode()) % 97))
        answers[key] = [
            None if family is None else family.name,
            found.code,
            [fix.text for fix in found.fixes],
        ]
    return answers


def main(argv: list[str]) -> int:
    """Write the audit; with a second file, print how many answers changed, by family."""
    if not 1 <= len(argv) <= 2 or any(a.startswith("-") for a in argv):
        print(__doc__, file=sys.stderr)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    answers = audit()
    Path(argv[0]).write_text(json.dumps(answers, indent=0), encoding="utf-8")
    print(f"{len(answers)} templates, {sum(a[1] is not None for a in answers.values())} recognised")
    if len(argv) == 2:
        before = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
        changed = Counter(
            str(a[0]) for key, a in answers.items() if key in before and before[key][2] != a[2]
        )
        total = Counter(str(a[0]) for a in answers.values())
        print(f"{sum(changed.values())} answers changed")
        for family, count in changed.most_common():
            print(f"  {family}: {count} of {total[family]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
