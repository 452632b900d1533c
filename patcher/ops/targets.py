"""A target: an engine version on a GPU, optionally a tensor-parallel size and transforms wanted
whatever the target. Given by flags or by a profile file (TOML, anywhere)::

    engine = "vllm==0.16.0"
    gpu = "rtx-pro-6000"          # a name or a compute capability such as "12.0"
    tensor_parallel = 8           # optional
    [transforms]                  # optional
    set-context-length = { length = 32768 }
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patcher.engines.gpus import Gpu, parse_gpu
from patcher.engines.target import Engine, parse_engine
from patcher.errors import TargetError
from patcher.store.fsio import read_regular
from patcher.text.document import json_problem
from patcher.transforms.definition import first_datetime


@dataclass(frozen=True, slots=True)
class Target:
    """What the checkpoint is to be served with, and the transforms wanted regardless."""

    engine: Engine
    gpu: Gpu
    tensor_parallel: int | None = None
    transforms: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    profile: str | None = None

    def record(self) -> dict[str, Any]:
        """What the journal keeps with each entry applied for this target."""
        found: dict[str, Any] = {"engine": str(self.engine), "gpu": self.gpu.name}
        if self.tensor_parallel is not None:
            found["tensor_parallel"] = self.tensor_parallel
        if self.profile is not None:
            found["profile"] = self.profile
        return found

    def describe(self) -> str:
        """``vllm==0.16.0 on rtx-pro-6000 (12.0)``."""
        return f"{self.engine} on {self.gpu.name} ({self.gpu.capability_text})"


MAX_PROFILE = 2**20  # a profile is a few lines


MAX_PARALLEL = 4096  # GPUs in one tensor-parallel group; far past any real deployment


def _fail(file: str | None, pointer: str, problem: str) -> TargetError:
    return TargetError(
        problem,
        file=file,
        pointer=pointer if file else None,
        hint="fix the profile (format: README, 'Targets and profiles')"
        if file
        else "e.g. --engine vllm==0.16.0 --gpu rtx-pro-6000",
    )


def make_target(
    *,
    engine: str | Engine | None = None,
    gpu: str | Gpu | None = None,
    tensor_parallel: int | None = None,
    transforms: Mapping[str, Mapping[str, Any]] | None = None,
    profile: Path | str | None = None,
) -> Target:
    """A target from a profile file, or from the engine and GPU (flags override a profile)."""
    source = None
    data: dict[str, Any] = {}
    if profile is not None:
        source = str(profile)
        try:
            data = tomllib.loads(read_regular(Path(profile), MAX_PROFILE).decode("utf-8"))
        except OSError as exc:
            raise TargetError(
                f"cannot read the profile ({exc.strerror})", file=source, hint="check the path"
            ) from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise _fail(source, "", f"invalid TOML ({json_problem(exc)})") from None
        unknown = set(data) - {"engine", "gpu", "tensor_parallel", "transforms"}
        if unknown:
            raise _fail(source, f"/{sorted(unknown)[0]}", "unknown key")
        stray = first_datetime(data, "")
        if stray is not None:
            raise _fail(source, stray, "TOML dates and times are not JSON values; quote it")
    engine = engine or data.get("engine")
    gpu = gpu or data.get("gpu")
    if engine is None or gpu is None:
        missing = "engine" if engine is None else "gpu"
        raise _fail(source, f"/{missing}", f"a target needs an engine and a GPU; no {missing}")
    if not isinstance(engine, str | Engine) or not isinstance(gpu, str | Gpu):
        raise _fail(source, "/engine", "engine and gpu are strings such as 'vllm==0.16.0'")
    tp = tensor_parallel if tensor_parallel is not None else data.get("tensor_parallel")
    if tp is not None and (
        isinstance(tp, bool) or not isinstance(tp, int) or not 1 <= tp <= MAX_PARALLEL
    ):
        raise _fail(
            source, "/tensor_parallel", f"expected an integer from 1 to {MAX_PARALLEL}, got {tp!r}"
        )
    wanted = transforms if transforms is not None else data.get("transforms", {})
    if not isinstance(wanted, Mapping) or not all(
        isinstance(k, str) and isinstance(v, Mapping) for k, v in wanted.items()
    ):
        raise _fail(source, "/transforms", "expected a table: name = { parameter = value }")
    return Target(
        engine=parse_engine(engine) if isinstance(engine, str) else engine,
        gpu=parse_gpu(gpu) if isinstance(gpu, str) else gpu,
        tensor_parallel=tp,
        transforms={k: dict(v) for k, v in wanted.items()},
        profile=str(Path(profile).absolute()) if profile is not None else None,
    )
