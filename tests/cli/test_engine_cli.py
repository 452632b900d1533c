"""The engine model as users meet it: check --engine/--gpu, apply --engine, show/overrides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patcher.engines.engine import parse_engine
from patcher.engines.gpus import parse_gpu
from patcher.errors import TargetError
from tests.conftest import CONFIGS, Cli, tree_bytes

ENGINE_KEYS = {
    "name",
    "version",
    "note",
    "reading",
    "answered_by",
    "gpu",
    "max_model_len",
    "kv_cache_dtype",
    "dtype",
    "sampling_defaults",
    "max_tokens_cap",
    "eos_token_id",
    "quantization",
    "mla",
    "attention_backends",
    "startup_errors",
    "reasons",
    "starts",
    "unknowns",
}


def test_check_engine_json_on_sm120_names_the_fixes(cli: Cli, kimi: Path) -> None:
    code, out, _ = cli("check", kimi, "--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--json")
    engine = json.loads(out)["engine"]
    assert code == 1 and set(engine) == ENGINE_KEYS
    assert (engine["name"], engine["version"]) == ("vllm", "0.16.0")
    assert engine["gpu"] == {"name": "rtx-pro-6000", "compute_capability": "12.0"}
    assert engine["max_model_len"] == 262_144 and engine["kv_cache_dtype"] == "fp8_e4m3"
    assert engine["quantization"] == "modelopt_fp4" and engine["mla"] is True
    assert engine["attention_backends"] == []
    (error,) = engine["startup_errors"]
    assert error["message"].startswith("No valid attention backend found for cuda")
    assert "TRITON_MLA: [kv_cache_dtype not supported]" in error["message"]
    assert error["transform"] == "strip-fp8-kv-cache"
    assert error["flag"] == "--kv-cache-dtype bfloat16"
    assert (error["file"], error["pointer"]) == (
        "config.json",
        "/quantization_config/kv_cache_scheme",
    )


@pytest.mark.parametrize(
    ("engine", "gpu", "starts"),
    [
        ("vllm==0.16.0", "12.0", False),
        ("vllm==0.14.0", "rtx-5090", False),
        ("vllm==0.17.0", "12.0", False),
        ("vllm==0.18.0", "12.0", True),  # Triton MLA takes FP8 from 0.18
        ("vllm==0.16.0", "h200", True),  # FlashMLA takes FP8 on SM90
        ("vllm==0.13.0", "12.0", True),  # 'auto' not resolved from the checkpoint before 0.14
    ],
)
def test_fp8_mla_finding_depends_on_engine_and_gpu(
    cli: Cli, kimi: Path, engine: str, gpu: str, starts: bool
) -> None:
    code, out, _ = cli("check", kimi, "--engine", engine, "--gpu", gpu, "--json")
    result = json.loads(out)
    assert bool(result["engine"]["attention_backends"]) == starts
    # Kimi-K2.5's class is in the registry from 0.15.0 (read from each release's source).
    listed = parse_engine(engine).at_least(0, 15)
    assert (code == 0) == (starts and listed)
    if not listed:
        (registry,) = [
            e for e in result["engine"]["startup_errors"] if "architectures" in e["message"]
        ]
        assert registry["transform"] is None
        assert registry["note"] == (
            "KimiK25ForConditionalGeneration is listed from vLLM 0.15.0: upgrade vLLM"
        )


def test_flag_not_offered_where_the_backend_refuses_it(cli: Cli, kimi: Path) -> None:
    code, out, _ = cli("check", kimi, "--engine", "vllm==0.14.0", "--gpu", "12.0", "--json")
    (error,) = [
        e for e in json.loads(out)["engine"]["startup_errors"] if "attention" in e["message"]
    ]
    assert error["flag"] is None and error["transform"] == "strip-fp8-kv-cache"


def test_check_engine_text_for_people(cli: Cli, kimi: Path) -> None:
    code, out, _ = cli("check", kimi, "--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000")
    assert code == 1
    assert "vllm==0.16.0 on rtx-pro-6000 (compute capability 12.0) derives:" in out
    assert "MLA backends    none: the server will not start" in out
    assert f"fix: patcher apply {kimi} strip-fp8-kv-cache\n" in out
    assert f"or: vllm serve {kimi} --kv-cache-dtype" in out
    code, out, _ = cli("check", kimi, "--engine", "vllm==0.16.0")
    assert "give --gpu to check which backends accept the config" in out


def test_after_strip_the_engine_starts_and_check_is_clean(cli: Cli, kimi: Path) -> None:
    cli("apply", kimi, "strip-fp8-kv-cache")
    code, out, _ = cli("check", kimi, "--engine", "vllm==0.16.0", "--gpu", "12.0", "--json")
    engine = json.loads(out)["engine"]
    assert code == 0 and engine["kv_cache_dtype"] == "auto"
    assert engine["attention_backends"] == ["TRITON_MLA"] and engine["startup_errors"] == []


def test_set_context_length_refused_where_the_engine_ignores_it(cli: Cli, kimi: Path) -> None:
    before = tree_bytes(kimi)
    code, _, err = cli(
        "apply", kimi, "set-context-length", "--set", "length=131072", "--engine", "vllm==0.16.0"
    )
    assert code == 1 and tree_bytes(kimi) == before
    assert "set-context-length has no effect on vllm==0.16.0: max_model_len stays 262144" in err
    assert "next: start the server with --max-model-len 131072" in err
    assert len(err.strip().splitlines()) == 1
    code, out, err = cli(
        "apply", kimi, "set-context-length", "--set", "length=131072", "--engine", "vllm==0.33.0"
    )
    assert code == 0 and "applied set-context-length" in out and err == ""


def test_set_context_length_warns_without_engine(cli: Cli, kimi: Path) -> None:
    code, out, err = cli("apply", kimi, "set-context-length", "--set", "length=131072")
    assert code == 0 and "applied set-context-length" in out
    assert err.startswith(
        "warning: set-context-length has no effect on vLLM 0.10.1 to 0.29.0: max_model_len "
        "stays 262144"
    )
    assert "start the server with --max-model-len 131072" in err
    code, out, _ = cli("revert", kimi, "--all")
    code, out, _ = cli("apply", kimi, "set-context-length", "--set", "length=131072", "--json")
    assert json.loads(out)["warnings"][0].startswith("set-context-length has no effect")


def test_set_context_length_no_warning_on_plain_rope(cli: Cli, model_checkpoint: object) -> None:
    root = model_checkpoint("devstral-small-2507")  # type: ignore[operator]
    code, _, err = cli("apply", root, "set-context-length", "--set", "length=32768")
    assert code == 0 and err == ""


def test_show_is_version_aware(cli: Cli) -> None:
    code, out, _ = cli("show", "strip-fp8-kv-cache", "--engine", "vllm==0.14.0")
    assert code == 0
    assert "--kv-cache-dtype bfloat16: no runtime equivalent on vllm==0.14.0" in out
    code, out, _ = cli("show", "strip-fp8-kv-cache", "--engine", "vllm==0.15.0", "--json")
    runtime = json.loads(out)["runtime"]
    assert runtime["on_engine"] == "--kv-cache-dtype bfloat16: accepted by vllm==0.15.0"
    code, out, _ = cli("show", "set-context-length", "--json")
    assert json.loads(out)["effects"] == {"max_model_len": "{{length}}"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--engine", "vllm==0.9.2"], "older than the engine model covers"),
        (["--engine", "tgi==1.0"], "engine 'tgi' is not in the engine model"),
        (["--engine", "vllm==0.16.0.0.0"], "cannot read engine 'vllm==0.16.0.0.0'"),
        (["--engine", "vllm==0.16.0", "--gpu", "rtx-pro-600"], "did you mean 'rtx-pro-6000'"),
        (["--gpu", "h200"], "--gpu needs an engine to judge against"),
    ],
)
def test_check_target_refusals(cli: Cli, kimi: Path, args: list[str], message: str) -> None:
    code, out, err = cli("check", kimi, *args)
    assert code == 1 and message in err and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_gpu_and_engine_parsing() -> None:
    assert parse_gpu("12.0").capability == (12, 0)
    assert parse_gpu("sm90").capability == (9, 0)
    assert parse_gpu("RTX PRO 6000").name == "rtx-pro-6000"
    assert parse_gpu("H100").memory_gib == pytest.approx(79.65)
    assert parse_engine("vllm@0.16").version == (0, 16, 0)
    assert parse_engine("sglang==0.5.23").name == "sglang"
    with pytest.raises(TargetError):
        parse_gpu("99.9")


def test_sglang_context_follows_max_position_embeddings(cli: Cli, kimi: Path) -> None:
    code, out, _ = cli("check", kimi, "--engine", "sglang==0.5.23", "--json")
    engine = json.loads(out)["engine"]
    assert engine["max_model_len"] == 262_144 and engine["kv_cache_dtype"] == "fp8_e4m3"
    code, _, err = cli(
        "apply", kimi, "set-context-length", "--set", "length=131072", "--engine", "sglang==0.5.23"
    )
    assert code == 0
    code, out, _ = cli("check", kimi, "--engine", "sglang==0.5.23", "--json")
    assert json.loads(out)["engine"]["max_model_len"] == 131_072


def _null_dtype(model_checkpoint: object) -> Path:
    root: Path = model_checkpoint("deepseek-r1-distill-qwen-32b")  # type: ignore[operator]
    config = json.loads((root / "config.json").read_text())
    config["torch_dtype"] = None
    (root / "config.json").write_text(json.dumps(config, indent=2))
    return root


def test_a_null_dtype_is_judged_per_engine(cli: Cli, model_checkpoint: object) -> None:
    """A null torch_dtype: SGLang serves float16 (a finding, fixed by set-torch-dtype); vLLM
    serves bfloat16, or float16 below compute capability 8.0 (no finding), as the recorded
    engines do (on a V100, 0.33.0 has no kernels: a T4 there)."""
    root = _null_dtype(model_checkpoint)
    code, out, _ = cli("check", root)
    assert code == 1
    assert (
        "[null-dtype] config.json /torch_dtype: torch_dtype is null: SGLang's --dtype auto reads "
        "it as float32 and serves float16" in out
    )
    code, out, _ = cli("check", root, "--engine", "vllm==0.33.0", "--gpu", "t4")
    assert code == 0 and "null-dtype" not in out
    assert (
        "  dtype           float16  (no dtype in config.json: float32, downcast to float16)" in out
    )
    code, out, _ = cli("check", root, "--engine", "vllm==0.16.0", "--json")
    engine = json.loads(out)["engine"]
    assert engine["dtype"] == "bfloat16" and "compute capability 8.0" in engine["reasons"]["dtype"]
    code, out, _ = cli("check", root, "--engine", "sglang==0.5.23", "--json")
    report = json.loads(out)
    assert report["engine"]["dtype"] == "float16"
    (finding,) = [f for f in report["findings"] if f["code"] == "null-dtype"]
    code, _, err = cli(*finding["command"].split()[1:])
    assert code == 0, err
    code, out, _ = cli("check", root, "--engine", "sglang==0.5.23", "--json")
    report = json.loads(out)
    assert report["engine"]["dtype"] == "bfloat16" and not report["findings"]


def test_kv_budget_counts_the_dtype_the_engine_serves(model_checkpoint: object) -> None:
    """A float32 config's KV cache is 2 bytes an element under --dtype auto (vLLM downcasts
    the model), not the 4 the config's dtype suggests."""
    from patcher.advice.kvbudget import kv_budget

    root: Path = model_checkpoint("llama-3.1-8b-instruct-bnb8bit")  # type: ignore[operator]
    config = json.loads((root / "config.json").read_text())
    config["torch_dtype"] = "float32"
    (root / "config.json").write_text(json.dumps(config, indent=2))
    on_h100 = kv_budget(root, gpu="h100", weights=16)
    assert on_h100.element_bytes == 2 and on_h100.kv_dtype.startswith("auto -> bfloat16")
    on_v100 = kv_budget(root, gpu="v100", weights=16)
    assert on_v100.element_bytes == 2 and on_v100.kv_dtype.startswith("auto -> float16")


