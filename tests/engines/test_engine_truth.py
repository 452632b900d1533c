"""The engine model against the real engines' recorded derivations (snapshots/engines/).

tools/record_engines.py ran vLLM's own config code on every snapshot config, as published and
after each transform; here patcher's pure-Python model must derive the same values from the
same files. Re-record (docs/engine-truth.md) when a rule changes or a version is added.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from patcher import api
from patcher.engines.engine import parse_engine
from patcher.engines.files import TOKENIZER_FILE, ConfigFiles, read_config_files
from patcher.engines.gpus import parse_gpu
from patcher.engines.model import derive
from patcher.engines.templates import JINJA_FILE, served_template
from patcher.store.checkpoint import open_checkpoint
from tests.conftest import SNAPSHOTS
from tools.record_engines import build_cases

RECORDINGS = sorted((SNAPSHOTS / "engines").glob("vllm-*.json"))
TRUTH = {path.stem.removeprefix("vllm-"): json.loads(path.read_text()) for path in RECORDINGS}
SGLANG = {
    path.stem.removeprefix("sglang-"): json.loads(path.read_text())
    for path in sorted((SNAPSHOTS / "engines").glob("sglang-*.json"))
}


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return build_cases(tmp_path_factory.mktemp("engine-cases"))


def _params() -> list[Any]:
    return [
        pytest.param(version, case, id=f"{version}-{case}")
        for version, record in TRUTH.items()
        for case in sorted(record["cases"])
    ]


BUILD_ERRORS = ("quant-dtype", "partial-sliding-window")  # VllmConfig's, then the model's
PROMPT_TOKENS = 16  # the prompt the probe asks get_max_tokens about
BUILD_MARKS = {
    "is not supported for quantization method": "quant-dtype",
    "Sliding window for some but all layers": "partial-sliding-window",
}


def _same_error(modelled: str, recorded: str) -> bool:
    """vLLM's message, up to its first variable part (a long list), with quoted paths (the
    recording's temporary folder, the test's) read as '...'."""
    modelled, recorded = (re.sub(r"'/[^']*'", "'...'", m) for m in (modelled, recorded))
    return modelled in recorded or modelled[:45] in recorded


def test_versions_recorded() -> None:
    assert {"0.16.0", "0.33.0"} <= set(TRUTH)


def test_every_case_recorded(cases: dict[str, str]) -> None:
    for record in [*TRUTH.values(), *SGLANG.values()]:
        assert set(record["cases"]) == set(cases)


def _sglang_params() -> list[Any]:
    return [
        pytest.param(version, case, id=f"sglang-{version}-{case}")
        for version, record in SGLANG.items()
        for case, found in sorted(record["cases"].items())
        if "error" not in found  # remote code, or a method only SGLang's CUDA build registers
    ]


def test_sglang_recorded_where_it_configures_on_cpu() -> None:
    assert set(SGLANG) == {"0.5.23"} and len(_sglang_params()) >= 46


@pytest.mark.parametrize(("version", "case"), _sglang_params())
def test_engine_model_matches_real_sglang(version: str, case: str, cases: dict[str, str]) -> None:
    """SGLang's own ModelConfig: the dtype --dtype auto serves and the context length."""
    truth = SGLANG[version]["cases"][case]
    files = read_config_files(open_checkpoint(cases[case]))
    view = derive(parse_engine(f"sglang=={version}"), files)
    assert view.dtype.value == truth["dtype"]
    assert view.max_model_len.value == truth["context_len"]
    assert view.sampling_defaults.value == truth["sampling_defaults"]
    assert view.eos_token_id.value == (truth["eos_token_id"] or None)


def test_sglang_stops_on_both_files_eos_ids() -> None:
    """SGLang stops on config.json's eos_token_id and the generation config's together (vLLM:
    the generation config's alone), so fix-generation-eos-token-id adds to config.json's there."""
    cases = SGLANG["0.5.23"]["cases"]
    fixed = "deepseek-r1-distill-qwen-32b+fix-generation-eos-token-id"
    assert cases[fixed]["eos_token_id"] == [128001, 128008, 128009, 151643]
    for version, record in TRUTH.items():
        assert record["cases"][fixed]["generation_eos_token_id"] == [128001, 128008, 128009], (
            version
        )
    # A mark on generation_config.json: its ids are not read, config.json's still are.
    assert cases["deepseek-r1-distill-qwen-32b~bom-generation-config"]["eos_token_id"] == [151643]


