"""doctor's fixes judged against the checkpoint (``doctor LOG --checkpoint CKPT``, and run's
engine output): a fix that does not apply to these files is dropped (an FP8 KV directive
the checkpoint does not declare, expert parallelism its shared expert would refuse, a context
edit the engine would ignore, remote code it does not ship), and an advice the files answer is
made exact (the release whose registry lists its architecture, the model type the engine's
class for it reads, or that no release registers its architecture)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from patcher.advice import catalogue
from patcher.advice.architectures import REGISTRY_LISTS, release_for
from patcher.advice.check import FP8_KV_POINTERS, kv_label
from patcher.advice.diagnosis import Diagnosis
from patcher.advice.finding import dig
from patcher.advice.log_rules import Fix
from patcher.advice.parallel_sizes import PIPELINED_UNNAMED, pipelined_release
from patcher.advice.transformers_rules import MODEL_TYPE_OF_CLASS
from patcher.engines.engine import EngineName, parse_engine
from patcher.engines.files import ConfigFiles, read_config_files
from patcher.engines.model import edit_takes_effect
from patcher.engines.parallel import shared_expert_refused
from patcher.engines.registries import architectures
from patcher.errors import PatcherError
from patcher.store.checkpoint import open_checkpoint


def _declares_fp8_kv(files: ConfigFiles) -> bool:
    """Whether the checkpoint's own quantization config declares an FP8 KV cache."""
    parsed = {"config.json": files.config, "hf_quant_config.json": files.hf_quant}
    return any(kv_label(dig(parsed.get(name), keys)) != "none" for name, keys in FP8_KV_POINTERS)


def _architecture(files: ConfigFiles) -> str | None:
    """The first architecture config.json names, where it names one."""
    names = files.config.get("architectures") if isinstance(files.config, dict) else None
    if not isinstance(names, list) or not names or not isinstance(names[0], str):
        return None
    return names[0]


def _in_place_of(found: Diagnosis, advice: str, make: Callable[[], Fix | None]) -> Diagnosis:
    """``found`` with the fix ``make`` gives in place of the fix whose text is ``advice`` (the
    advice the files answer), or unchanged where it has no such fix or ``make`` gives none."""
    at = next((i for i, f in enumerate(found.fixes) if f.text == advice), None)
    fix = None if at is None else make()
    if at is None or fix is None:
        return found
    return replace(found, fixes=(*found.fixes[:at], fix, *found.fixes[at + 1 :]))


_ROUTED_SLICE = re.compile(r"gate's and up's weight = (\d+) is not divisible")


def _shared_expert_split(found: Diagnosis, files: ConfigFiles) -> Diagnosis:
    """Without expert parallelism where the checkpoint's shared expert would be refused next
    (patcher.engines.parallel.shared_expert_refused: at the TP the routed slice names)."""
    routed = _ROUTED_SLICE.search(found.error or "")
    if routed is None or not shared_expert_refused(files, int(routed.group(1))):
        return found
    expert = ("--enable-expert-parallel", "--ep-size")
    kept = tuple(f for f in found.fixes if not any(word in f.text for word in expert))
    return replace(found, fixes=kept) if kept else found


def _registry_release(found: Diagnosis, files: ConfigFiles) -> Fix | None:
    """The release whose registry (read) lists the checkpoint's architecture (the log did not
    name the architecture; the checkpoint does)."""
    name = _architecture(files)
    if name is None:
        return None
    version = catalogue.version_key(found.engine_version) if found.engine_version else None
    return release_for(name, version)


def _servers(found: Diagnosis, engine: str | None) -> tuple[EngineName, ...]:
    """The engines the log can be: ``run``'s target, else vLLM where the log names a vLLM
    version (only vLLM prints one), else the engine whose message it is, else either."""
    both: tuple[EngineName, ...] = ("vllm", "sglang")
    if engine is not None:
        named = parse_engine(engine).name
        return tuple(s for s in both if s == named)
    if found.engine_version is not None:
        return ("vllm",)
    # a message of one engine's source (not transformers', which both call)
    raised = found.template.engine if found.template is not None else None
    return tuple(s for s in both if s == raised) or both