def test_writing_float32_is_refused_where_auto_downcasts_it(
    cli: Cli, model_checkpoint: object
) -> None:
    """set-torch-dtype declares its effect: float32 in the config is not what --dtype auto
    serves (recorded: bfloat16), so --engine refuses it naming the flag; float16 holds."""
    root: Path = model_checkpoint("deepseek-r1-distill-qwen-32b")  # type: ignore[operator]
    before = tree_bytes(root)
    code, _, err = cli(
        "apply", root, "set-torch-dtype", "--set", "dtype=float32", "--engine", "vllm==0.16.0"
    )
    assert code == 1 and tree_bytes(root) == before
    assert (
        "set-torch-dtype has no effect on vllm==0.16.0: dtype stays bfloat16 there (config.json "
        "/torch_dtype float32, downcast to bfloat16, on a GPU of compute capability 8.0 or newer), "
        "not float32; nothing changed; next: start the server with --dtype float32" in err
    )
    code, _, err = cli(
        "apply", root, "set-torch-dtype", "--set", "dtype=float16", "--engine", "vllm==0.33.0"
    )
    assert code == 0, err
    assert json.loads((root / "config.json").read_text())["torch_dtype"] == "float16"


def _edited(model_checkpoint: object, name: str, **values: object) -> Path:
    root: Path = model_checkpoint("deepseek-r1-distill-qwen-32b")  # type: ignore[operator]
    doc = json.loads((root / name).read_text())
    (root / name).write_text(json.dumps({**doc, **values}, indent=2))
    return root


