"""A target: the whole launch. An engine version on a device (a GPU, or ``cpu`` for vLLM's CPU
build), the parallel sizes, the memory, the context wanted and the transforms wanted whatever
the target. Given by flags or by a profile file (TOML, anywhere), the same names in both::

    engine = "vllm==0.16.0"
    gpu = "rtx-pro-6000"          # a name, a compute capability such as "12.0", or "cpu"
    tensor_parallel = 8           # optional, as vLLM's --tensor-parallel-size (-tp)
    pipeline_parallel = 1         # optional, --pipeline-parallel-size
    gpu_memory_utilization = 0.9  # optional; default: that version's
    kv_cache_memory = "1GiB"      # optional, --kv-cache-memory-bytes (the KV space itself)
    weights = "590GB"             # optional; default: the weight index's total_size
    max_model_len = 131072        # optional; default: what the engine derives; "auto": vLLM
                                  # fits it to the KV memory (0.14 and later)
    kv_cache_dtype = "bfloat16"   # optional, --kv-cache-dtype; default: what 'auto' resolves to
    flags = ["--enable-prefix-caching", "--served-model-name", "kimi"]  # optional, always passed
    [transforms]                  # optional
    set-context-length = { length = 32768 }
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from patcher.engines.engine import Engine, parse_engine
from patcher.engines.gpus import Gpu, parse_gpu
from patcher.engines.installed import installed_engine
from patcher.engines.launch_flags import (
    human_readable_int,
    is_auto_context,
    parse_context,
    refuse_without_flag,
    split_settings,
)
from patcher.engines.model import refuse_unknown_kv_cache_dtype
from patcher.errors import TargetError
from patcher.store.fsio import read_regular
from patcher.text.document import json_problem
from patcher.text.secrets import remember, secret_values
from patcher.transforms.definition import first_datetime
from patcher.units import GIB, parse_size_gib


@dataclass(frozen=True, slots=True)
class Override:
    """A profile's setting that a flag replaced: its key, the value given and the profile's."""

    key: str
    given: Any
    profile: Any

    def to_json(self) -> dict[str, Any]:
        """An override as JSON."""
        return {"key": self.key, "given": self.given, "profile": self.profile}


@dataclass(frozen=True, slots=True)
class Target:
    """What the checkpoint is to be served with, and the transforms wanted regardless."""

    engine: Engine
    gpu: Gpu
    tensor_parallel: int | None = None
    transforms: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    profile: str | None = None
    pipeline_parallel: int | None = None
    gpu_memory_utilization: float | None = None
    kv_cache_memory_gib: float | None = None
    weights_gib: float | None = None
    max_model_len: int | None = None
    overridden: tuple[Override, ...] = ()  # the profile's settings a flag replaced
    kv_cache_dtype: str | None = None
    # The user's own server flags, passed as given (a launch setting among them is read into
    # its field above, so that the plan judges it).
    flags: tuple[str, ...] = ()
    # max_model_len "auto" (vLLM's --max-model-len auto or -1): the engine fits the context to
    # the KV memory itself, so the plan caps nothing (max_model_len is then None).
    fit_context: bool = False
    # The interpreter of a venv with the engine installed: its own config code is asked about
    # the launch (patcher.engines.installed). Not recorded in the journal.
    engine_python: str | None = None

    def record(self) -> dict[str, Any]:
        """What the journal keeps with each entry applied for this target (not the user's
        flags: one may be a secret, such as --api-key)."""
        found: dict[str, Any] = {"engine": str(self.engine), "gpu": self.gpu.name}
        for key, value in self.launch_fields().items():
            found[key] = value
        if self.profile is not None:
            found["profile"] = self.profile
        return found

    def launch_fields(self) -> dict[str, Any]:
        """The launch settings given (parallel sizes, memory, context), by their profile names."""
        fields = {
            "tensor_parallel": self.tensor_parallel,
            "pipeline_parallel": self.pipeline_parallel,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "kv_cache_memory_gib": self.kv_cache_memory_gib,
            "weights_gib": self.weights_gib,
            "max_model_len": "auto" if self.fit_context else self.max_model_len,
            "kv_cache_dtype": self.kv_cache_dtype,
        }
        return {k: v for k, v in fields.items() if v is not None}

    def options(self) -> tuple[str, ...]:
        """The plan/sync options that give this target again (``--profile P``, then each
        setting a flag gave over it; without a profile, every setting). Not the server flags:
        one may be a secret."""
        replaced = {o.key for o in self.overridden}
        words: list[str] = ["--profile", self.profile] if self.profile is not None else []

        def add(key: str, option: str, value: object) -> None:
            if value is not None and (self.profile is None or key in replaced):
                words.extend((option, str(value)))

        add("engine", "--engine", self.engine)
        add("gpu", "--gpu", self.gpu.name)
        add("tensor_parallel", "--tp", self.tensor_parallel)
        add("pipeline_parallel", "--pp", self.pipeline_parallel)
        add("gpu_memory_utilization", "--gpu-utilization", self.gpu_memory_utilization)
        add("kv_cache_memory", "--kv-cache-memory", _gib_text(self.kv_cache_memory_gib))
        add("weights", "--weights", _gib_text(self.weights_gib))
        add("max_model_len", "--max-model-len", "auto" if self.fit_context else self.max_model_len)
        add("kv_cache_dtype", "--kv-cache-dtype", self.kv_cache_dtype)
        if self.engine_python is not None:
            words.extend(("--engine-python", self.engine_python))
        return tuple(words)

    def describe(self) -> str:
        """``vllm==0.16.0 on rtx-pro-6000 (12.0) x8``."""
        if self.gpu.is_cpu:
            where = "the CPU"
        else:
            where = f"{self.gpu.name} ({self.gpu.capability_text})"
        gpus = (self.tensor_parallel or 1) * (self.pipeline_parallel or 1)
        return f"{self.engine} on {where}" + (f" x{gpus}" if gpus > 1 else "")


def _gib_text(gib: float | None) -> str | None:
    """A size in GiB as an option value that reads back to the same number."""
    if gib is None:
        return None
    short = f"{gib:g}"
    return f"{short if float(short) == gib else repr(gib)}GiB"


MAX_PROFILE = 2**20  # a profile is a few lines


MAX_PARALLEL = 4096  # GPUs in one tensor-parallel group; far past any real deployment


def _fail(file: str | None, pointer: str, problem: str) -> TargetError:
    return TargetError(
        problem,
        file=file,
        pointer=pointer if file else None,
        hint="fix the profile (format: docs/plan-and-sync.md)"
        if file
        else "e.g. --engine vllm==0.16.0 --gpu rtx-pro-6000",
    )


def _size(value: Any, source: str | None, key: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _fail(source, f"/{key}", f"expected a size such as '1GiB' or '590GB', got {value!r}")
    try:
        return parse_size_gib(value, key.replace("_", "-"))
    except TargetError as exc:
        raise _fail(source, f"/{key}", exc.problem) from None


def _count(value: Any, source: str | None, key: str, top: int) -> int | None:
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top
    ):
        raise _fail(source, f"/{key}", f"expected an integer from 1 to {top}, got {value!r}")
    return value


LAUNCH_KEYS = (
    "tensor_parallel",
    "pipeline_parallel",
    "gpu_memory_utilization",
    "kv_cache_memory",
    "weights",
    "max_model_len",
    "kv_cache_dtype",
    "flags",
)


def make_target(
    *,
    engine: str | Engine | None = None,
    gpu: str | Gpu | None = None,
    tensor_parallel: int | None = None,
    transforms: Mapping[str, Mapping[str, Any]] | None = None,
    profile: Path | str | None = None,
    pipeline_parallel: int | None = None,
    gpu_memory_utilization: float | None = None,
    kv_cache_memory: str | float | None = None,
    weights: str | float | None = None,
    max_model_len: int | str | None = None,
    kv_cache_dtype: str | None = None,
    flags: Sequence[str] | None = None,
    engine_python: Path | str | None = None,
) -> Target:
    """A target from a profile file, or from the engine and device and the launch settings
    (flags override a profile). Sizes are strings such as ``1GiB`` or numbers of GiB.
    ``engine_python``: the interpreter of a venv with vLLM or SGLang installed, whose own
    config code is then asked about the launch; the engine is the one installed there unless
    ``engine`` names one.

    ``flags`` are the server flags always passed (argv words): one naming a launch setting
    (``--tensor-parallel-size 8``) is read into it, and refused when it contradicts the
    setting given; the others are passed as given."""
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
        unknown = set(data) - {"engine", "gpu", "transforms", *LAUNCH_KEYS}
        if unknown:
            raise _fail(source, f"/{sorted(unknown)[0]}", "unknown key")
        stray = first_datetime(data, "")
        if stray is not None:
            raise _fail(source, stray, "TOML dates and times are not JSON values; quote it")
    named = {
        "engine": engine,
        "gpu": gpu,
        "tensor_parallel": tensor_parallel,
        "pipeline_parallel": pipeline_parallel,
        "gpu_memory_utilization": gpu_memory_utilization,
        "kv_cache_memory": kv_cache_memory,
        "weights": weights,
        "max_model_len": max_model_len,
        "kv_cache_dtype": kv_cache_dtype,
        "flags": None if flags is None else list(flags),
    }
    # A flag given with --profile wins, and says so: never silently.
    overridden = tuple(
        Override(key, flag, data[key])
        for key, flag in named.items()
        if flag is not None and key in data and str(data[key]) != str(flag)
    )
    engine = engine or data.get("engine")
    if engine is None and engine_python is not None:
        engine = installed_engine(Path(engine_python))
        if engine is None:
            raise TargetError(
                f"no vLLM or SGLang is installed for {engine_python}",
                hint="give the interpreter of the venv the engine is installed in, or --engine",
            )
    gpu = gpu or data.get("gpu")
    if engine is None or gpu is None:
        missing = "engine" if engine is None else "gpu"
        raise _fail(source, f"/{missing}", f"a target needs an engine and a GPU; no {missing}")
    if not isinstance(engine, str | Engine) or not isinstance(gpu, str | Gpu):
        raise _fail(source, "/engine", "engine and gpu are strings such as 'vllm==0.16.0'")

    parsed_engine = parse_engine(engine) if isinstance(engine, str) else engine
    passed, settings = _server_flags(
        parsed_engine, flags if flags is not None else data.get("flags"), source
    )

    def given(key: str, flag: Any) -> Any:
        value = flag if flag is not None else data.get(key)
        if key in settings and value is not None and not _same(key, value, settings[key]):
            raise TargetError(
                f"the flags say {settings[key][1]} but {key} is {value}",
                file=source,
                pointer="/flags" if source else None,
                hint="give it once: in the flags, or as the setting",
            )
        return value if value is not None else (settings[key][0] if key in settings else None)

    tp = _count(given("tensor_parallel", tensor_parallel), source, "tensor_parallel", MAX_PARALLEL)
    pp = _count(
        given("pipeline_parallel", pipeline_parallel), source, "pipeline_parallel", MAX_PARALLEL
    )
    context_wanted = given("max_model_len", max_model_len)
    fit = is_auto_context(context_wanted)
    if fit:
        refuse_without_flag(parsed_engine, "max_model_len", source)
    context = None if fit else _count(context_wanted, source, "max_model_len", 2**31 - 1)
    utilization = given("gpu_memory_utilization", gpu_memory_utilization)
    if utilization is not None and (
        isinstance(utilization, bool)
        or not isinstance(utilization, int | float)
        or not 0 < utilization <= 1
    ):
        raise _fail(
            source, "/gpu_memory_utilization", f"expected a number in (0, 1], got {utilization!r}"
        )
    wanted = transforms if transforms is not None else data.get("transforms", {})
    if not isinstance(wanted, Mapping) or not all(
        isinstance(k, str) and isinstance(v, Mapping) for k, v in wanted.items()
    ):
        raise _fail(source, "/transforms", "expected a table: name = { parameter = value }")
    kv_memory = _size(given("kv_cache_memory", kv_cache_memory), source, "kv_cache_memory")
    if kv_memory is not None:
        refuse_without_flag(parsed_engine, "kv_cache_memory", source)
    kv = given("kv_cache_dtype", kv_cache_dtype)
    if kv is not None:
        refuse_unknown_kv_cache_dtype(parsed_engine, kv, source)
    return Target(
        engine=parsed_engine,
        gpu=parse_gpu(gpu) if isinstance(gpu, str) else gpu,
        tensor_parallel=tp,
        transforms={k: dict(v) for k, v in wanted.items()},
        profile=str(Path(profile).absolute()) if profile is not None else None,
        pipeline_parallel=pp,
        gpu_memory_utilization=None if utilization is None else float(utilization),
        kv_cache_memory_gib=kv_memory,
        weights_gib=_size(given("weights", weights), source, "weights"),
        max_model_len=context,
        overridden=overridden,
        kv_cache_dtype=kv,
        flags=passed,
        fit_context=fit,
        engine_python=None if engine_python is None else str(engine_python),
    )


def _server_flags(
    engine: Engine, words: Any, source: str | None
) -> tuple[tuple[str, ...], dict[str, tuple[Any, str]]]:
    """The flags passed as given, and the launch settings among them (key -> (value, the
    flag as written))."""
    if words is None:
        return (), {}
    if not isinstance(words, list | tuple) or not all(isinstance(w, str) for w in words):
        raise _fail(source, "/flags", "expected a list of argv words, e.g. ['--enforce-eager']")
    remember(secret_values(words))
    found, passed = split_settings(engine.name, words)
    settings: dict[str, tuple[Any, str]] = {}
    for key, (flag, text) in found.items():
        if text is None:
            raise _fail(source, "/flags", f"{flag} needs a value (the engine refuses it alone)")
        try:
            if key == "kv_cache_memory":
                value: Any = human_readable_int(text, engine.version) / GIB
            elif key == "gpu_memory_utilization":
                value = float(text)
            elif key == "kv_cache_dtype":
                value = text
            elif key == "max_model_len" and engine.name == "vllm":
                value = parse_context(text, engine.version)  # 128k or auto, as vLLM reads it
            else:
                value = int(text)
        except ValueError:
            spelled = {
                "kv_cache_memory": " (vLLM takes bytes: 1073741824, 1G or 1024M; 1g is 10**9)",
                "max_model_len": " (vLLM takes 131072, 128k, 128K or auto)",
            }
            raise _fail(
                source,
                "/flags",
                f"cannot read {flag} {text!r}"
                + (spelled.get(key, "") if engine.name == "vllm" else ""),
            ) from None
        settings[key] = (value, f"{flag} {text}")
    return passed, settings


def _same(key: str, given: Any, from_flags: tuple[Any, str]) -> bool:
    value = from_flags[0]
    if key == "kv_cache_memory" and isinstance(given, str | int | float):
        return abs(parse_size_gib(given, key) - float(value)) < 1e-6
    if key == "max_model_len" and value == "auto":
        return is_auto_context(given)  # vLLM's two spellings
    return bool(given == value)


# A command's keyword (check's, kv_budget's) -> the Target field that gives it.
_TAKEN = {
    "engine": "engine",
    "gpu": "gpu",
    "tensor_parallel": "tensor_parallel",
    "pipeline_parallel": "pipeline_parallel",
    "gpu_memory_utilization": "gpu_memory_utilization",
    "kv_cache_memory": "kv_cache_memory_gib",
    "weights": "weights_gib",
    "kv_cache_dtype": "kv_cache_dtype",
    "kv_dtype": "kv_cache_dtype",
    "engine_python": "engine_python",
}


def take_target(
    target: Target | None, given: dict[str, Any], defaults: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A command's keyword settings with ``target``'s put in: the Target a provisioning script
    built once (for plan and sync) passed whole to check or kv_budget. A keyword given as well
    (other than its ``defaults`` value) that says something else is refused: never silently
    one or the other."""
    if target is None:
        return given
    merged = dict(given)
    for key, value in given.items():
        field_name = _TAKEN.get(key)
        mine = None if field_name is None else getattr(target, field_name)
        if mine is None:
            continue
        if value is not None and value != (defaults or {}).get(key) and str(value) != str(mine):
            raise TargetError(
                f"{key} is given twice: the target says {mine}, the keyword {value}",
                hint="give it once, in the target or as the keyword",
            )
        merged[key] = mine
    return merged
