"""One entry point to the engine model: the view of a checkpoint from one engine version."""

from __future__ import annotations

from pathlib import Path

from patcher.engines import sglang, vllm
from patcher.engines.files import ConfigFiles, read_config_files
from patcher.engines.gpus import Gpu
from patcher.engines.numbers import check_numbers
from patcher.engines.target import Engine
from patcher.engines.view import EngineView
from patcher.store.checkpoint import open_checkpoint


def derive(engine: Engine, files: ConfigFiles, gpu: Gpu | None = None) -> EngineView:
    """What ``engine`` derives from ``files`` (and, with ``gpu``, whether it can start there)."""
    check_numbers(files)
    if gpu is not None and gpu.is_cpu:
        gpu = None  # the GPU rules (attention backends, capabilities) do not apply
    if engine.name == "sglang":
        return sglang.derive(engine, files, gpu)
    return vllm.derive(engine, files, gpu)


def engine_view(
    checkpoint: Path | str, engine: Engine, gpu: Gpu | None = None, *, revision: str | None = None
) -> EngineView:
    """:func:`derive` on a checkpoint's files as they are now."""
    return derive(engine, read_config_files(open_checkpoint(checkpoint, revision)), gpu)