def test_max_new_tokens_is_a_finding_only_where_it_caps(cli: Cli, model_checkpoint: object) -> None:
    """vLLM 0.16 cuts every response at max_new_tokens (recorded); from 0.17 it is only the
    default of requests that set none, and SGLang does not read it: no finding there."""
    root = _edited(model_checkpoint, "generation_config.json", max_new_tokens=2048)
    code, out, _ = cli("check", root)
    assert code == 1
    assert "max_new_tokens 2048: vLLM before 0.17 cuts every response at it" in out
    code, out, _ = cli("check", root, "--engine", "vllm==0.16.0")
    assert code == 1
    assert "vllm==0.16.0 cuts every response at 2048 tokens" in out
    assert "  max_tokens cap  2048  (generation_config.json /max_new_tokens 2048: " in out
    assert "  sampling        max_tokens=2048, temperature=0.6, top_p=0.95  (" in out
    for engine in ("vllm==0.17.0", "vllm==0.33.0", "sglang==0.5.23"):
        code, out, _ = cli("check", root, "--engine", engine, "--json")
        report = json.loads(out)
        assert code == 0 and report["findings"] == [], engine
        assert report["engine"]["max_tokens_cap"] is None, engine
    defaults = json.loads(cli("check", root, "--engine", "vllm==0.33.0", "--json")[1])["engine"]
    assert defaults["sampling_defaults"] == {"max_tokens": 2048, "temperature": 0.6, "top_p": 0.95}
    assert "only the default" in defaults["reasons"]["max_tokens_cap"]
    code, out, _ = cli("apply", root, "drop-generation-max-new-tokens")
    assert code == 0
    code, out, _ = cli("check", root, "--engine", "vllm==0.16.0")
    assert code == 0 and "  max_tokens cap  none  (" in out