@pytest.mark.parametrize(("version", "case"), _params())
def test_engine_model_matches_real_vllm(version: str, case: str, cases: dict[str, str]) -> None:
    truth = TRUTH[version]["cases"][case]
    engine = parse_engine(f"vllm=={version}")
    files = read_config_files(open_checkpoint(cases[case]))
    view = derive(engine, files)
    recorded_errors = truth["startup_errors"]
    # The config stage's errors, then the tokenizer's and the model build's (recorded apart).
    tokenizer = [e for e in view.startup_errors if e.file == TOKENIZER_FILE]
    config_stage = [
        e for e in view.startup_errors if e.code not in BUILD_ERRORS and e not in tokenizer
    ]
    build = [e for e in view.startup_errors if e.code in BUILD_ERRORS]
    # The snapshots hold no vocabulary, so a tokenizer may fail for want of one (not modelled).
    if "tokenizer" in truth:
        assert bool(tokenizer) == ("Unexpected UTF-8 BOM" in truth["tokenizer"])
        assert all(_same_error(e.message, truth["tokenizer"]) for e in tokenizer)
    else:
        assert not tokenizer
    assert len(config_stage) == len(recorded_errors), recorded_errors
    for modelled, recorded in zip(config_stage, recorded_errors, strict=True):
        assert _same_error(modelled.message, recorded), (modelled.message, recorded)
    if "max_model_len" not in truth:
        return  # the config stage failed before deriving anything
    # The build's first error: one the model names, else as far as a machine without a GPU
    # gets (the attention backend, a kernel, a CPU limit), where the model names none.
    recorded_build = truth["model_build"]
    modelled_build = [e for e in BUILD_MARKS if e in recorded_build]
    assert [e.code for e in build[:1]] == [BUILD_MARKS[m] for m in modelled_build]
    if build:
        assert _same_error(build[0].message, recorded_build.split("Value error, ")[-1]), build
    assert view.sampling_defaults.value == truth["sampling_defaults"]
    assert view.eos_token_id.value == truth["generation_eos_token_id"]
    rest = truth["max_model_len"] - PROMPT_TOKENS
    asked, unset = truth["max_tokens"]["asked_rest"], truth["max_tokens"]["unset"]
    assert view.max_tokens_cap.value == (asked if asked < rest else None)
    assert unset == min(rest, view.sampling_defaults.value.get("max_tokens", rest))
    assert view.max_model_len.value == truth["max_model_len"]
    # 'auto' resolved from the files, unless the attention layers switched the cache to fp8
    # while the model was built (a compressed-tensors kv_cache_scheme).
    switched = truth.get("kv_cache_dtype_layers") == "fp8"
    assert view.kv_cache_dtype.value == ("fp8" if switched else truth["kv_cache_dtype"])
    assert view.quantization.value == truth["quantization"]
    assert view.mla == truth["mla"]
    assert view.dtype.value == truth["dtype"]
    for capability, dtype in truth["dtype_on_gpu"].items():
        assert derive(engine, files, parse_gpu(capability)).dtype.value == dtype, capability
    importable = {
        name
        for name, row in TRUTH[version]["backend_table"]["backends"].items()
        if "error" not in row
    }
    for capability in ("12.0", "9.0"):
        accepted = derive(engine, files, parse_gpu(capability)).attention_backends
        if truth["mla"]:
            # Backends that need a GPU driver to import were not probed; compare the rest.
            assert accepted is not None
            probed = tuple(name for name in accepted if name in importable)
            assert probed == tuple(truth["attention_backends"][capability]), capability
        else:
            assert accepted is None


def _flag_params() -> list[tuple[str, str]]:
    return [
        (version, case)
        for version, record in sorted(TRUTH.items())
        for case, truth in sorted(record["cases"].items())
        if "kv_cache_dtype_flags" in truth
    ]


