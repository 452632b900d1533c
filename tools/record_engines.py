"""Record what real engines derive from every snapshot config: the engine truth.

    python tools/record_engines.py                    # vLLM 0.16.0 and 0.33.0, SGLang 0.5.23
    python tools/record_engines.py --version 0.18.0   # add a vLLM version

For each version this makes a venv under ``--venvs`` (default ~/.cache/patcher-engines) with
``pip install vllm==X`` (about 6 minutes and 10 GB each, CPU only), then runs
``tools/engine_probe.py`` in it on every case: each ``snapshots/configs/<model>`` as published,
the same model after each transform (``snapshots/expected/<transform>/<model>``), and the
example checkpoint. The result goes to ``snapshots/engines/vllm-X.json``, which
``tests/engines/test_engine_truth.py`` compares with patcher's engine model (no vLLM needed there).
SGLang's venv (``pip install sglang==X``) runs ``tools/sglang_probe.py`` on the same cases
into ``snapshots/engines/sglang-X.json``: its dtype and context length.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = ROOT / "snapshots"
DEFAULT_VERSIONS = ("0.16.0", "0.33.0")
SGLANG_VERSIONS = ("0.5.23",)


def build_cases(work: Path) -> dict[str, str]:
    """Write every case's config files under ``work``; return name -> directory."""
    cases: dict[str, str] = {}

    def make(name: str, sources: list[Path]) -> None:
        target = work / name
        target.mkdir(parents=True)
        for source in sources:
            for path in sorted(source.iterdir()):
                if path.is_file() and path.suffix in (".json", ".jinja"):
                    if not path.name.endswith(".patch.json"):
                        shutil.copyfile(path, target / path.name)
        cases[name] = str(target)

    for model in sorted(p for p in (SNAPSHOTS / "configs").iterdir() if p.is_dir()):
        make(model.name, [model])
        for expected in sorted((SNAPSHOTS / "expected").glob(f"*/{model.name}")):
            make(f"{model.name}+{expected.parent.name}", [model, expected])
    make("example-kimi-k2.5-nvfp4", [SNAPSHOTS / "example" / "kimi-k2.5-nvfp4"])
    # set-fp8-kv-cache applies to no snapshot as published (each declares its FP8 KV): Kimi
    # after strip-fp8-kv-cache, then set-fp8-kv-cache, as patcher writes it.
    back = work / "kimi-k2.5-nvfp4+strip-fp8-kv-cache+set-fp8-kv-cache"
    make(back.name, [SNAPSHOTS / "configs" / "kimi-k2.5-nvfp4"])
    for name in ("hf_quant_config.json",):
        shutil.copyfile(SNAPSHOTS / "example" / "kimi-k2.5-nvfp4" / name, back / name)
    from patcher import api

    api.apply(back, "strip-fp8-kv-cache")
    api.apply(back, "set-fp8-kv-cache")
    shutil.rmtree(back / ".patcher")
    # What strip-fp8-kv-cache wrote before it nulled the key: the nested layout without it.
    removed = work / "qwen3-30b-a3b-nvfp4~kv-key-removed"
    make(removed.name, [SNAPSHOTS / "configs" / "qwen3-30b-a3b-nvfp4"])
    quant = json.loads((removed / "hf_quant_config.json").read_text())
    del quant["quantization"]["kv_cache_quant_algo"]
    (removed / "hf_quant_config.json").write_text(json.dumps(quant, indent=4))
    # A config with a null dtype, and one declaring float32: what --dtype auto makes of them.
    for suffix, dtype in (("dtype-null", None), ("dtype-float32", "float32")):
        case = work / f"deepseek-r1-distill-qwen-32b~{suffix}"
        make(case.name, [SNAPSHOTS / "configs" / "deepseek-r1-distill-qwen-32b"])
        config = json.loads((case / "config.json").read_text())
        config["torch_dtype"] = dtype
        (case / "config.json").write_text(json.dumps(config, indent=2))
    # generation_config.json: a max_new_tokens (Qwen3-1.7B-Base's 2048, vLLM #34005), and
    # values equal to transformers' own defaults next to it.
    for suffix, extra in (
        ("max-new-tokens", {"max_new_tokens": 2048}),
        (
            "generation-neutral-values",
            {"temperature": 1.0, "top_k": 50, "top_p": 1.0, "repetition_penalty": 1.0},
        ),
    ):
        case = work / f"deepseek-r1-distill-qwen-32b~{suffix}"
        make(case.name, [SNAPSHOTS / "configs" / "deepseek-r1-distill-qwen-32b"])
        generation = json.loads((case / "generation_config.json").read_text())
        (case / "generation_config.json").write_text(json.dumps({**generation, **extra}, indent=2))
    # Sliding window on only some layers (use_sliding_window with max_window_layers below
    # num_hidden_layers), which vLLM's Qwen2Model refuses when it builds the model.
    case = work / "deepseek-r1-distill-qwen-32b~partial-sliding-window"
    make(case.name, [SNAPSHOTS / "configs" / "deepseek-r1-distill-qwen-32b"])
    config = json.loads((case / "config.json").read_text())
    config.update(use_sliding_window=True, max_window_layers=28, sliding_window=4096)
    (case / "config.json").write_text(json.dumps(config, indent=2))
    # ... and after disable-sliding-window (its edit: use_sliding_window false).
    fixed = work / f"{case.name}+disable-sliding-window"
    make(fixed.name, [case])
    (fixed / "config.json").write_text(json.dumps({**config, "use_sliding_window": False}))
    # A UTF-8 byte-order mark at the start of each file vLLM reads as JSON text (the tokenizer's
    # too).
    for model, name in (
        ("devstral-small-2507", "config.json"),
        ("qwen3-30b-a3b-nvfp4", "hf_quant_config.json"),
        ("deepseek-r1-distill-qwen-32b", "generation_config.json"),
        ("deepseek-r1-distill-qwen-32b", "tokenizer_config.json"),
    ):
        case = work / f"{model}~bom-{name.removesuffix('.json').replace('_', '-')}"
        make(case.name, [SNAPSHOTS / "configs" / model])
        (case / name).write_bytes(b"\xef\xbb\xbf" + (case / name).read_bytes())
    # A compressed-tensors checkpoint quantizing only the KV cache (llm-compressor's layout,
    # no weight schemes) on a real config, and the same after strip-ct-kv-cache-scheme as
    # patcher writes it: which KV cache the attention layers keep.
    case = work / "deepseek-r1-distill-qwen-32b~ct-fp8-kv"
    make(case.name, [SNAPSHOTS / "configs" / "deepseek-r1-distill-qwen-32b"])
    config = json.loads((case / "config.json").read_text())
    config["quantization_config"] = {
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
        "quantization_status": "compressed",
    }
    (case / "config.json").write_text(json.dumps(config, indent=2))
    stripped = work / f"{case.name}+strip-ct-kv-cache-scheme"
    make(stripped.name, [case])
    from patcher import api

    api.apply(stripped, "strip-ct-kv-cache-scheme")
    shutil.rmtree(stripped / ".patcher")
    # A chat_template.jinja beside tokenizer_config.json's own chat_template: which one the
    # engines' tokenizers carry.
    case = work / "deepseek-r1-distill-qwen-32b~chat-template-jinja"
    make(case.name, [SNAPSHOTS / "configs" / "deepseek-r1-distill-qwen-32b"])
    (case / "chat_template.jinja").write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    # The snapshots hold no vocabulary: beside each tokenizer_config.json, a tokenizer.json
    # with none (a word-level model knowing only its added tokens, at their ids), so that
    # every version loads the tokenizer and the template it carries is recorded.
    for directory in cases.values():
        tokenizer_config = Path(directory) / "tokenizer_config.json"
        if tokenizer_config.exists():
            (Path(directory) / "tokenizer.json").write_text(
                json.dumps(_vocabulary_free(tokenizer_config))
            )
    return cases