def test_neutral_generation_values_count_after_transformers_5(model_checkpoint: object) -> None:
    """top_k 50 in generation_config.json: dropped by vLLM up to 0.19 (transformers 4 takes it
    for its own default), a request default from 0.20 (transformers 5), as recorded."""
    from patcher import api

    root = _edited(model_checkpoint, "generation_config.json", top_k=50, temperature=1.0)
    old = api.check(root, engine="vllm==0.19.0").engine
    new = api.check(root, engine="vllm==0.24.0").engine
    assert old is not None and new is not None
    assert old.sampling_defaults.value == {"top_p": 0.95}
    assert "top_k 50" in old.sampling_defaults.reason
    assert new.sampling_defaults.value == {"temperature": 1.0, "top_k": 50, "top_p": 0.95}


def test_partial_sliding_window_is_a_start_up_error_fixed_by_the_edit(
    cli: Cli, model_checkpoint: object
) -> None:
    """vLLM 0.16 and 0.33 do not build a Qwen2 model with sliding window on some layers only
    (recorded); plan names disable-sliding-window, and after it the engine model starts."""
    root = _edited(
        model_checkpoint,
        "config.json",
        use_sliding_window=True,
        max_window_layers=28,
        sliding_window=4096,
    )
    code, out, _ = cli("check", root)
    assert code == 1
    assert (
        "[partial-sliding-window] config.json /use_sliding_window: sliding window on only some "
        "layers: vLLM does not build the model" in out
    )
    for engine in ("vllm==0.16.0", "vllm==0.33.0"):
        code, out, _ = cli("check", root, "--engine", engine, "--json")
        report = json.loads(out)
        assert code == 1, engine
        (error,) = report["engine"]["startup_errors"]
        assert error["message"].startswith("Sliding window for some but all layers")
        assert "`max_window_layers` = 28 is less than `num_hidden_layers` = 64" in error["message"]
        assert (error["transform"], error["flag"]) == ("disable-sliding-window", None)
        assert "--disable-sliding-window does not avoid it" in error["note"]
        assert [f["code"] for f in report["findings"]] == ["engine-startup-error"]
    target = ("--engine", "vllm==0.16.0", "--gpu", "h100")
    code, out, _ = cli("plan", root, *target, "--json")
    (action,) = json.loads(out)["actions"]
    assert code == 4 and (action["action"], action["name"]) == ("apply", "disable-sliding-window")
    code, _, err = cli("sync", root, *target)
    assert code == 0, err
    code, out, _ = cli("check", root, "--engine", "vllm==0.16.0")
    assert code == 0 and "starts          yes" in out
    code, out, _ = cli("check", root, "--engine", "sglang==0.5.23")
    assert "partial-sliding-window" not in out