@pytest.mark.parametrize(("version", "case"), _flag_params())
def test_a_chosen_kv_cache_dtype_is_what_real_vllm_makes_of_it(
    version: str, case: str, cases: dict[str, str]
) -> None:
    """``--kv-cache-dtype bfloat16`` (or fp8) as a target's choice: the cache dtype the real
    vLLM's config leaves (the flag wins over the checkpoint's FP8 directive), and the MLA
    backends that then accept it per capability, are the engine model's."""
    engine = parse_engine(f"vllm=={version}")
    files = read_config_files(open_checkpoint(cases[case]))
    importable = {
        name
        for name, row in TRUTH[version]["backend_table"]["backends"].items()
        if "error" not in row
    }
    for flag, recorded in TRUTH[version]["cases"][case]["kv_cache_dtype_flags"].items():
        view = derive(engine, files, kv_cache_dtype=flag)
        plain = {e.message for e in derive(engine, files).startup_errors}
        chosen = [e for e in view.startup_errors if e.message not in plain]
        if "error" in recorded:  # 0.33 refuses a bf16 cache on a float16 model
            assert [e.code for e in chosen] == ["kv-dtype-mismatch"], recorded
            assert _same_error(chosen[0].message, recorded["error"].split("Value error, ")[-1])
            continue
        assert not chosen, chosen
        assert view.kv_cache_dtype.value == recorded["cache_dtype"], flag
        for capability in ("12.0", "9.0"):
            accepted = derive(engine, files, parse_gpu(capability), kv_cache_dtype=flag)
            probed = tuple(n for n in accepted.attention_backends or () if n in importable)
            assert probed == tuple(recorded["attention_backends"][capability]), (flag, capability)


def test_on_sm120_vllm_0_16_takes_a_bf16_cache_chosen_for_kimi() -> None:
    """The story's other fix, in the real vLLM 0.16.0's own terms: with --kv-cache-dtype
    bfloat16 the example's cache is bfloat16 and TRITON_MLA takes it on 12.0."""
    chosen = TRUTH["0.16.0"]["cases"]["example-kimi-k2.5-nvfp4"]["kv_cache_dtype_flags"]
    assert chosen["bfloat16"]["cache_dtype"] == "bfloat16"
    assert chosen["bfloat16"]["attention_backends"]["12.0"] == ["TRITON_MLA"]
    assert chosen["fp8"]["attention_backends"]["12.0"] == []


@pytest.mark.parametrize("version", sorted(TRUTH))
def test_act_dtypes_match_real_vllm(version: str) -> None:
    """Each modelled quantization method's dtypes, as the real vLLM lists them."""
    from patcher.engines import vllm_kv

    recorded = TRUTH[version]["act_dtypes"]
    for method, dtypes in vllm_kv.ACT_DTYPES.items():
        if recorded[method] != "not registered":
            assert tuple(recorded[method]) == dtypes, method


@pytest.mark.parametrize("version", sorted(TRUTH))
def test_backend_table_matches_real_vllm(version: str) -> None:
    """The KV dtypes and capabilities of each MLA backend the real vLLM could import."""
    from patcher.engines import vllm_kv

    table = vllm_kv.backend_table(parse_engine(f"vllm=={version}"))
    for name, recorded in TRUTH[version]["backend_table"]["backends"].items():
        if "error" in recorded:
            continue  # needs a GPU driver to import; its gates were read in the source
        majors, dtypes = table[name]
        assert set(dtypes) == set(recorded["kv_cache_dtypes"]), name
        for capability in ("8.0", "8.9", "9.0", "10.0", "12.0"):
            accepted = not majors or int(capability.split(".")[0]) in majors
            assert accepted == (capability in recorded["capabilities"]), (name, capability)


