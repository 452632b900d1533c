"""doctor's fixes judged against the checkpoint (``doctor LOG --checkpoint CKPT``, and run's
engine output): a fix that does not apply to these files is dropped (an FP8 KV directive
the checkpoint does not declare, expert parallelism its shared expert would refuse, a context
edit the engine would ignore, remote code it does not ship), and an advice the files answer is
made exact (the release whose registry lists its architecture, the model type the engine's
class for it reads, or that no release registers its architecture)."""

from __future__ import annotations

import re
import shlex
from dataclasses import replace
from pathlib import Path

from patcher.advice import catalogue
from patcher.advice.architectures import release_for
from patcher.advice.check import FP8_KV_POINTERS, kv_label
from patcher.advice.diagnosis import Diagnosis
from patcher.advice.finding import dig
from patcher.advice.log_rules import Fix
from patcher.advice.named_flags import REGISTRY_LISTS
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


def _registry_release(found: Diagnosis, files: ConfigFiles) -> Diagnosis:
    """The release whose registry (read) lists the checkpoint's architecture, in place of the
    advice to find one (the log did not name the architecture; the checkpoint does)."""
    at = next((i for i, f in enumerate(found.fixes) if f.text == REGISTRY_LISTS), None)
    names = files.config.get("architectures") if isinstance(files.config, dict) else None
    if at is None or not isinstance(names, list) or not names or not isinstance(names[0], str):
        return found
    version = found.engine_version
    listed = release_for(names[0], catalogue.version_key(version) if version else None)
    if listed is None:
        return found
    return replace(found, fixes=(*found.fixes[:at], listed, *found.fixes[at + 1 :]))


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
    found: Diagnosis, files: ConfigFiles, checkpoint: Path | str, servers: tuple[EngineName, ...]
) -> Diagnosis:
    """The model type of the config class an engine's class for the checkpoint's architecture
    is written for (``model_config``, read per release), where transformers knows it and the
    checkpoint names another: ``patcher set`` of /model_type, in place of the advice to find it.
    Only the log's engine's class counts: another engine's class is not the one that loads."""
    at = next((i for i, f in enumerate(found.fixes) if f.text == MODEL_TYPE_OF_CLASS), None)
    config = files.config if isinstance(files.config, dict) else {}
    names = config.get("architectures")
    if at is None or not isinstance(names, list) or not names or not isinstance(names[0], str):
        return found
    for name in servers:
        written = [
            entry.split("=", 1)[1]
            for entry in catalogue.features_of(name, "model_config")
            if entry.split("=", 1)[0] == names[0]
        ]
        wanted = {catalogue.config_types().get(c) for c in written} - {None}
        known = sorted(t for t in wanted if t in catalogue.model_types())
        if len(known) == 1 and known[0] != config.get("model_type"):
            fix = Fix(
                "transform",
                f"patcher set {shlex.quote(str(checkpoint))} config.json /model_type "
                f"'\"{known[0]}\"'",
                note=f"{catalogue.ENGINE_NAMES[name]}'s {names[0]} is written for {written[0]} "
                f"(model type {known[0]}, which transformers knows); journaled, patcher revert "
                "undoes it",
            )
            return replace(found, fixes=(*found.fixes[:at], fix, *found.fixes[at + 1 :]))
    return found


def _unregistered(
    found: Diagnosis, files: ConfigFiles, servers: tuple[EngineName, ...]
) -> Diagnosis:
    """Where no release read of the log's engine registers the checkpoint's architecture, no
    model type makes it load: its weights are laid out for its own project's code, and the
    way is a checkpoint converted to an architecture the engine registers, in place of the
    advice to find the model type."""
    at = next((i for i, f in enumerate(found.fixes) if f.text == MODEL_TYPE_OF_CLASS), None)
    config = files.config if isinstance(files.config, dict) else {}
    names = config.get("architectures")
    if at is None or not servers or not isinstance(names, list) or not names:
        return found
    name = names[0]
    if not isinstance(name, str) or any(
        name in registered for server in servers for registered in architectures(server).values()
    ):
        return found
    engines = " or ".join(catalogue.ENGINE_NAMES[s] for s in servers)
    fix = Fix(
        "advice",
        f"a checkpoint converted to an architecture {engines} registers (the model family's "
        "conversion to the transformers layout)",
        note=f"no {engines} release read registers {name}, the checkpoint's architecture: its "
        "weights are laid out for its own project's code, so no config edit makes it load",
    )
    return replace(found, fixes=(*found.fixes[:at], fix, *found.fixes[at + 1 :]))


def _pipelined(found: Diagnosis, files: ConfigFiles, servers: tuple[EngineName, ...]) -> Diagnosis:
    """The release whose class for the checkpoint's architecture has pipeline parallelism, in
    place of the advice to find one (the log did not name the architecture; the files do)."""
    at = next((i for i, f in enumerate(found.fixes) if f.text == PIPELINED_UNNAMED), None)
    names = files.config.get("architectures") if isinstance(files.config, dict) else None
    if at is None or len(servers) != 1 or not isinstance(names, list) or not names:
        return found
    if not isinstance(names[0], str):
        return found
    version = catalogue.version_key(found.engine_version) if found.engine_version else None
    fix = pipelined_release(servers[0], names[0], version)
    return replace(found, fixes=(*found.fixes[:at], fix, *found.fixes[at + 1 :]))


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
    found = _registry_release(found, files)
    servers = _servers(found, engine)
    found = _class_model_type(found, files, checkpoint, servers)
    found = _unregistered(found, files, servers)
    found = _pipelined(found, files, servers)
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