def test_the_sliding_window_flag_is_not_offered_as_the_same(
    cli: Cli, model_checkpoint: object
) -> None:
    """--disable-sliding-window neither builds such a model nor keeps the context (recorded):
    show and overrides say there is no flag that does the same."""
    code, out, _ = cli("show", "disable-sliding-window")
    assert code == 0 and "Engine flags:\n  No engine flag does the same" in out
    assert "Engine flag that does the same" not in out
    shown = json.loads(cli("show", "disable-sliding-window", "--json")[1])
    assert shown["engine_flag"] is None and shown["runtime"]["flags"] == []
    assert shown["runtime"]["note"].startswith("No engine flag does the same")
    root = _edited(model_checkpoint, "config.json", use_sliding_window=True, max_window_layers=28)
    assert cli("apply", root, "disable-sliding-window")[0] == 0
    code, out, _ = cli("overrides", root, "--json")
    (entry,) = json.loads(out)["entries"]
    assert entry["flags"] == [] and "No engine flag does the same" in entry["note"]
    assert "--disable-sliding-window" not in json.loads(out)["command"]


def test_an_edit_the_engine_would_refuse_is_not_applied(cli: Cli, model_checkpoint: object) -> None:
    """gpt-oss's mxfp4 runs in bfloat16 only: vLLM 0.16.0 and 0.33.0 refuse float16 when they
    configure the engine (recorded), so set-torch-dtype float16 is refused under --engine and
    warned about without; check --engine names the refusal and the flag."""
    root: Path = model_checkpoint("gpt-oss-120b")  # type: ignore[operator]
    before = tree_bytes(root)
    code, _, err = cli(
        "apply", root, "set-torch-dtype", "--set", "dtype=float16", "--engine", "vllm==0.33.0"
    )
    assert code == 1 and tree_bytes(root) == before
    assert (
        "set-torch-dtype would stop vllm==0.33.0 from starting: torch.float16 is not supported "
        "for quantization method gpt_oss_mxfp4. Supported dtypes: [torch.bfloat16]; nothing "
        "changed; next: gpt_oss_mxfp4 runs in bfloat16 only" in err
    )
    code, _, err = cli("apply", root, "set-torch-dtype", "--set", "dtype=float16")
    assert code == 0 and "set-torch-dtype makes vLLM 0.10.1 to 0.33.0 refuse to start" in err
    code, out, _ = cli("check", root, "--engine", "vllm==0.16.0", "--json")
    (error,) = json.loads(out)["engine"]["startup_errors"]
    assert code == 1 and error["flag"] == "--dtype bfloat16" and error["pointer"] == "/torch_dtype"
    assert cli("apply", root, "set-torch-dtype", "--set", "dtype=bfloat16", "--stack")[0] == 0
    assert cli("check", root, "--engine", "vllm==0.16.0")[0] == 0


def test_sampling_values_in_config_json_alone_are_not_guessed(cli: Cli, tmp_path: Path) -> None:
    """With no generation_config.json transformers builds one from config.json's own values;
    patcher does not model that, so it says unknown rather than 'none'."""
    (tmp_path / "config.json").write_text(
        '{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "temperature": 0.3}'
    )
    code, out, _ = cli("check", tmp_path, "--engine", "vllm==0.16.0")
    assert code == 0
    assert "  sampling        unknown  (no generation_config.json; transformers builds one" in out
    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    code, out, _ = cli("check", tmp_path, "--engine", "vllm==0.16.0")
    assert "  sampling        none  (no generation_config.json)" in out