def test_kimi_story_ends_with_a_server_that_starts(kimi: Path) -> None:
    """vLLM 0.16 on SM120: the published files fail, strip-fp8-kv-cache makes them start,
    and set-context-length is refused with the flag that works (the YaRN rule)."""
    assert TRUTH["0.16.0"]["cases"]["example-kimi-k2.5-nvfp4"]["attention_backends"]["12.0"] == []
    truth = TRUTH["0.16.0"]["cases"]["kimi-k2.5-nvfp4+strip-fp8-kv-cache"]
    assert truth["attention_backends"]["12.0"] == ["TRITON_MLA"] and not truth["startup_errors"]
    before = api.check(kimi, engine="vllm==0.16.0", gpu="rtx-pro-6000")
    assert before.engine is not None and not before.engine.starts
    api.apply(kimi, "strip-fp8-kv-cache", engine="vllm==0.16.0")
    after = api.check(kimi, engine="vllm==0.16.0", gpu="rtx-pro-6000")
    assert after.engine is not None and after.engine.starts
    assert after.engine.attention_backends == ("TRITON_MLA",)
    with pytest.raises(api.PatcherError, match="--max-model-len 131072"):
        api.apply(kimi, "set-context-length", {"length": 131072}, engine="vllm==0.16.0")


def test_nested_nvfp4_strip_leaves_a_config_vllm_accepts(tmp_path: Path) -> None:
    """Deleting the nested key fails vLLM's NVFP4 check (recorded); nulling it passes."""
    removed = TRUTH["0.16.0"]["cases"]["qwen3-30b-a3b-nvfp4~kv-key-removed"]["startup_errors"]
    assert removed and "['kv_cache_quant_algo']" in removed[0]
    root = tmp_path / "qwen"
    shutil.copytree(SNAPSHOTS / "configs" / "qwen3-30b-a3b-nvfp4", root)
    api.apply(root, "strip-fp8-kv-cache")
    for version in TRUTH:
        view = derive(parse_engine(f"vllm=={version}"), read_config_files(open_checkpoint(root)))
        assert view.starts and view.kv_cache_dtype.value == "auto"


def test_null_dtype_is_not_served_in_float32() -> None:
    """A null torch_dtype: real vLLM serves bfloat16 (float16 on a V100), never float32, and
    SGLang float16 (the null-dtype finding); with the weights beside it, vLLM 0.33 reads their
    dtype, which patcher (never reading weights) does not claim to know."""
    for version, record in TRUTH.items():
        for case in ("deepseek-r1-distill-qwen-32b~dtype-null", "deepseek-r1-distill-qwen-32b"):
            truth = record["cases"][case]
            assert truth["dtype"] == "bfloat16", version
            assert truth["dtype_on_gpu"] == {"7.0": "float16", "8.0": "bfloat16"}, version
    assert (
        SGLANG["0.5.23"]["cases"]["deepseek-r1-distill-qwen-32b~dtype-null"]["dtype"] == "float16"
    )
    config = json.loads(
        (SNAPSHOTS / "configs" / "deepseek-r1-distill-qwen-32b" / "config.json").read_text()
    )
    config["torch_dtype"] = None
    listed = ConfigFiles(config, None, "config.json", weights=True)
    assert derive(parse_engine("vllm==0.16.0"), listed).dtype.value == "bfloat16"
    unread = derive(parse_engine("vllm==0.33.0"), listed).dtype
    assert unread.value is None and "safetensors headers" in unread.reason


def test_a_marked_generation_config_is_silently_ignored() -> None:
    """The bom finding's claim, recorded: with a byte-order mark at the start of
    generation_config.json vLLM starts, without the file's sampling defaults, and with
    config.json's eos_token_id."""
    for version, record in TRUTH.items():
        plain = record["cases"]["deepseek-r1-distill-qwen-32b"]
        marked = record["cases"]["deepseek-r1-distill-qwen-32b~bom-generation-config"]
        assert plain["sampling_defaults"] == {"temperature": 0.6, "top_p": 0.95}, version
        assert marked["sampling_defaults"] == {} and not marked["startup_errors"], version
        config = json.loads(
            (SNAPSHOTS / "configs" / "deepseek-r1-distill-qwen-32b" / "config.json").read_text()
        )
        assert marked["generation_eos_token_id"] == config["eos_token_id"], version