def _vocabulary_free(tokenizer_config: Path) -> dict[str, Any]:
    """A tokenizer.json without a vocabulary: the added tokens of ``tokenizer_config``."""
    text = tokenizer_config.read_bytes().decode("utf-8-sig")  # a marked one, for its case
    decoder = json.loads(text).get("added_tokens_decoder") or {}
    added = [
        {
            "id": int(i),
            "content": t["content"],
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": bool(t.get("special", True)),
        }
        for i, t in decoder.items()
    ]
    vocab = {"<unk>": 0, **{t["content"]: t["id"] for t in added}}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"},
    }


def venv_python(venvs: Path, version: str, package: str = "vllm") -> Path:
    """The Python of a venv with ``package==version``, made on first use."""
    venv = venvs / f"{package}-{version}"
    python = venv / "bin" / "python"
    if not (venv / ".installed").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", f"{package}=={version}"], check=True)
        (venv / ".installed").write_text(version)
    return python


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="append", help="vLLM version (repeatable)")
    parser.add_argument("--venvs", type=Path, default=Path.home() / ".cache/patcher-engines")
    parser.add_argument(
        "--python",
        type=Path,
        help="the interpreter of a venv that has the one --version installed already "
        "(python -m tools.read_release --venv makes it when pip cannot resolve the pins)",
    )
    args = parser.parse_args()
    out_dir = SNAPSHOTS / "engines"
    out_dir.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        cases_file = Path(tmp) / "cases.json"
        cases_file.write_text(json.dumps(build_cases(Path(tmp) / "cases")))
        runs = [("vllm", v, "engine_probe.py") for v in args.version or DEFAULT_VERSIONS]
        if not args.version:
            runs += [("sglang", v, "sglang_probe.py") for v in SGLANG_VERSIONS]
        for package, version, probe in runs:
            python = args.python or venv_python(args.venvs, version, package)
            out = out_dir / f"{package}-{version}.json"
            subprocess.run(
                [str(python), str(ROOT / "tools" / probe), str(cases_file), str(out)],
                check=True,
                env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "VLLM_LOGGING_LEVEL": "ERROR"},
            )
            print(f"recorded {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