def _class_model_type(
    files: ConfigFiles, checkpoint: Path | str, servers: tuple[EngineName, ...]
) -> Fix | None:
    """The model type of the config class an engine's class for the checkpoint's architecture
    is written for (``model_config``, read per release), where transformers knows it and the
    checkpoint names another: ``patcher set`` of /model_type. Only the log's engine's class
    counts: another engine's class is not the one that loads."""
    name = _architecture(files)
    if name is None:
        return None
    for server in servers:
        written = [
            entry.split("=", 1)[1]
            for entry in catalogue.features_of(server, "model_config")
            if entry.split("=", 1)[0] == name
        ]
        wanted = {catalogue.config_types().get(c) for c in written} - {None}
        known = sorted(t for t in wanted if t in catalogue.model_types())
        if len(known) == 1 and known[0] != (files.config or {}).get("model_type"):
            return Fix(
                "transform",
                f"patcher set {shlex.quote(str(checkpoint))} config.json /model_type "
                f"'\"{known[0]}\"'",
                note=f"{catalogue.ENGINE_NAMES[server]}'s {name} is written for {written[0]} "
                f"(model type {known[0]}, which transformers knows); journaled, patcher revert "
                "undoes it",
            )
    return None


def _unregistered(files: ConfigFiles, servers: tuple[EngineName, ...]) -> Fix | None:
    """Where no release read of the log's engine registers the checkpoint's architecture, no
    model type makes it load: its weights are laid out for its own project's code, and the
    way is a checkpoint converted to an architecture the engine registers."""
    name = _architecture(files)
    if name is None or not servers:
        return None
    if any(name in registered for s in servers for registered in architectures(s).values()):
        return None
    engines = " or ".join(catalogue.ENGINE_NAMES[s] for s in servers)
    return Fix(
        "advice",
        f"a checkpoint converted to an architecture {engines} registers (the model family's "
        "conversion to the transformers layout)",
        note=f"no {engines} release read registers {name}, the checkpoint's architecture: its "
        "weights are laid out for its own project's code, so no config edit makes it load",
    )


def _pipelined(found: Diagnosis, files: ConfigFiles, servers: tuple[EngineName, ...]) -> Fix | None:
    """The release whose class for the checkpoint's architecture has pipeline parallelism
    (the log did not name the architecture; the files do)."""
    name = _architecture(files)
    if name is None or len(servers) != 1:
        return None
    version = catalogue.version_key(found.engine_version) if found.engine_version else None
    return pipelined_release(servers[0], name, version)


def _no_remote_code(found: Diagnosis, files: ConfigFiles) -> Diagnosis:
    """Without an ``auto_map`` in config.json the checkpoint ships no code of its own, so the
    conditional --trust-remote-code ("if the checkpoint ships its own code") does not apply."""
    config = files.config if isinstance(files.config, dict) else {}
    if "auto_map" in config:
        return found
    kept = tuple(
        f
        for f in found.fixes
        if not (f.text == "--trust-remote-code" and (f.note or "").startswith("if the checkpoint"))
    )
    return replace(found, fixes=kept) if kept and len(kept) != len(found.fixes) else found


def judge_fixes(
    found: Diagnosis, checkpoint: Path | str, *, engine: str | None = None
) -> Diagnosis:
    """``found`` less the fixes that do not apply to this checkpoint: stripping an FP8 KV
    directive it does not declare (the FP8 cache came from a flag, not from the files), and
    a context edit ``engine`` (``run``'s target; else the log's vLLM version) would ignore
    (vLLM before 0.30 derives a YaRN context from original_max_position_embeddings x factor)."""
    try:
        files = read_config_files(open_checkpoint(checkpoint))
    except PatcherError:
        return found
    if not _declares_fp8_kv(files):
        kept = tuple(f for f in found.fixes if " strip-fp8-kv-cache" not in f.text)
        if len(kept) != len(found.fixes):
            found = replace(
                found,
                fixes=kept
                or (
                    Fix(
                        "advice",
                        "the checkpoint declares no FP8 KV cache: drop --kv-cache-dtype "
                        "fp8, or see the reasons",
                    ),
                ),
            )
    found = _shared_expert_split(found, files)
    found = _in_place_of(found, REGISTRY_LISTS, lambda: _registry_release(found, files))
    servers = _servers(found, engine)
    # the model type of the engine's class, else, where the engine has none, a conversion
    found = _in_place_of(
        found,
        MODEL_TYPE_OF_CLASS,
        lambda: _class_model_type(files, checkpoint, servers) or _unregistered(files, servers),
    )
    found = _in_place_of(found, PIPELINED_UNNAMED, lambda: _pipelined(found, files, servers))
    found = _no_remote_code(found, files)
    named = engine or (None if found.engine_version is None else f"vllm=={found.engine_version}")
    if named is None or not named.startswith("vllm"):
        return found
    try:
        follows = edit_takes_effect(parse_engine(named), files)
    except PatcherError:
        return found
    if follows:
        return found
    kept = tuple(f for f in found.fixes if " set-context-length" not in f.text)
    return replace(found, fixes=kept) if len(kept) != len(found.fixes) else found