def test_a_marked_tokenizer_config_stops_every_engine() -> None:
    """The bom finding's claim for tokenizer_config.json, recorded: vLLM's and SGLang's own
    tokenizer loading refuse the file with a mark, and not for the mark without one."""
    records = {**{f"vllm {v}": r for v, r in TRUTH.items()}, "sglang": SGLANG["0.5.23"]}
    for engine, record in records.items():
        plain = record["cases"]["deepseek-r1-distill-qwen-32b"]["tokenizer"]
        marked = record["cases"]["deepseek-r1-distill-qwen-32b~bom-tokenizer-config"]
        assert marked["tokenizer"].startswith("JSONDecodeError: Unexpected UTF-8 BOM"), engine
        assert "BOM" not in plain, engine
        if "max_model_len" in marked or "context_len" in marked:  # the config stage is fine
            assert not marked.get("startup_errors"), engine


def _loaded_tokenizers() -> list[Any]:
    records = {**{f"vllm-{v}": r for v, r in TRUTH.items()}, "sglang": SGLANG["0.5.23"]}
    return [
        pytest.param(engine, case, id=f"{engine}-{case}")
        for engine, record in records.items()
        for case, found in sorted(record["cases"].items())
        if found.get("tokenizer") == "loaded"
    ]


def test_every_tokenizer_loaded_where_the_case_has_one() -> None:
    assert len(_loaded_tokenizers()) >= 3 * 20


@pytest.mark.parametrize(("engine", "case"), _loaded_tokenizers())
def test_the_served_chat_template_is_the_one_patcher_names(
    engine: str, case: str, cases: dict[str, str]
) -> None:
    """The template each engine's tokenizer carries (what its server renders with, given no
    --chat-template) is the one patcher's rule names: chat_template.jinja over
    tokenizer_config.json's own."""
    record = SGLANG["0.5.23"] if engine == "sglang" else TRUTH[engine.removeprefix("vllm-")]
    folder = Path(cases[case])
    jinja = folder / JINJA_FILE
    served = served_template(
        json.loads((folder / "tokenizer_config.json").read_bytes().decode("utf-8-sig")),
        jinja.read_text(encoding="utf-8") if jinja.exists() else None,
    )
    expected = None if served is None else hashlib.sha256(served.encode()).hexdigest()
    assert record["cases"][case]["chat_template_sha256"] == expected


def test_set_chat_template_is_what_every_engine_serves() -> None:
    """set-chat-template's claim: after it, the tokenizer carries the given template; and with
    a chat_template.jinja beside it, tokenizer_config.json's own template is not served."""
    template = "{% for m in messages %}{{ m['content'] }}{% endfor %}\n"  # test_golden's
    given = hashlib.sha256(template.encode()).hexdigest()
    records = [*TRUTH.values(), SGLANG["0.5.23"]]
    for record in records:
        for model in ("deepseek-r1-distill-qwen-32b", "llama-3.1-8b-instruct-bnb8bit"):
            found = record["cases"][f"{model}+set-chat-template"]
            assert found["chat_template_sha256"] == given, (record["version"], model)
            assert record["cases"][model]["chat_template_sha256"] not in (None, given)
        shadowed = record["cases"]["deepseek-r1-distill-qwen-32b~chat-template-jinja"]
        own = record["cases"]["deepseek-r1-distill-qwen-32b"]["chat_template_sha256"]
        assert shadowed["chat_template_sha256"] != own, record["version"]


def test_strip_ct_kv_cache_scheme_keeps_the_model_dtype_cache() -> None:
    """strip-ct-kv-cache-scheme's claim: with a compressed-tensors kv_cache_scheme, vLLM's
    attention layers switch the KV cache to fp8 though 'auto' resolves to the model dtype;
    after the transform (the scheme null) the cache stays the model dtype."""
    case = "deepseek-r1-distill-qwen-32b~ct-fp8-kv"
    for version, record in TRUTH.items():
        marked, stripped = (
            record["cases"][case],
            record["cases"][f"{case}+strip-ct-kv-cache-scheme"],
        )
        assert (marked["kv_cache_dtype"], marked["kv_cache_dtype_layers"]) == ("auto", "fp8"), (
            version
        )
        assert (stripped["kv_cache_dtype"], stripped["kv_cache_dtype_layers"]) == ("auto", "auto")
        assert "Invalid attention backend" in stripped["model_build"], version  # built as far


