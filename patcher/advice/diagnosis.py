"""The one answer doctor gives: the root error found in a log, what it means, what to run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from patcher.advice.catalogue import Template
from patcher.advice.families import Family
from patcher.advice.log_rules import Fix
from patcher.engines.engine import parse_engine
from patcher.engines.readings import Assumed, assumed
from patcher.errors import PatcherError
from patcher.results import JsonResult


@dataclass(frozen=True, slots=True, repr=False)
class Diagnosis(JsonResult):
    """The root error found in a log, what it means, and what to run."""

    log: str
    code: str | None
    error: str | None
    cause: str
    fixes: tuple[Fix, ...]
    engine_version: str | None
    # A failure read from the engines' own messages (catalogue.py): the family, its answer
    # kind, and where the engine raises it.
    family: Family | None = None
    template: Template | None = None

    @property
    def recognised(self) -> bool:
        """Whether the log held a failure the doctor knows."""
        return self.code is not None

    @property
    def reading(self) -> Assumed | None:
        """The vLLM release whose rules answer for the log's version (None: none named)."""
        if self.engine_version is None:
            return None
        try:
            return assumed(parse_engine(f"vllm=={self.engine_version}"))
        except PatcherError:
            return None

    def to_json(self) -> dict[str, Any]:
        """A log diagnosis as JSON."""
        return {
            "log": self.log,
            "recognised": self.recognised,
            "code": self.code,
            "error": self.error,
            "cause": self.cause,
            "engine_version": self.engine_version,
            "reading": None if self.reading is None else self.reading.to_json(),
            "fixes": [{"kind": f.kind, "text": f.text, "note": f.note} for f in self.fixes],
            "family": None if self.family is None else self.family.name,
            "answer": None if self.family is None else self.family.answer,
            "raised_by": None
            if self.template is None
            else {
                "engine": self.template.engine,
                "file": self.template.file,
                "releases": list(self.template.releases),
                "message": self.template.text,
            },
        }
