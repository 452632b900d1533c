"""What a start-up log's lines show besides its error, as doctor reads them: the engine and
its version, the parallel sizes and quantization of the command line the engine echoes, the
KV dtype flag, SGLang's memory figures, and the traceback's frames that say whose code raised.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator
from dataclasses import replace
from itertools import islice

from patcher.advice.log_rules import LogContext

# SGLang's free memory per GPU around the weights' load (model_executor/model_runner.py).
LOADED = re.compile(
    r"Load weight (begin|end)\..*?avail mem=([\d.]+) GB(?:, mem usage=([\d.]+) GB)?"
)
# A weight loader at work: its traceback frame or log line (a size mismatch there is a weight's).
LOADING = re.compile(
    r"load_weights|weight_loader|_load_w\d|load_model|Loading (?:safetensors|weights)"
)
# The fraction SGLang ran with: its server_args line, or its refusal's "Current value".
FRACTION = re.compile(r"mem_fraction_static=([\d.]+)")
# The tensor-parallel size on a command line as the engines echo it: vLLM's non-default args
# ('tensor_parallel_size': 8) and engine config (tensor_parallel_size=8), SGLang's server_args
# (tp_size=8), or the flags themselves.
TP = re.compile(
    r"(?:tensor_parallel_size'?[:=] ?|\btp_size=|--tensor-parallel-size[= ]|--tp-size[= ]"
    r"|(?<![\w-])--?tp[= ])(\d+)"
)
# The context length the engine ran with: vLLM's resolved "Using max model len 131072", its
# non-default args ('max_model_len': 131072), its engine config (max_seq_len=131072), the flag.
MAX_MODEL_LEN = re.compile(
    r"(?:Using max model len |'max_model_len': |\bmax_seq_len=|--max-model-len[= ])(\d+)"
)
# The pipeline-parallel size, echoed the same ways.
PP = re.compile(
    r"(?:pipeline_parallel_size'?[:=] ?|\bpp_size=|--pipeline-parallel-size[= ]|--pp-size[= ]"
    r"|(?<![\w-])--?pp[= ])(\d+)"
)
# The quantization method the engine built the model with: vLLM's engine config line
# (quantization=gptq_marlin) and non-default args, SGLang's server_args (quantization='awq').
QUANT_SET = re.compile(r"(?:\bquantization=|'quantization': )'?([\w-]+)")
# Lines that say whose log it is before any error does: SGLang's server_args and source
# paths, vLLM's non-default args and its entry points (SGLang imports vLLM's layers in some
# releases, which print vLLM's platform line, never its entry points), and the command line a
# report quotes (an error both engines word alike is answered in the flags of the one run).
SGLANG_SAYS = ("ServerArgs(", "sglang/srt/", "sglang.launch_server ", "sglang serve ")
# The engines' runtimes whose source is not read (tools/read_errors.py's START_UP): an error
# raised under one may share its words with a read message and mean another thing (SGLang's
# diffusion runtime builds a quantization config from nothing), so doctor does not answer it.
UNREAD_RUNTIMES = {
    "sglang/multimodal_gen/": "SGLang's diffusion runtime (sglang/multimodal_gen)",
}
VLLM_SAYS = (
    "non-default args",
    "vllm serve ",
    "vllm.entrypoints.",
    "vllm/engine/",
    "vllm/v1/",
    "vllm/entrypoints/",
)
# A draft model (or MTP layers) built beside the target for speculative decoding: SGLang's
# server_args line (its pool is sized beside the target's from the same fraction,
# model_runner's draft worker), a command line's flags as each engine's CLI spells them, vLLM's
# non-default args and engine config.
SPECULATIVE = re.compile(
    r"speculative_(?:algorithm|draft_model_path)='[^']+'"
    r"|--speculative[-_](?:config|algorithm|draft[-_]model[-_]path)\b"
    r"|'speculative_config': \{|speculative_config=SpeculativeConfig\("
)
# A bare ``assert a % b == 0`` (SGLang's models, vLLM's ``ensure_divisibility``): Python prints
# the source line above a message-less ``AssertionError``.
DIVIDES = re.compile(r"assert\s+\(?([\w.\[\]()]+?)\)?\s*%\s*\(?([\w.\[\]()]+?)\)?\s*==\s*0")
# vLLM's wrapper quoting a worker's error: "Worker failed with error 'MSG', please check ..."
QUOTED = re.compile(r"Worker failed with error '(.+?)'(?:, please check|$)")
# The KV cache dtype the command line gave: vLLM's "non-default args: {...}" line and SGLang's
# "server_args=ServerArgs(...)" line (both the user's flags, before any resolution).
KV_FLAG = re.compile(
    r"(?:non-default args: \{.*?'kv_cache_dtype': '|ServerArgs\(.*?\bkv_cache_dtype=')(\w+)'"
    # the command line itself, as a report quotes it
    r"|\b(?:serve|launch_server|api_server)\b.*?\s--kv[-_]cache[-_]dtype[= ](\w+)"
)
VERSION = re.compile(
    # 0.19+ prints "vLLM server version X, serving model", or a banner whose line ends
    # "█  version X" (entrypoints/utils.py: log_version_and_model); a report's environment,
    # "vLLM Version                 : X" (collect_env.py)
    r"(?:vLLM API server version|vLLM server version|LLM engine \(v|vllm version|█\s+version"
    r"|vLLM Version\s*:)\s*v?"
    r"(\d+\.\d+\.\d+(?:(?:a|b|rc|\.dev)\d+)?)"
)
# The setting whose config class pydantic refused ("1 validation error for SpeculativeConfig"),
# and the model's own transformers config class a traceback went through.
VALIDATED = re.compile(r"validation errors? for (\w+?)Config\b")
CONFIG_FILE = re.compile(r"transformers/models/\w+/configuration_\w+\.py")

# The model class the engine resolved: vLLM's "Resolved architecture: X" (0.10 on), SGLang's
# "Load weight end. ... type=X" (model_runner.py: ``type(self.model).__name__``).
RESOLVED = re.compile(r"Resolved architecture: (\w+)|Load weight end\..*?\btype=(\w+)")
# vLLM taking its Transformers backend for an architecture its registry lacks (the model
# loader's warning, worded the same from 0.7.3 to 0.34.0, read).
FELL_BACK = re.compile(r"(\w+) has no vLLM implementation, falling back to Transformers")

# The command line a log quotes: vLLM's ``vllm serve``/api_server, SGLang's launch_server.
COMMAND_LINE = re.compile(
    r"(?:\bvllm serve\b|entrypoints\.openai\.api_server|sglang\.launch_server)\s"
)

# A traceback's source line of an import: what the failing import asked for.
IMPORTED = re.compile(r"\s*from ([\w.]+) import [\w, ()]+\s*$")

# How far past a known error doctor reads for the command a report quotes after it.
COMMAND_AFTER = 40


def settled_input(lines: Iterable[str]) -> bool:
    """Whether ``lines`` are all there to read (text in memory, a regular file), where
    reading past the error costs no wait: a live pipe (``<(docker logs -f x)``) is never read
    past the root error."""
    fileno = getattr(lines, "fileno", None)
    if fileno is None:
        return True
    try:
        return stat.S_ISREG(os.fstat(fileno()).st_mode)
    except (OSError, ValueError):
        return False


def command_after(lines: Iterator[str]) -> str | None:
    """The command line among the next few lines of ``lines``, where a report quoted the
    error first and the command after it (the lines read are used up)."""
    for line in islice(lines, COMMAND_AFTER):
        if " --" in line and COMMAND_LINE.search(line):
            return line
    return None


def with_command(ctx: LogContext, command: str | None) -> LogContext:
    """``ctx`` with what ``command`` (a server's command line, where the log quotes one) shows
    added: its speculative decoding, SGLang's data-parallel attention and expert metrics."""
    if command is None:
        return ctx
    return replace(
        ctx,
        draft=ctx.draft or SPECULATIVE.search(command) is not None,
        dp_attention=ctx.dp_attention or "--enable-dp-attention" in command,
        expert_metrics=ctx.expert_metrics or "--enable-expert-distribution-metrics" in command,
    )