def test_max_new_tokens_caps_every_response_only_before_0_17() -> None:
    """vLLM 0.16.0 cuts a request asking for the whole context at generation_config.json's
    max_new_tokens; 0.33.0 takes it as the default of requests that set none (PR #34063);
    SGLang's request defaults leave it out."""
    case = "deepseek-r1-distill-qwen-32b~max-new-tokens"
    old, new = TRUTH["0.16.0"]["cases"][case], TRUTH["0.33.0"]["cases"][case]
    rest = old["max_model_len"] - PROMPT_TOKENS
    assert old["max_tokens"] == {"asked_rest": 2048, "unset": 2048}
    assert new["max_tokens"] == {"asked_rest": rest, "unset": 2048}
    assert "max_tokens" not in SGLANG["0.5.23"]["cases"][case]["sampling_defaults"]


def test_values_equal_to_transformers_defaults_count_only_under_transformers_5() -> None:
    """temperature 1.0, top_k 50, top_p 1.0 and repetition_penalty 1.0 in generation_config.json:
    dropped by vLLM 0.16.0 (transformers 4 sees its own defaults), request defaults in 0.33.0
    (transformers 5); so an explicit top_k 50 samples differently after the upgrade."""
    case = "deepseek-r1-distill-qwen-32b~generation-neutral-values"
    assert TRUTH["0.16.0"]["cases"][case]["sampling_defaults"] == {}
    assert TRUTH["0.33.0"]["cases"][case]["sampling_defaults"] == {
        "repetition_penalty": 1.0,
        "temperature": 1.0,
        "top_k": 50,
        "top_p": 1.0,
    }


def test_partial_sliding_window_is_not_built_and_no_switch_helps() -> None:
    """vLLM 0.16.0 and 0.33.0 refuse to build a Qwen2 model with a sliding window on only some
    layers; --disable-sliding-window does not help and caps the context at the window, nor do
    the overrides; disable-sliding-window's edit does (the build goes on to the attention
    backend, as far as a machine without a GPU goes)."""
    case = "deepseek-r1-distill-qwen-32b~partial-sliding-window"
    for version, record in TRUTH.items():
        found = record["cases"][case]
        assert not found["startup_errors"], version  # the config stage passes
        assert "Sliding window for some but all layers" in found["model_build"], version
        switches = found["sliding_window_switches"]
        assert switches["--disable-sliding-window"]["max_model_len"] == 4096, version
        for switch in switches.values():
            assert "Sliding window for some but all layers" in switch["model_build"], version
        fixed = record["cases"][f"{case}+disable-sliding-window"]
        assert fixed["model_build"] == "ValueError: Invalid attention backend for None", version
        assert fixed["max_model_len"] == found["max_model_len"], version


def test_llama3_rope_without_its_own_theta_starts() -> None:
    """add-rope-theta-to-rope-parameters' note: Llama 3.1's rope_scaling has no rope_theta of
    its own, and vLLM 0.16.0 and 0.33.0 (transformers 5.20.2) start and build it as it is."""
    config = json.loads(
        (SNAPSHOTS / "configs" / "llama-3.1-8b-instruct-bnb8bit" / "config.json").read_text()
    )
    assert (
        config["rope_scaling"]["rope_type"] == "llama3"
        and "rope_theta" not in config["rope_scaling"]
    )
    for version, record in TRUTH.items():
        found = record["cases"]["llama-3.1-8b-instruct-bnb8bit+remove-quantization-config"]
        assert not found["startup_errors"], version
        assert found["model_build"] == "ValueError: Invalid attention backend for None", version


def test_mtp_is_built_from_the_declared_count_and_refused_at_zero() -> None:
    """disable-mtp-layers' notes: vLLM builds the MTP draft from the declared count only when
    started with --speculative-config method mtp, and does not start so once it is 0."""
    for version, record in TRUTH.items():
        declared = record["cases"]["deepseek-v3"]["speculative_mtp"]
        assert declared == "draft deepseek_mtp, n_predict 1", version
        zero = record["cases"]["deepseek-v3+disable-mtp-layers"]["speculative_mtp"]
        assert zero == "ZeroDivisionError: integer modulo by zero", version