def test_sglang_stop_ids_judge_the_eos_fix(cli: Cli, model_checkpoint: object) -> None:
    """SGLang stops on config.json's and the generation config's eos ids together (recorded):
    check shows them, the fix holds there when SGLang stops on every id it sets, and with a
    marked generation_config.json (not read) it is refused under --engine sglang, as for vLLM."""
    root: Path = model_checkpoint("deepseek-r1-distill-qwen-32b")  # type: ignore[operator]
    sglang = ("--engine", "sglang==0.5.23")
    code, out, _ = cli("check", root, *sglang)
    assert (
        "  eos_token_id    [151643]  (config.json /eos_token_id and generation_config.json "
        "/eos_token_id, together)" in out
    )
    marked = root / "generation_config.json"
    marked.write_bytes(b"\xef\xbb\xbf" + marked.read_bytes())
    before = tree_bytes(root)
    code, _, err = cli(
        "apply", root, "fix-generation-eos-token-id", "--set", "eos=[151645]", *sglang
    )
    assert code == 1 and tree_bytes(root) == before
    assert (
        "fix-generation-eos-token-id has no effect on sglang==0.5.23: eos_token_id stays "
        "[151643] there (config.json /eos_token_id; generation_config.json starts with a "
        "byte-order mark, which transformers refuses), not [151645]" in err
    )
    assert cli("apply", root, "strip-bom")[0] == 0
    code, _, err = cli(
        "apply", root, "fix-generation-eos-token-id", "--set", "eos=[151645]", *sglang
    )
    assert code == 0, err
    code, out, _ = cli("check", root, *sglang, "--json")
    assert json.loads(out)["engine"]["eos_token_id"] == [151643, 151645]


@pytest.mark.parametrize(
    ("config", "engine", "said"),
    [
        ({"a": 1}, "vllm==0.16.0", "names no model"),
        ({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}, "vllm==0.35.0", "read"),
    ],
)
def test_check_says_unknown_where_the_model_does_not_cover_it(
    cli: Cli, tmp_path: Path, config: dict[str, object], engine: str, said: str
) -> None:
    """Issue 31 item 4: never 'starts yes' for what the model cannot tell."""
    (tmp_path / "config.json").write_text(json.dumps(config))
    code, out, _ = cli("check", tmp_path, "--engine", engine, "--json")
    view = json.loads(out)["engine"]
    assert view["starts"] == "unknown" and said in (view["unknowns"] or [view["note"]])[0]
    code, text, _ = cli("check", tmp_path, "--engine", engine)
    assert "starts          unknown:" in text and "starts          yes" not in text
    assert code == 5  # no problem found, and no "yes" either


def test_a_fix_command_keeps_the_targets_tensor_parallel_size(cli: Cli, kimi: Path) -> None:
    """check --tp 8's engine flag alternative starts on the 8 GPUs it judged, not on one."""
    _, out, _ = cli("check", kimi, "--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000", "--tp", "8")
    assert f"or: vllm serve {kimi} --tensor-parallel-size 8 --kv-cache-dtype bfloat16" in out
    _, out, _ = cli("check", kimi, "--engine", "vllm==0.16.0", "--gpu", "rtx-pro-6000")
    assert f"or: vllm serve {kimi} --kv-cache-dtype bfloat16" in out


def test_kv_budget_for_sglang_says_its_pool_sizing_is_not_modelled(cli: Cli) -> None:
    """SGLang sizes its KV pool itself from a --mem-fraction-static whose default depends on
    the GPU; patcher has not modelled that, so its figure is called an estimate, in text,
    JSON and plan's memory note; vLLM's is not."""
    folder = CONFIGS / "deepseek-r1-distill-qwen-32b"
    on = ("--gpu", "h200")
    text = cli("kv-budget", folder, "--engine", "sglang==0.5.23", *on)[1]
    assert text.splitlines()[0].startswith("note: SGLang sizes its pool itself")
    found = json.loads(cli("kv-budget", folder, "--engine", "sglang==0.5.23", *on, "--json")[1])
    assert "not modelled" in found["unmodelled"]
    vllm = json.loads(cli("kv-budget", folder, "--engine", "vllm==0.34.0", *on, "--json")[1])
    assert vllm["unmodelled"] is None
    plan = json.loads(cli("plan", folder, "--engine", "sglang==0.5.23", *on, "--json")[1])
    assert "an estimate" in plan["launch"]["memory_note"]
