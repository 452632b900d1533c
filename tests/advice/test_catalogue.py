"""doctor from the engines' own words: the catalogue of start-up errors read from the source of
vLLM 0.16.0 and 0.34.0, SGLang 0.5.23 and transformers 5.25.0 (tools/read_errors.py), the
families that answer them, and logs written from every recorded template.

The logs here are made from the templates themselves, with the prefixes, colours and wrapping
real engines print (vLLM's ``(EngineCore_DP0 pid=…) ERROR … [file:line]``, torchrun's
``[rank0]:``, SGLang's ``[date TP0]``), so every family is tried on every wording a read
release has, and a new release's wording is tried the day it is read.
"""

from __future__ import annotations

import json
import random
import re
import zipfile
from pathlib import Path

import pytest

from patcher.advice import catalogue
from patcher.advice.catalogue import Template
from patcher.advice.doctor import diagnose_text
from patcher.advice.families import FAMILIES, family_of
from patcher.advice.own_remedy import own_remedy
from tests.conftest import wheel_of

ROOT = Path(__file__).resolve().parents[2]
PREFIXES = (
    "(EngineCore_DP0 pid=4242) ERROR 12-04 10:00:01 [core.py:708] ",
    "[rank0]: ",
    "[2026-12-04 10:00:01 TP0] ",
    "\x1b[1;31mERROR\x1b[0m 12-04 10:00:01 [api_server.py:99] ",
    "",
)


def _filled(template: Template, seed: int) -> str:
    """The message's first line as the engine prints it, each hole filled with a value."""
    values = ("40", "16", "fp8", "DeepseekV3ForCausalLM", "131072", "0.9", "cutlass")
    head = template.head
    return "".join(
        p if i % 2 == 0 else values[(seed + i) % len(values)] for i, p in enumerate(head)
    )


def _log_line(template: Template, seed: int) -> str:
    kind = template.exception
    body = _filled(template, seed)
    if kind.startswith("log."):
        return PREFIXES[seed % 2] + body
    return PREFIXES[seed % len(PREFIXES)] + f"{kind}: {body}"


def test_every_template_of_every_read_release_is_in_a_family() -> None:
    unclaimed = [
        f"{t.engine} {t.file}: {t.text[:80]}" for t in catalogue.templates() if family_of(t) is None
    ]
    assert unclaimed == []


def test_every_family_answers_some_template() -> None:
    claimed = {family_of(t).name for t in catalogue.templates()}  # type: ignore[union-attr]
    assert {f.name for f in FAMILIES} == claimed
    assert len(FAMILIES) == len({f.name for f in FAMILIES})


def test_the_catalogue_names_the_releases_read_and_when() -> None:
    for engine, newest in (("vllm", "0.34.0"), ("sglang", "0.5.23"), ("transformers", "5.25.0")):
        read = catalogue.releases(engine)
        assert newest in read, engine
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", read[newest])
    assert {"0.16.0", "0.34.0"} <= set(catalogue.releases("vllm"))


def test_a_wording_that_changed_between_releases_is_two_templates() -> None:
    # vLLM's KV-memory refusal said "models's" until 0.21.0 and "model's" from 0.22.0.
    kv = [
        t
        for t in catalogue.templates("vllm")
        if t.text.startswith("To serve at least one request with the model")
    ]
    old = {r for t in kv if "models's" in t.text for r in t.releases}
    new = {r for t in kv if "model's max" in t.text for r in t.releases}
    assert "0.16.0" in old and "0.16.0" not in new
    assert {"0.22.0", "0.34.0"} <= new and not {"0.22.0", "0.34.0"} & old


def test_a_log_written_from_each_template_gets_that_template_and_its_family() -> None:
    missed: list[str] = []
    matchable = [t for t in catalogue.templates() if t.matchable]
    assert len(matchable) > 1500
    for seed, template in enumerate(matchable):
        log = "INFO starting\n" + _log_line(template, seed) + "\n"
        found = diagnose_text(log)
        if not found.recognised:
            missed.append(f"{template.file}: {template.text[:70]}")
            continue
        if found.template is not None:
            assert found.family is not None and found.fixes, template.text
    # A line whose holes swallow a word boundary (``{x}s``) can be cut apart differently.
    assert len(missed) <= len(matchable) // 100, missed[:10]


@pytest.mark.parametrize(
    ("log", "family", "fix"),
    [
        (
            "(EngineCore_DP0 pid=7) ERROR 12-04 10:00:00 [core.py:1] ValueError: Total number "
            "of attention heads (40) must be divisible by tensor parallel size (16).",
            "parallel-sizes",
            "--tensor-parallel-size 8",
        ),
        (
            "[2026-12-04 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call "
            "last):\nNotImplementedError: moe_runner_backend=cutlass is not supported for NVFP4 "
            "MoE. Use --moe-runner-backend flashinfer_cutlass instead.",
            "moe-backend",
            "--moe-runner-backend flashinfer_cutlass",
        ),
        (
            "[2026-12-04 10:00:00 TP0] ValueError: The output_size of gate's and up's weight = "
            "1408 is not divisible by weight quantization block_n = 128.",
            "parallel-sizes",
            "--ep-size",
        ),
    ],
)
def test_the_answer_is_computed_from_what_the_message_carries(
    log: str, family: str, fix: str
) -> None:
    found = diagnose_text(log)
    assert found.code == family
    assert any(fix in f.text for f in found.fixes), found.fixes


def test_a_hardware_gap_gets_no_config_fix() -> None:
    found = diagnose_text(
        "ValueError: nvfp4_per_token online quantization requires a Blackwell (SM100) GPU."
    )
    assert found.family is not None and found.family.answer == "none"
    assert all(f.kind == "advice" for f in found.fixes)
    assert not any("patcher apply" in f.text for f in found.fixes)


@pytest.mark.parametrize(
    "line",
    [
        "NotImplementedError: No compressed-tensors compatible scheme was found.",
        "NotImplementedError: No compressed-tensors compatible scheme was found for "
        "layer_name=model.layers.0.mlp.experts, weight_quant=QuantizationArgs(num_bits=4), "
        "input_quant=None, output_quant=None, format=mxfp4-pack-quantized",
    ],
)
def test_no_scheme_a_release_has_for_the_quantization_is_a_gap_not_a_config_edit(
    line: str,
) -> None:
    """vLLM's _get_scheme_from_parts tries every scheme of the release, each gated on the
    GPU's capability: when none is left, no edit of quantization_config makes one."""
    found = diagnose_text("(EngineCore_DP0 pid=1) ERROR 12-04 10:00:01 [core.py:708] " + line)
    assert found.family is not None and found.family.answer == "none"
    assert not any(f.kind in ("transform", "flag") for f in found.fixes)
    assert found.template is not None and found.template.engine == "vllm"  # its prefix says


def test_a_moe_runner_without_a_kernel_for_the_all_to_all_gets_the_default_all_to_all() -> None:
    """SGLang 0.5.8+'s MoeRunner (moe_runner/runner.py): a runner with no core of its own runs
    only through a fused func registered for the all-to-all backend; "none" is the default."""
    found = diagnose_text(
        "[2026-12-04 10:00:01 TP0] NotImplementedError: Runner backend MoeRunnerBackend.MARLIN "
        "requires a fused func for a2a backend deepep, but none is registered."
    )
    assert found.family is not None and found.family.name == "moe-backend"
    assert any(f.kind == "flag" and f.text == "--moe-a2a-backend none" for f in found.fixes)


def test_the_root_of_a_chained_traceback_wins_over_the_wrapper() -> None:
    log = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/x/vllm/config/model.py", line 9, in __post_init__',
            '    raise ValueError(f"Total number of attention heads ({h}) must be divisible")',
            "ValueError: Total number of attention heads (40) must be divisible by tensor "
            "parallel size (16).",
            "",
            "The above exception was the direct cause of the following exception:",
            "",
            "RuntimeError: Engine core initialization failed. See root cause above. Failed "
            "core proc(s): {}",
        ]
    )
    found = diagnose_text(log)
    assert found.code == "parallel-sizes"
    assert found.error is not None and found.error.startswith("ValueError: Total number")


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: Total number of attention heads (28) must be divisible by tensor parallel "
        "size (8)",
        "NotImplementedError: No compressed-tensors compatible scheme was found",
    ],
)
def test_a_message_quoted_without_its_full_stop_is_read_whole(line: str) -> None:
    found = diagnose_text(line)
    assert found.template is not None, found
    assert "read from its words" not in found.cause
    assert found.template.text.endswith(".") and not line.endswith(".")


def test_a_line_cut_short_still_names_the_message() -> None:
    # A log viewer's cut, or a terminal's wrap: the start of a long message is enough.
    template = next(
        t
        for t in catalogue.templates("vllm")
        if t.text.startswith("Hybrid KV cache manager is disabled but failed to convert")
    )
    found = diagnose_text("ValueError: " + _filled(template, 0)[:70])
    assert found.template is not None and found.template.text == template.text


def test_an_error_no_release_raises_is_quoted_and_given_no_fix() -> None:
    found = diagnose_text("INFO up\n[rank0]: RuntimeError: the flux capacitor is not charged\n")
    assert not found.recognised
    assert found.error == "RuntimeError: the flux capacitor is not charged"
    assert found.fixes == ()


def test_the_message_s_own_remedy_is_read_as_it_says() -> None:
    fixes = own_remedy(
        "use --moe-runner-backend triton for this router; set the env var "
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1; leave --all2all-backend unset; "
        "pip install 'flashinfer-python>=0.6'"
    )
    assert [(f.kind, f.text) for f in fixes] == [
        ("flag", "--moe-runner-backend triton"),
        ("advice", "drop --all2all-backend"),
        ("env", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"),
        ("dependency", "pip install flashinfer-python>=0.6"),
    ]


def test_a_verb_before_a_list_of_settings_applies_to_each() -> None:
    # vLLM's sampler warm-up (0.8.0 to 0.33.0): both settings are to be lowered, and the
    # memory ran out beside the KV cache's share, so no answer raises that share
    line = (
        "RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy "
        "requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when "
        "initializing the engine."
    )
    assert [f.text for f in own_remedy(line)] == [
        "--max-num-seqs N",
        "--gpu-memory-utilization N",
    ]
    found = diagnose_text(line)
    assert [f.text for f in found.fixes] == ["--max-num-seqs N", "--gpu-memory-utilization N"]
    assert all("smaller" in (f.note or "") for f in found.fixes)


def test_a_flag_after_when_is_the_setting_it_ran_with_not_the_advice() -> None:
    # SGLang 0.5.10's server_args.py joins its two sentences without a space: the flag the
    # server ran with is a condition, the one after "please use" the way out
    fixes = own_remedy(
        "Speculative decoding for Qwen3_5MoeForConditionalGeneration is not compatible with "
        "radix cache when using --mamba-scheduler-strategy no_buffer.To use radix cache with "
        "speculative decoding, please use --mamba-scheduler-strategy extra_buffer and set "
        "SGLANG_ENABLE_SPEC_V2=1."
    )
    assert [(f.kind, f.text) for f in fixes] == [
        ("flag", "--mamba-scheduler-strategy extra_buffer"),
        ("env", "SGLANG_ENABLE_SPEC_V2=1"),
    ]


def test_disable_before_a_flag_is_leaving_it_out() -> None:
    # vLLM's Step-5 attention: "Disable --enable-dbo and set --ubatch-size 1."
    fixes = own_remedy("Disable --enable-dbo and set --ubatch-size 1.")
    assert ("advice", "drop --enable-dbo") in [(f.kind, f.text) for f in fixes]
    assert ("flag", "--ubatch-size 1") in [(f.kind, f.text) for f in fixes]


def test_the_recorder_reads_templates_from_source() -> None:
    from tools.read_messages import templates_in

    source = (
        "def f(h, tp):\n"
        "    msg = f'heads ({h}) must be divisible by tp ({tp})'\n"
        "    if h % tp:\n"
        "        raise ValueError(msg)\n"
        "    assert tp > 0, 'tp must be positive: %d' % tp\n"
        "    logger.error('cannot start %s', h)\n"
    )
    found = [(t["exception"], t["parts"]) for t in templates_in(source, "x.py")]
    assert found == [
        ("ValueError", ["heads (", "h", ") must be divisible by tp (", "tp", ")"]),
        ("AssertionError", ["tp must be positive: ", "tp", ""]),
        ("log.error", ["cannot start ", "h", ""]),
    ]


def test_the_catalogue_files_are_the_recorders_output() -> None:
    for engine in ("vllm", "sglang", "transformers"):
        data = json.loads((ROOT / "patcher" / "advice" / f"errors-{engine}.json").read_text())
        assert data["engine"] == engine and data["templates"]
        assert all(
            set(t) == {"exception", "parts", "file", "line", "releases"} for t in data["templates"]
        )


def test_doctor_reads_a_large_log_line_by_line() -> None:
    rng = random.Random(5)
    noise = [
        f"(EngineCore_DP0 pid=1) ERROR 12-04 10:00:00 [x.py:1] Error {rng.random()}"
        for _ in range(2000)
    ]
    found = diagnose_text(
        "\n".join(
            [
                *noise,
                "ValueError: Total number of attention heads "
                "(40) must be divisible by tensor parallel size (16).",
            ]
        )
    )
    assert found.code == "parallel-sizes"


@pytest.mark.parametrize(
    ("reasons", "strips"),
    [
        (
            "{FLASHMLA: [kv_cache_dtype not supported], TRITON_MLA: [compute capability not "
            "supported]}",
            True,
        ),
        (
            "{FLASHMLA: [compute capability not supported], TRITON_MLA: [head_size not "
            "supported, kv_cache_dtype not supported]}",
            False,
        ),
    ],
)
def test_stripping_the_fp8_kv_directive_is_offered_only_where_a_backend_then_runs(
    reasons: str, strips: bool
) -> None:
    line = (
        "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig("
        "head_size=576, dtype=torch.bfloat16, kv_cache_dtype=fp8, block_size=64, use_mla=True, "
        f"has_sink=False, use_sparse=False). Reasons: {reasons}."
    )
    found = diagnose_text(line)
    assert any("strip-fp8-kv-cache" in f.text for f in found.fixes) is strips


def test_a_sparse_mla_model_never_gets_the_strip() -> None:
    found = diagnose_text(
        "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig("
        "head_size=576, dtype=torch.bfloat16, kv_cache_dtype=fp8_ds_mla, block_size=64, "
        "use_mla=True, has_sink=False, use_sparse=True). Reasons: {FLASHMLA_SPARSE: "
        "[kv_cache_dtype not supported]}."
    )
    assert found.code == "no-attention-backend"
    assert not any("strip" in f.text for f in found.fixes)


@pytest.mark.parametrize("declares", [True, False])
def test_the_strip_is_offered_only_for_a_checkpoint_that_declares_the_fp8_cache(
    tmp_path: Path, declares: bool
) -> None:
    from patcher.advice.doctor import diagnose
    from tests.conftest import build_tree

    quant = {"quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8" if declares else None}
    build_tree(
        tmp_path / "ckpt",
        {
            "config.json": json.dumps({"architectures": ["DeepseekV3ForCausalLM"]}),
            "hf_quant_config.json": json.dumps({"quantization": quant}),
        },
    )
    log = tmp_path / "server.log"
    log.write_text(
        "ValueError: Selected backend AttentionBackendEnum.TRITON_MLA is not valid for this "
        "configuration. Reason: ['kv_cache_dtype not supported']\n"
    )
    found = diagnose(log, checkpoint=tmp_path / "ckpt")
    assert any("strip-fp8-kv-cache" in f.text for f in found.fixes) is declares
    assert found.fixes


@pytest.mark.parametrize(
    ("after", "fix"),
    [("30.00", "--mem-fraction-static 0.82"), ("4.00", "more GPUs")],
)
def test_sglang_s_memory_fraction_is_computed_from_the_log_s_own_free_memory(
    after: str, fix: str
) -> None:
    # SGLang sizes its pool from free-after-load - free-before-load x (1 - fraction): with
    # 139.2 GB free before and 30 after, the fraction must pass 1 - 30/139.2 = 0.785.
    log = "\n".join(
        [
            "[2026-12-04 10:00:00 TP0] Load weight begin. avail mem=139.20 GB",
            f"[2026-12-04 10:00:30 TP0] Load weight end. type=Qwen3MoeForCausalLM, "
            f"dtype=torch.bfloat16, avail mem={after} GB, mem usage=109.20 GB.",
            "[2026-12-04 10:00:31 TP0] Scheduler hit an exception: Traceback (most recent call "
            "last):",
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
            "Current value: mem_fraction_static=0.7",
        ]
    )
    found = diagnose_text(log)
    assert found.code == "sglang-memory"
    assert fix in found.fixes[0].text


def test_a_message_less_divisibility_assert_is_read_from_the_source_line_above_it() -> None:
    # SGLang's models assert `self.total_num_heads % tp_size == 0` with no message: Python
    # prints the source line, then a bare AssertionError.
    log = "\n".join(
        [
            "[2026-12-04 10:00:00 TP6] Scheduler hit an exception: Traceback (most recent call "
            "last):",
            '  File "/x/sglang/srt/models/llama.py", line 183, in __init__',
            "    assert self.total_num_heads % tp_size == 0",
            "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
            "AssertionError",
        ]
    )
    found = diagnose_text(log)
    assert found.code == "parallel-sizes"
    assert found.fixes[0].text == "--tp-size N" and "attention heads" in found.cause


def test_the_error_a_worker_wrapper_quotes_is_read() -> None:
    found = diagnose_text(
        "(EngineCore pid=1) ERROR 12-04 10:00:00 [core.py:1] RuntimeError: Worker failed with "
        "error 'Total number of attention heads (40) must be divisible by tensor parallel size "
        "(16).', please check the stack trace above for the root cause"
    )
    assert found.code == "parallel-sizes"
    assert found.fixes[0].text == "--tensor-parallel-size 8"


# SGLang's get_tokenizer: err_msg assigned in two except handlers, each raised there; a local
# assigned in an if and its else, with an addition after both; a local assigned twice in a row.
_LOCALS = (
    (
        "def get_tokenizer(name, trust_remote_code):\n"
        "    try:\n"
        "        return load(name)\n"
        "    except TypeError as e:\n"
        "        err_msg = ('Failed to load the tokenizer. If you are using a LLaMA V1 model '\n"
        "                   f'consider using {FAST!r} instead of the original tokenizer.')\n"
        "        raise RuntimeError(err_msg) from e\n"
        "    except ValueError as e:\n"
        "        if not trust_remote_code:\n"
        "            err_msg = 'Failed to load the tokenizer. Consider --trust-remote-code.'\n"
        "            raise RuntimeError(err_msg) from e\n"
        "        raise e\n",
        [
            [
                "Failed to load the tokenizer. If you are using a LLaMA V1 model consider using ",
                "FAST",
                " instead of the original tokenizer.",
            ],
            ["Failed to load the tokenizer. Consider --trust-remote-code."],
        ],
    ),
    (
        "def check(x):\n"
        "    if x:\n"
        "        msg = 'alpha refused'\n"
        "    else:\n"
        "        msg = 'beta refused'\n"
        "    msg += f' for {x}'\n"
        "    raise ValueError(msg)\n"
        "def again(x):\n"
        "    msg = 'first wording'\n"
        "    msg = 'second wording'\n"
        "    raise ValueError(msg)\n",
        [["alpha refused for ", "x", ""], ["beta refused for ", "x", ""], ["second wording"]],
    ),
)


@pytest.mark.parametrize(("source", "messages"), _LOCALS, ids=["handlers", "branches"])
def test_the_recorder_reads_each_value_of_a_local_that_reaches_the_raise(
    source: str, messages: list[list[str]]
) -> None:
    from tools.read_messages import templates_in

    assert [t["parts"] for t in templates_in(source, "x.py")] == messages


def test_a_message_ending_in_a_value_is_read_without_its_full_stop() -> None:
    # "LoRA rank {rank} is greater than max_lora_rank {max_lora_rank}." as an issue quotes it
    found = diagnose_text("[rank0]: ValueError: LoRA rank 32 is greater than max_lora_rank 16")
    assert [f.text for f in found.fixes] == ["--max-lora-rank 32"]


def test_the_recorder_reads_an_exception_raised_with_several_arguments_as_python_prints_it() -> (
    None
):
    from tools.read_messages import templates_in

    source = (
        "def check(min_capability, capability):\n"
        "    raise RuntimeError('Scheme is not supported for ',\n"
        "        f'the current GPU. Min capability: {min_capability}. ',\n"
        "        f'Current capability: {capability}.')\n"
    )
    (found,) = [t["parts"] for t in templates_in(source, "x.py")]
    printed = str(
        RuntimeError(
            "Scheme is not supported for ",
            "the current GPU. Min capability: 80. ",
            "Current capability: 75.",
        )
    )
    assert found[0] + "80" + found[2] + "75" + found[4] == printed


def test_a_capability_message_raised_as_a_tuple_is_the_gpu_not_the_checkpoint() -> None:
    # the tuple's parts read as one message: both numbers, and no checkpoint edit or flag
    # (the releases whose schemes ask less are scheme_capabilities.py's answer)
    found = diagnose_text(
        "(EngineCore_DP0 pid=585) ERROR 09-16 17:46:22 [core.py:718] RuntimeError: ("
        "'Quantization scheme is not supported for ', 'the current GPU. Min capability: 80. ', "
        "'Current capability: 75.')"
    )
    assert found.recognised and "capability 80" in found.cause and "has 75" in found.cause
    assert not any(f.kind in ("transform", "flag") for f in found.fixes)


def test_the_recorder_follows_a_message_a_helper_builds() -> None:
    from tools.read_messages import templates_in

    source = (
        "def _unsupported(backend, reason):\n"
        "    if reason:\n"
        "        return f'MoE backend {backend} does not support this since {reason}.'\n"
        "    return f'MoE backend {backend} does not support this.'\n"
        "def select(backend, reason):\n"
        "    raise ValueError(_unsupported(backend, reason))\n"
    )
    found = sorted((t["exception"], t["parts"]) for t in templates_in(source, "x.py"))
    assert found == [
        ("ValueError", ["MoE backend ", "backend", " does not support this since ", "reason", "."]),
        ("ValueError", ["MoE backend ", "backend", " does not support this."]),
    ]


def test_an_upgrade_is_named_only_where_a_read_release_knows_the_model_type() -> None:
    from patcher.advice.catalogue import feature_releases

    template = (
        "ValueError: The checkpoint you are trying to load has model type `{}` but Transformers "
        "does not recognize this architecture."
    )
    known = diagnose_text(template.format("qwen3_5_moe"))
    # whose log it is not said: the transformers that knows it first, then each engine's
    # releases that read the type with their own config class, said to be for that engine
    assert [f.text for f in known.fixes][0] == "pip install 'transformers>=5.2.0'"
    assert known.fixes[1:] and all(
        f.text.startswith(("pip install 'vllm>=", "pip install 'sglang>="))
        and (f.note or "").startswith("if the engine is ")
        for f in known.fixes[1:]
    )
    # a vLLM log of a release without the model's class: the release that lists it, which also
    # reads the type with its own config class (own_config, tests/advice/
    # test_transformers_rules.py), so it alone starts it: no transformers upgrade besides
    vllm = diagnose_text(
        "INFO 01-01 00:00:00 api_server.py:1] vLLM API server version 0.10.1\n"
        + template.format("qwen3_5_moe")
    )
    own = feature_releases("vllm", "own_config", "qwen3_5_moe")[0]
    assert [f.text for f in vllm.fixes] == [f"pip install 'vllm>={own}'"]
    assert "config class of their own" in (vllm.fixes[0].note or "")
    assert not (vllm.fixes[0].note or "").startswith("if the engine is ")
    unknown = diagnose_text(template.format("not_a_model_anyone_wrote"))
    assert unknown.code == "transformers-too-old"
    assert not any("transformers" in f.text for f in unknown.fixes)
    assert "not known to help" in unknown.cause


def test_the_pin_before_strict_config_validation_is_the_reading_s() -> None:
    # 5.4.0 is the first release read whose configuration_utils.py uses @strict.
    assert catalogue.strict_since() == "5.4.0"
    found = diagnose_text(
        "huggingface_hub.errors.StrictDataclassFieldValidationError: Validation error for field "
        "'rope_theta':"
    )
    assert "pip install 'transformers<5.4.0'" in [f.text for f in found.fixes]


@pytest.mark.parametrize(
    ("line", "family"),
    [
        # a kernel library's wording, quoted by vLLM's worker wrapper (no read release has it)
        (
            "(EngineCore pid=1) ERROR 12-04 10:00:00 [core.py:1] RuntimeError: Worker failed "
            "with error 'MLA kv_data_type torch.uint8 is not supported. Supported dtypes: "
            "[torch.float16, torch.bfloat16].', please check the stack trace above",
            "kv-cache-dtype",
        ),
        (
            "NotImplementedError: SomeAttention with FP8 KV cache not yet supported",
            "kv-cache-dtype",
        ),
        ("ValueError: world size 6 is not divisible by expert count 4", "parallel-sizes"),
    ],
)
def test_an_error_no_read_release_has_is_read_by_its_words_only_where_they_leave_one_cause(
    line: str, family: str
) -> None:
    found = diagnose_text(line)
    assert found.code == family and "read from its words" in found.cause
    assert found.template is None


def test_no_kernel_for_any_backend_is_a_gap_not_a_flag_to_drop() -> None:
    found = diagnose_text(
        "NotImplementedError: No NvFp4 MoE backend supports the deployment configuration."
    )
    assert found.code == "moe-backend"
    assert "kernel gap" in found.cause
    assert all(f.kind == "advice" for f in found.fixes)


@pytest.mark.parametrize(
    ("version", "method", "fix"),
    [
        # listed from 0.12.0 to 0.33.0 (--quantization's choices, read): 0.34.0 removed it
        (None, "fp_quant", "pip install 'vllm>=0.12.0,<0.34.0'"),
        ("0.34.0", "fp_quant", "pip install 'vllm>=0.12.0,<0.34.0'"),
        # bitsandbytes: 0.5.5 to 0.27.0 (0.28 dropped its loader)
        ("0.4.0", "bitsandbytes", "pip install 'vllm>=0.5.0.post1,<0.28.0'"),
        ("0.4.0", "gptq", "pip install 'vllm>=0.4.3'"),  # every release read lists it
        (None, "not_a_method", None),  # no release read lists it: no upgrade named
    ],
)
def test_a_vllm_release_is_named_for_a_quantization_method_only_from_the_reading(
    version: str | None, method: str, fix: str | None
) -> None:
    head = f"INFO vLLM API server version {version}\n" if version else ""
    found = diagnose_text(
        f"{head}ValueError: Unknown quantization method: {method}. Must be one of"
    )
    dependencies = [f.text for f in found.fixes if f.kind == "dependency"]
    assert dependencies == ([fix] if fix else [])


def test_a_setting_the_message_says_to_raise_becomes_its_flag() -> None:
    fixes = own_remedy("Please increase max_num_batched_tokens or decrease max_model_len.")
    assert [(f.text, f.note) for f in fixes] == [
        ("--max-num-batched-tokens N", "a larger value, as the message says"),
        ("--max-model-len N", "a smaller value, as the message says"),
    ]


def test_a_message_quoted_without_its_backticks_is_still_the_engines() -> None:
    # transformers 4.40 to 4.42's Llama config (configuration_llama.py), as an issue title
    # shows it once Markdown has eaten the backticks
    found = diagnose_text(
        "ValueError: rope_scaling must be a dictionary with two fields, type and factor"
    )
    assert found.template is not None and "`rope_scaling`" in found.template.text
    assert any(f.text.startswith("pip install 'transformers>=") for f in found.fixes)


def test_the_engines_divisibility_message_in_an_engines_log_names_a_size_that_divides() -> None:
    # vllm/distributed/utils.py's ensure_divisibility, read; InternVL2-26B's vision tower has
    # 25 heads, split 4 ways
    log = (
        '[rank0]:   File "/env/vllm/entrypoints/llm.py", line 177, in __init__\n'
        "[rank0]: AssertionError: 25 is not divisible by 4\n"
    )
    found = diagnose_text(log)
    assert found.code == "parallel-sizes"
    assert found.fixes[0].text == "--tensor-parallel-size 1"


def test_an_environment_value_the_message_refuses_is_not_the_fix() -> None:
    fixes = own_remedy("SGLANG_AMD_FLYDSL_MEGA_MOE_DECODE_MTPR=3 must be 0 (off) or a power of two")
    assert [f.text for f in fixes] == ["unset SGLANG_AMD_FLYDSL_MEGA_MOE_DECODE_MTPR"]


def test_two_flags_the_message_refuses_together_are_each_left_out_never_added() -> None:
    # SGLang 0.5.23's words (sglang/srt/arg_groups/overrides.py): the flags on both sides of
    # "cannot be combined with" are the two the server ran with; "reduce" ends a flag's name,
    # it is no verb asking for a smaller value
    fixes = own_remedy(
        "--disable-custom-all-reduce cannot be combined with --enable-deterministic-inference on "
        "ROCm when --tp-size is above 2: the all-reduce would run through RCCL"
    )
    assert [f.text for f in fixes] == [
        "leave out --disable-custom-all-reduce",
        "leave out --enable-deterministic-inference",
    ]
    together = own_remedy(
        "--enable-int8-mamba-checkpoint is not supported together with --enable-lmcache: "
        "LMCache is not int8-aware. Disable one of them."
    )
    assert [f.text for f in together] == [
        "leave out --enable-int8-mamba-checkpoint",
        "leave out --enable-lmcache",
    ]


def test_a_setting_the_message_calls_too_large_is_made_smaller() -> None:
    fixes = own_remedy(
        "The input size is not aligned with the quantized weight shape. This can be caused by "
        "too large tensor parallel size."
    )
    assert [(f.text, f.note) for f in fixes] == [
        ("--tensor-parallel-size N", "a smaller value, as the message says")
    ]


def test_the_value_a_setting_falls_short_of_is_the_value_to_raise_it_to() -> None:
    # vLLM 0.8.5 to 0.34's encoder cache (v1/core/encoder_cache_manager.py): one image item
    # must fit a batch where chunked multimodal input is off (Gemma 3 and 4)
    message = next(
        t.text
        for t in catalogue.templates("vllm")
        if t.text.startswith("Chunked MM input disabled but max_tokens_per_mm_item")
    )
    line = message.replace("{max_tokens_per_mm_item}", "2496").replace(
        "{scheduler_config.max_num_batched_tokens}", "2048"
    )
    found = diagnose_text(f"ERROR 05-05 10:00:00 [core.py:700] ValueError: {line}")
    assert found.template is not None
    assert found.template.file == "vllm/v1/core/encoder_cache_manager.py"
    assert [f.text for f in found.fixes] == ["--max-num-batched-tokens 2496"]


@pytest.mark.parametrize(
    ("head", "name", "fix"),
    [
        ("", "KeyeForConditionalGeneration", "pip install 'vllm==0.33.0'"),  # 0.34.0 dropped it
        (
            "INFO vLLM API server version 0.12.0\n",
            "Qwen3_5MoeForConditionalGeneration",
            "pip install 'vllm>=0.17.0'",
        ),
        ("", "NoSuchModelForCausalLM", None),
    ],
)
def test_a_vllm_release_is_named_for_an_architecture_only_from_the_registries_read(
    head: str, name: str, fix: str | None
) -> None:
    found = diagnose_text(
        f"{head}(EngineCore_DP0 pid=1) ValueError: Model architectures ['{name}'] are not "
        "supported for now."
    )
    assert [f.text for f in found.fixes if f.kind == "dependency"] == ([fix] if fix else [])


def test_a_class_later_releases_make_from_the_model_s_own_class_names_them() -> None:
    """vLLM from 0.10 makes ``XForSequenceClassification`` from the registry's ``XForCausalLM``
    by the suffix (``_SUFFIX_TO_DEFAULTS`` and the registry's conversion, read per release):
    "no release lists it" is not the answer there, the first release that converts is."""
    from patcher.advice.catalogue import feature_releases, version_key
    from patcher.engines.registries import architectures

    converting = sorted(
        feature_releases("vllm", "arch_suffix_converted", "ForSequenceClassification"),
        key=version_key,
    )
    registry = architectures("vllm")
    first = next(r for r in converting if "LlamaForCausalLM" in registry[version_key(r)[:3]])
    found = diagnose_text(
        "INFO 07-01 10:00:00 api_server.py:212] vLLM API server version 0.5.5\n"
        "ValueError: Model architectures ['LlamaForSequenceClassification'] are not supported "
        "for now."
    )
    assert [f.text for f in found.fixes if f.kind == "dependency"] == [
        f"pip install 'vllm>={first}'"
    ]
    assert "no vLLM release read" not in found.cause
    # a stem no registry has is not made by any release
    none = diagnose_text(
        "INFO 07-01 10:00:00 api_server.py:212] vLLM API server version 0.5.5\n"
        "ValueError: Model architectures ['NoSuchForSequenceClassification'] are not supported "
        "for now."
    )
    assert not [f for f in none.fixes if f.kind == "dependency"]


def test_the_registry_message_is_read_as_the_engine_whose_log_it_is() -> None:
    """vLLM's and SGLang's registries raise the same words: a vLLM release is offered as the
    fix only in a vLLM log. A log that does not say tells by the supported list it prints."""
    bare = diagnose_text(
        "ValueError: Model architectures ['KeyeForConditionalGeneration'] are not supported "
        "for now."
    )
    assert not [f for f in bare.fixes if f.kind == "dependency"], bare.fixes
    assert any(f.text.startswith("if this is vLLM: pip install") for f in bare.fixes)
    # SGLang 0.5.x's registry lists its own classes (its MTP draft heads, Janus), no vLLM's
    sglang = diagnose_text(
        "ValueError: Model architectures ['Glm4ForCausalLM'] are not supported for now. "
        "Supported architectures: dict_keys(['DeepseekV3ForCausalLMNextN', "
        "'MultiModalityCausalLM', 'LlamaForCausalLM'])"
    )
    assert "SGLang" in sglang.cause and not any("vllm" in f.text for f in sglang.fixes)
    # SGLang 0.4.10 is the first release read that lists Glm4ForCausalLM (0.4.6 did not)
    assert [f.text for f in sglang.fixes if f.kind == "dependency"] == [
        "pip install 'sglang>=0.4.10'"
    ]
    unknown = diagnose_text(
        "[2026-01-02 10:00:00 TP0] Scheduler hit an exception: ValueError: Model architectures "
        "['NoSuchModelForCausalLM'] are not supported for now."
    )
    assert "no SGLang release read" in unknown.cause
    assert not [f for f in unknown.fixes if f.kind == "dependency"]
    # an SGLang log whose class failed to import: the import, not the checkpoint
    failed = diagnose_text(
        "[2026-01-02 10:00:00 TP0] Ignore import error when loading "
        "sglang.srt.models.glm4: No module named 'triton'\n"
        "ValueError: Model architectures ['Glm4ForCausalLM'] are not supported for now."
    )
    assert "could not import" in failed.cause and all(f.kind == "advice" for f in failed.fixes)


def test_the_release_that_stopped_raising_a_message_is_read_from_the_catalogue() -> None:
    # transformers' llama config raised it from 4.40.0 (the first read) to 4.42.0; other
    # models' config classes kept the same words longer
    llama = "transformers/models/llama/configuration_llama.py"
    said = "`rope_scaling` must be a dictionary with two fields"
    assert catalogue.no_longer_raised("transformers", said, llama) == "4.43.0"
    assert catalogue.stopped_by_model(said)["llama"] == "4.43.0"
    anywhere = catalogue.no_longer_raised("transformers", said)
    assert anywhere is not None and anywhere == max(
        catalogue.stopped_by_model(said).values(), key=catalogue._key
    )
    assert catalogue.no_longer_raised("vllm", "Total number of attention heads") is None


def test_a_hostile_line_of_a_message_s_pieces_costs_linear_scans() -> None:
    # Each piece of a many-hole message repeated, never completed: a backtracking pattern
    # took minutes on one such line (nested lazy holes); the scan finds each piece in turn.
    import time

    template = max((t for t in catalogue.templates() if t.matchable), key=lambda t: len(t.holes()))
    pieces = [p for p in template.head[::2] if p.strip()]
    lines = []
    for k in range(1, len(pieces)):
        line = "ValueError: " + " x ".join(pieces[:k]) + " "
        lines.append((line * (8000 // len(line)))[:8190])
    started = time.perf_counter()
    for line in lines * 20:
        diagnose_text(line)
    assert time.perf_counter() - started < 5


def test_a_divisibility_assert_with_a_bare_numbers_message_is_read_from_its_source_line() -> None:
    log = "\n".join(
        [
            "[2026-12-04 10:00:00 TP6] Scheduler hit an exception: Traceback (most recent call "
            "last):",
            '  File "/x/sglang/srt/distributed/utils.py", line 20, in ensure_divisibility',
            '    assert numerator % denominator == 0, "{} is not divisible by {}".format(',
            "AssertionError: 12 is not divisible by 24",
        ]
    )
    found = diagnose_text(log)
    # 12 split 24 ways: the largest power of two below 24 that divides 12, the others named
    assert found.code == "parallel-sizes" and found.fixes[0].text == "--tp-size 4"
    assert "also 12, 6, 3, 2, 1" in (found.fixes[0].note or "")
    # the same message in a log that shows no engine (a line pasted alone) is either engine's
    # ensure_divisibility: both read releases have it, and the flag is named for both
    other = diagnose_text(
        "Traceback (most recent call last):\nAssertionError: 12 is not divisible by 24"
    )
    assert other.code == "parallel-sizes" and other.fixes[0].text == "--tensor-parallel-size 4"
    assert "SGLang: --tp-size" in (other.fixes[0].note or "")
    # a message no read release has in that file is not read as it
    assert not diagnose_text("AssertionError: 12 is not divisible by a tile of 24").recognised


@pytest.mark.parametrize(
    ("ran_with", "fix"),
    [(None, "--mem-fraction-static 0.92"), ("0.95", "something else holds the GPU's memory")],
)
def test_sglang_s_free_memory_before_the_load_is_read_from_the_end_line_alone(
    ran_with: str | None, fix: str
) -> None:
    # SGLang's "Load weight end" line prints the free memory after the load and "mem usage",
    # which its model_runner computes as free-before minus free-after: 21.73 + 166.59 GB were
    # free before. The fraction must pass 1 - 21.73/188.32 = 0.885; a run that already had
    # more than that is told so, not given a smaller fraction.
    lines = [
        "[2026-12-04 10:00:30 DP0 TP0] Load weight end. type=DeepseekV3ForCausalLM, "
        "dtype=torch.bfloat16, avail mem=21.73 GB, mem usage=166.59 GB.",
        "[2026-12-04 10:00:31 DP0 TP0] max_total_tokens=131072 is larger than the profiled value "
        "-561981. Use the profiled value instead.",
    ]
    if ran_with is not None:
        lines.insert(
            0, f"[2026-12-04 10:00:00] server_args=ServerArgs(mem_fraction_static={ran_with})"
        )
    found = diagnose_text("\n".join(lines))
    assert found.code == "no-kv-cache-memory"
    assert fix in found.fixes[0].text
    flags = [f for f in found.fixes if f.kind == "flag" and "--mem-fraction-static" in f.text]
    assert (flags == []) is (ran_with is not None)


def test_an_architecture_the_engine_lists_but_could_not_load_is_no_config_fix() -> None:
    # vLLM's registry logs "Error in inspecting model architecture '...'" when the class's
    # import fails in its subprocess, and then refuses the architecture although its own
    # supported list names it: the environment, not the checkpoint.
    inspecting = diagnose_text(
        "ERROR 12-04 10:00:00 [registry.py:424] Error in inspecting model architecture "
        "'LlamaForCausalLM'\nTraceback (most recent call last):\n"
    )
    assert inspecting.code == "model-class-load"
    listed = diagnose_text(
        "ValueError: Model architectures ['LlamaForCausalLM'] are not supported for now. "
        "Supported architectures: ['AquilaModel', 'LlamaForCausalLM', 'MistralForCausalLM']"
    )
    missing = diagnose_text(
        "ValueError: Model architectures ['Qwen3ForCausalLM'] are not supported for now. "
        "Supported architectures: ['AquilaModel', 'LlamaForCausalLM', 'MistralForCausalLM']"
    )
    for found in (inspecting, listed):
        assert "failed to import" in found.cause
        assert all(f.kind == "advice" for f in found.fixes), found.fixes
    assert any(f.kind == "dependency" and "vllm>=" in f.text for f in missing.fixes)


def test_a_doubled_size_outside_a_weight_loader_gets_no_exclude_list_edit() -> None:
    # 2x is FP4's packing only where weights are being loaded; the same numbers in a
    # wrapper's own tensors (an expert mask built for every expert, say) are no config edit.
    alone = diagnose_text(
        "RuntimeError: The size of tensor a (192) must match the size of tensor b (384) at "
        "non-singleton dimension 0"
    )
    assert not any(f.kind == "transform" for f in alone.fixes)
    loading = diagnose_text(
        '  File "/x/vllm/model_executor/models/deepseek_v2.py", line 9, in load_weights\n'
        "RuntimeError: The size of tensor a (192) must match the size of tensor b (384) at "
        "non-singleton dimension 0"
    )
    assert any("add-quant-exclude-modules" in f.text for f in loading.fixes)


def test_sglang_s_expert_parallel_size_for_a_block_slice_is_the_tp_size() -> None:
    # SGLang's MoE slice is intermediate / (tp / ep); ep must divide tp, so a fixed number
    # could be refused: the answer is --ep-size equal to the user's --tp-size.
    found = diagnose_text(
        "[2026-12-04 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call "
        "last):\nValueError: The output_size of gate's and up's weight = 160 is not divisible "
        "by weight quantization block_n = 128."
    )
    ep = [f for f in found.fixes if f.text.startswith("--ep-size")]
    assert ep and ep[0].text == "--ep-size N" and "N = your --tp-size" in (ep[0].note or "")


def test_a_linear_layer_s_block_slice_is_never_answered_with_expert_parallel() -> None:
    # fp8.py's Fp8LinearMethod (validate_block_quant_shapes) splits a linear layer by TP alone,
    # a shared expert's MLP among them: expert parallel leaves its slice as it is. The TP that
    # leaves whole blocks is computed from the slice and the command line's TP size.
    line = (
        "ValueError: Weight output_partition_size = 320 is not divisible by weight "
        "quantization block_n = 128."
    )
    unsized = diagnose_text(line)
    assert unsized.code == "parallel-sizes"
    assert not any("expert" in f.text or "--ep-size" in f.text for f in unsized.fixes)
    assert "your --tensor-parallel-size / 2" in (unsized.fixes[0].note or "")
    sized = diagnose_text(
        "[2026-12-04 10:00:00] server_args=ServerArgs(model_path='/m', tp_size=4, ep_size=4)\n"
        f"[2026-12-04 10:00:09 TP0] {line}"
    )
    texts = [f.text for f in sized.fixes]
    assert texts[:2] == ["--tp-size 2 --pp-size 2", "--tp-size 2"], texts  # SGLang's flags
    assert not any("--ep-size" in t for t in texts)


@pytest.mark.parametrize(
    ("tp", "part", "first"),
    [
        # 64 a GPU at TP 8: TP 4 leaves 128, a whole block, and two stages keep the 8 GPUs
        (8, 64, "--tensor-parallel-size 4 --pipeline-parallel-size 2"),
        # 80 at TP 8 (640 in all): only one GPU a stage holds whole blocks; whole experts are
        # the lighter change, so expert parallel comes first
        (8, 80, "--enable-expert-parallel"),
        # 192 at TP 16 (3072): TP 8 leaves 384
        (16, 192, "--tensor-parallel-size 8 --pipeline-parallel-size 2"),
    ],
)
def test_a_routed_expert_s_block_slice_gets_the_tp_that_divides_and_expert_parallel(
    tp: int, part: int, first: str
) -> None:
    found = diagnose_text(
        f"(APIServer pid=1) INFO 12-04 10:00:00 [utils.py:233] non-default args: {{'model_tag':"
        f" '/m', 'tensor_parallel_size': {tp}}}\n(Worker_TP0 pid=9) ValueError: The output_size"
        f" of gate's and up's weight = {part} is not divisible by weight quantization block_n ="
        " 128."
    )
    assert found.fixes[0].text == first, [f.text for f in found.fixes]
    expert = next(f for f in found.fixes if f.text == "--enable-expert-parallel")
    assert "shared expert" in (expert.note or "")
    for fix in found.fixes:  # every TP offered leaves whole blocks of the same weight
        sizes = re.findall(r"--tensor-parallel-size (\d+)", fix.text)
        if sizes:
            assert (part * tp // int(sizes[0])) % 128 == 0 or sizes[0] == "1"


def test_a_forced_backend_refusing_the_command_line_s_kv_dtype_gets_the_flag_and_release() -> None:
    # vLLM 0.14's TRITON_MLA lists only "auto" (snapshots/engines/mla-backends-vllm.json):
    # --kv-cache-dtype bfloat16 is refused there and accepted from 0.15.0.
    found = diagnose_text(
        "(APIServer pid=1) INFO 12-04 10:00:00 [utils.py:263] non-default args: {'model_tag': "
        "'/m', 'kv_cache_dtype': 'bfloat16', 'attention_backend': 'TRITON_MLA'}\n"
        "ValueError: Selected backend AttentionBackendEnum.TRITON_MLA is not valid for this "
        "configuration. Reason: ['kv_cache_dtype not supported']"
    )
    texts = [f.text for f in found.fixes]
    assert texts == ["--kv-cache-dtype auto", "pip install 'vllm>=0.15.0'"], texts
    plain = diagnose_text(
        "ValueError: Selected backend AttentionBackendEnum.TRITON_MLA is not valid for this "
        "configuration. Reason: ['kv_cache_dtype not supported']"
    )
    assert any("strip-fp8-kv-cache" in f.text for f in plain.fixes)


def test_flashinfer_moe_kernels_chosen_by_environment_are_answered_there() -> None:
    # vLLM 0.10 to 0.2x: VLLM_USE_FLASHINFER_MOE_FP8 (envs.py) picks FlashInfer's MoE; the
    # per-tensor FP8 path asserts Llama 4's routing (flashinfer_utils.py).
    found = diagnose_text(
        "(VllmWorker TP0 pid=1) ERROR 12-04 10:00:00 [multiproc_executor.py:574] "
        "AssertionError: FusedMoE flashinfer kernels are only supported for Llama4"
    )
    assert found.fixes[0].kind == "env"
    assert "VLLM_USE_FLASHINFER_MOE_FP8" in found.fixes[0].text
    assert not any(f.text == "drop --moe-backend" for f in found.fixes)


def test_a_sparse_backend_that_refuses_only_the_kv_dtype_gets_the_model_s_dtype() -> None:
    # The selector's reasons say the one sparse backend refuses the KV dtype and nothing else
    # (its compute capability is fine): a KV cache in the model's dtype starts; where another
    # reason stands beside it, it is a kernel gap (the test above).
    found = diagnose_text(
        "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig("
        "head_size=576, dtype=torch.bfloat16, kv_cache_dtype=fp8_e4m3, block_size=64, "
        "use_mla=True, has_sink=False, use_sparse=True). Reasons: {FLASHMLA_SPARSE: "
        "[kv_cache_dtype not supported]}."
    )
    assert found.fixes[0].text == "--kv-cache-dtype bfloat16"
    gap = diagnose_text(
        "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig("
        "head_size=576, dtype=torch.bfloat16, kv_cache_dtype=fp8_e4m3, block_size=64, "
        "use_mla=True, has_sink=False, use_sparse=True). Reasons: {FLASHMLA_SPARSE: "
        "[kv_cache_dtype not supported, compute capability not supported]}."
    )
    assert all(f.kind == "advice" for f in gap.fixes) and "no config edit" in gap.cause


def test_a_message_cut_inside_is_read_to_the_cut_and_the_rest_of_its_words() -> None:
    """vLLM's SchedulerConfig check (config/scheduler.py, 0.10 to 0.34) wrapped by pydantic,
    the message broken over lines after its first sentence: the line is read as far as it
    goes, the way out comes from the source's own words (increase the one, decrease the
    other), and each flag gets the value the message names."""
    found = diagnose_text(
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig\n"
        "  Value error, max_num_batched_tokens (4096) is smaller than max_model_len (65536).\n"
        "  This effectively limits the maximum sequence length to max_num_batched_tokens and\n"
    )
    assert found.code == "context-length", found
    assert [(f.kind, f.text) for f in found.fixes] == [
        ("flag", "--max-num-batched-tokens 65536"),
        ("flag", "--max-model-len 4096"),
    ]
    assert catalogue.match("max_num_batched_tokens (4096) is smaller") is None  # too little


@pytest.mark.parametrize(
    ("version", "fix"),
    [
        ("0.22.0", "pip install 'vllm>=0.23.0'"),  # its ModelOpt never quantizes the LM head
        ("0.34.0", "remove-quant-exclude-modules --set 'pattern=lm_head*'"),
    ],
)
def test_a_quantized_lm_head_is_answered_by_what_the_release_loads(version: str, fix: str) -> None:
    """ModelOpt's get_quant_method gives the LM head a quantized method from 0.23.0 on (read
    from each wheel's modelopt.py); before, the head loads unquantized whatever the exclude
    list says, so no config edit loads its scales."""
    found = diagnose_text(
        f"INFO vLLM API server version {version}\n"
        "ValueError: There is no module or parameter named 'lm_head.input_scale' in "
        "Qwen3ForCausalLM.\n"
    )
    assert found.code == "excluded-quantized-module"
    assert [f.text for f in found.fixes if fix in f.text] and len(found.fixes) == 1, found.fixes
    bare = diagnose_text(
        "ValueError: There is no module or parameter named 'lm_head.input_scale' in "
        "Qwen3ForCausalLM.\n"
    )
    assert [f.kind for f in bare.fixes] == ["dependency", "advice"]  # each with its condition


def test_one_message_whose_holes_the_source_renamed_is_raised_by_every_release_of_either() -> None:
    """vLLM's SchedulerConfig check names its hole ``self.max_model_len`` up to 0.11 and
    ``max_model_len`` after: the same words, so a line of it is raised by every release read,
    not only by those of the spelling that happened to match."""
    found = catalogue.match(
        "Value error, max_num_batched_tokens (8192) is smaller than max_model_len (32768). "
        "This effectively limits the maximum sequence length to max_num_batched_tokens and "
        "makes vLLM reject longer sequences. Please increase max_num_batched_tokens or "
        "decrease max_model_len.",
        "vllm",
    )
    assert found is not None
    assert found.template.releases == tuple(catalogue.releases("vllm"))


def _raised(phrase: str, seed: int = 0) -> str:
    """A log line from the read template whose text holds ``phrase``, as its engine logs it."""
    from tools.audit_answers import log_line

    return log_line(next(t for t in catalogue.templates() if phrase in t.text), seed)


@pytest.mark.parametrize(
    ("phrase", "fix"),
    [
        # the message names the flag and value it needs: that is the answer, alone (never a
        # strip of the FP8 directive beside "requires fp8", nor a tokenizer class edit)
        ("requires --kv-cache-dtype fp8_e4m3", "--kv-cache-dtype fp8_e4m3"),
        ("This model requires `--tokenizer-mode mistral`", "--tokenizer-mode mistral"),
    ],
)
def test_a_message_that_names_what_it_requires_gets_that_alone(phrase: str, fix: str) -> None:
    found = diagnose_text(_raised(phrase))
    assert [f.text for f in found.fixes] == [fix]


def test_a_memory_message_that_is_no_shortage_gets_no_memory_size() -> None:
    # kv-cache-memory claims it by its words, but it names a mode, not too little memory
    found = diagnose_text(_raised("is a HiCache-only mode"))
    assert found.code == "kv-cache-memory"
    assert not any(
        w in f.text
        for f in found.fixes
        for w in ("--mem-fraction-static", "--context-length", "--max-model-len", "utilization")
    )


def test_a_parallel_mode_refused_outright_gets_no_parallel_size() -> None:
    found = diagnose_text(_raised("does not support prefill context parallelism"))
    assert found.code == "parallel-sizes"
    assert not any("-parallel-size" in f.text or "--tp-size" in f.text for f in found.fixes)


def test_a_rope_field_s_value_is_set_in_the_config_not_answered_by_an_upgrade() -> None:
    # transformers' rope validation of one field: the config's value, read by any release
    found = diagnose_text(_raised("attention_factor field must be a float greater than 0"))
    texts = [f.text for f in found.fixes]
    assert "patcher set CKPT config.json /rope_scaling/attention_factor VALUE" in texts
    assert not any("pip install" in t for t in texts)


def test_a_model_property_the_message_requires_is_no_package_and_no_flag() -> None:
    # vLLM's "fp8_ds_mla requires kv_lora_rank == 512": the model's own size, which no pip
    # install sets and no flag of either engine names (catalogue.flags, read from messages)
    found = diagnose_text(_raised("fp8_ds_mla requires kv_lora_rank == 512"))
    assert not any("pip install" in f.text or "--kv-lora-rank" in f.text for f in found.fixes)


def test_a_setting_the_message_requires_is_told_as_the_flag_the_engine_names() -> None:
    found = diagnose_text(_raised("requires kv_cache_dtype=fp8_e4m3"))
    assert found.fixes[0].text == "--kv-cache-dtype fp8_e4m3"


def test_a_limit_below_the_value_it_must_hold_is_raised_to_that_value() -> None:
    # vLLM's peft_helper gathers its refusals in a list and raises them joined; the reading
    # takes each appended message (tools/read_errors.py), and the flag is the limit's own
    template = next(t for t in catalogue.templates() if "greater than max_lora_rank" in t.text)
    values = iter(("64", "16"))
    line = "".join(p if i % 2 == 0 else next(values) for i, p in enumerate(template.head))
    found = diagnose_text(
        f"(EngineCore_DP0 pid=1) ERROR 12-04 10:00:00 [core.py:1] ValueError: {line}"
    )
    assert found.fixes[0].text == "--max-lora-rank 64"


def test_the_recorder_reads_each_message_gathered_in_a_list_and_raised_joined() -> None:
    from tools.read_messages import templates_in

    source = (
        "def validate(self, config):\n"
        "    errors = self._features()\n"
        "    if self.r > config.max_rank:\n"
        "        errors.append(f'rank {self.r} is above {config.max_rank}.')\n"
        "    if self.bias:\n"
        "        errors.append('bias is not supported.')\n"
        "    if errors:\n"
        "        raise ValueError(f\"{' '.join(errors)}\")\n"
    )
    found = [(t["exception"], t["parts"]) for t in templates_in(source, "x.py")]
    assert found == [
        ("ValueError", ["rank ", "self.r", " is above ", "config.max_rank", "."]),
        ("ValueError", ["bias is not supported."]),
    ]


def test_releases_before_0_10_are_read_and_named_in_order() -> None:
    # vLLM's V0 releases (0.4.3 to 0.9.2) are read into the catalogue like the rest, so a log
    # from one is answered from its own words; the releases are listed oldest first.
    read = list(catalogue.releases("vllm"))
    assert {"0.4.3", "0.5.5", "0.6.6.post1", "0.7.3", "0.8.5.post1", "0.9.2"} <= set(read)
    assert read == sorted(read, key=lambda v: tuple(int(p) for p in v.split(".")[:3]))


def test_a_pipeline_refusal_puts_the_same_gpus_in_tensor_parallel() -> None:
    # vLLM 0.5's architecture list and the SupportsPP wording after it: no pipeline-parallel
    # path for the class. The TP size is the GPUs the command line gave (TP x PP).
    for phrase in (
        "Pipeline parallelism is only supported for the following",
        "Pipeline parallelism is not supported for this model",
    ):
        line = _raised(phrase)
        args = (
            "(APIServer pid=1) INFO 12-04 10:00:00 [utils.py:1] non-default args: "
            "{'model': 'm', 'tensor_parallel_size': 4, 'pipeline_parallel_size': 2}\n"
        )
        found = diagnose_text(args + line)
        assert found.code == "parallel-sizes", phrase
        assert found.fixes[0].text == "--tensor-parallel-size 8 --pipeline-parallel-size 1"
        bare = diagnose_text(line)
        assert bare.fixes[0].text == "--tensor-parallel-size N --pipeline-parallel-size 1"


def test_the_one_quantization_a_load_format_accepts_is_the_flag() -> None:
    # vLLM 0.5 to 0.7 (arg_utils.py): the BitsAndBytes load format with no --quantization
    found = diagnose_text(_raised("only support 'bitsandbytes' quantization, but got"))
    assert found.fixes[0].text == "--quantization bitsandbytes"


@pytest.mark.parametrize(
    "phrase",
    [
        "does not support BitsAndBytes quantization yet. No 'packed_modules_mapping'",
        "Transformers modeling backend does not support MXFP4 quantization yet",
    ],
)
def test_a_model_class_without_a_methods_path_is_no_config_fix(phrase: str) -> None:
    # the class lacks the mapping the method's loader needs: no quantization_config edit helps
    found = diagnose_text(_raised(phrase))
    assert found.code == "model-feature-gap"
    assert found.family is not None and found.family.answer == "none"
    assert not any("quantization_config" in f.text for f in found.fixes)


def test_scaling_factors_a_model_cannot_load_are_left_out_not_the_fp8_cache() -> None:
    # SGLang (model_runner.py to 0.5.15, load_model_utils.py after): RuntimeError with two
    # arguments, printed as a tuple. The FP8 cache is not refused: no strip of the directive.
    found = diagnose_text(_raised("does not support loading scaling factors", seed=3))
    texts = [f.text for f in found.fixes]
    assert texts[0] == "leave out --quantization-param-path"
    assert not any("strip-fp8-kv-cache" in t for t in texts)


def test_the_attention_backends_own_refusals_are_read() -> None:
    # vLLM's backends (v1/attention/backends/*.py) refuse head sizes themselves, and name the
    # backend that takes every size: the engine's own remedy
    found = diagnose_text(_raised("to use FlexAttention backend which supports all head sizes"))
    assert found.recognised
    assert any(f.kind == "env" and "VLLM_ATTENTION_BACKEND=" in f.text for f in found.fixes)


def test_custom_code_refused_by_transformers_gets_trust_remote_code() -> None:
    # transformers' dynamic_module_utils.py: a repository with auto_map, loaded without
    # trust_remote_code (the wording of 4.40 to 4.51)
    found = diagnose_text(_raised("requires you to execute the configuration file in that repo"))
    assert found.code == "remote-code"
    assert "--trust-remote-code" in [f.text for f in found.fixes]


def test_a_switch_the_engine_refuses_is_left_out() -> None:
    # vLLM's ModelConfig: "Disabling sliding window is not supported for models with
    # rope_scaling": the switch is --disable-sliding-window (a flag its messages name)
    found = diagnose_text(_raised("Disabling sliding window is not supported for models"))
    assert found.fixes[0].text == "leave out --disable-sliding-window"
    assert "switch" in found.cause


def test_a_backend_lacking_a_model_feature_is_the_backends_not_a_length() -> None:
    # "FlexAttention does not support sliding window yet": forced, or the one backend left
    found = diagnose_text(_raised("FlexAttention does not support sliding window"))
    assert found.code == "attention-backend"
    texts = [f.text for f in found.fixes]
    assert not any("--max-model-len" in t for t in texts)
    assert any(t.startswith("else no config fix") for t in texts)


@pytest.mark.parametrize(
    ("phrase", "name", "feature"),
    [
        ("does not support LoRA, but LoRA is enabled", "GemmaForCausalLM", "lora"),
        ("does not support BitsAndBytes quantization yet.", "Qwen2ForCausalLM", "bnb"),
    ],
)
def test_a_class_without_a_feature_gets_the_first_release_whose_class_has_it(
    phrase: str, name: str, feature: str
) -> None:
    # tools/read_model_classes.py marks each release's classes (SupportsLoRA, the BitsAndBytes
    # mapping the loader looks for); the message names the class
    template = next(t for t in catalogue.templates("vllm") if phrase in t.text)
    line = template.head[0] + name + template.head[2] if len(template.head) > 2 else ""
    found = diagnose_text(f"ValueError: {line}\n")
    span = catalogue.feature_span("vllm", feature, name)
    having = catalogue.feature_releases("vllm", feature, name)
    assert span is not None and span[0] in having
    assert span[1] is None or span[1] not in having
    assert found.code == "model-feature-gap"
    assert found.fixes[0].kind == "dependency"
    assert found.fixes[0].text.startswith(f"pip install 'vllm>={span[0]}")


def test_a_gguf_architecture_the_loader_does_not_map_is_no_config_fix() -> None:
    found = diagnose_text(_raised("GGUF model with architecture"))
    assert found.code == "model-feature-gap"
    assert all(f.kind == "advice" for f in found.fixes)


def test_a_setting_the_message_bounds_is_its_flag_at_the_bound() -> None:
    # vLLM's Mamba cache check: "Please lower max_num_seqs to at most 856": max_num_seqs is an
    # EngineArgs field of the releases that raise it, so a flag, at the bound the line gives
    line = (
        "ValueError: max_num_seqs (1024) exceeds available Mamba cache blocks (856). Each decode "
        "sequence requires one Mamba cache block, so CUDA graph capture cannot proceed. Please "
        "lower max_num_seqs to at most 856 or increase gpu_memory_utilization.\n"
    )
    assert diagnose_text(line).fixes[0].text == "--max-num-seqs 856"


def test_a_setting_the_raising_releases_take_elsewhere_is_not_made_a_flag() -> None:
    # vLLM 0.20 on: "... or decrease num_speculative_tokens or max_num_seqs": num_speculative_
    # tokens lives in --speculative-config there (no EngineArgs field), max_num_seqs is a flag
    found = diagnose_text(_raised("does not allow any tokens to be scheduled"))
    texts = [f.text for f in found.fixes]
    assert "--num-speculative-tokens N" not in texts
    assert "--max-num-batched-tokens N" in texts


def test_the_one_value_a_setting_may_take_is_its_flag() -> None:
    # vLLM 0.6's SpeculativeConfig: the draft's TP may only be 1
    found = diagnose_text(
        "ValueError: speculative_draft_tensor_parallel_size=4 cannot be other value than 1\n"
    )
    assert found.fixes[0].text == "--speculative-draft-tensor-parallel-size 1"
    assert not any(f.text.startswith("--tensor-parallel-size") for f in found.fixes)
    assert "does not divide" not in found.cause


def test_a_model_type_the_engine_registers_twice_is_a_transformers_before_it() -> None:
    # configuration_auto.py's register(): the engine's own config for a model type that a
    # later transformers maps itself. Every such type read gives the release before it.
    first_read = next(iter(catalogue.releases("transformers")))
    later = {n: s for n, s in catalogue.model_types().items() if s[0] != first_read}
    template = next(t for t in catalogue.templates("transformers") if "already used by" in t.text)
    for name, (since, _last) in list(later.items())[:: max(1, len(later) // 20)]:
        line = template.text.replace("{key}", name).replace("{model_type}", name)
        found = diagnose_text(f"ValueError: {line}\n")
        assert found.code == "config-name-taken", line
        assert found.fixes[0].text == f"pip install 'transformers<{since}'"
    unknown = diagnose_text(_raised("already used by a Transformers config"))
    assert unknown.code == "config-name-taken"
    assert not any(f.kind == "dependency" for f in unknown.fixes)


def test_a_message_later_transformers_no_longer_raise_is_that_release() -> None:
    # configuration_llama.py's own RoPE check (the releases read before 4.43): a factor that
    # meets the message's bound is refused by the validator, not by its value
    template = next(
        t
        for t in catalogue.templates("transformers")
        if "factor field must be a float > 1" in t.text
    )
    later = catalogue.no_longer_raised("transformers", template.text)
    assert later is not None
    found = diagnose_text("ValueError: " + template.text.replace("{rope_scaling_factor}", "8.0"))
    texts = [f.text for f in found.fixes]
    assert f"pip install 'transformers>={later}'" in texts
    assert not any("/rope_scaling/factor" in t for t in texts)
    below = diagnose_text("ValueError: " + template.text.replace("{rope_scaling_factor}", "0.5"))
    assert any("/rope_scaling/factor" in f.text for f in below.fixes)


def test_a_slice_the_marlin_tile_does_not_divide_is_a_tp_that_leaves_whole_tiles() -> None:
    # marlin_utils.py: each GPU's slice of the input dimension a multiple of min_thread_k
    line = (
        "INFO 02-14 10:00:00 [utils.py:326] non-default args: {'tensor_parallel_size': 2}\n"
        "ValueError: Weight input_size_per_partition = 14784 is not divisible by min_thread_k = "
        "128. Consider reducing tensor_parallel_size or running with --quantization gptq.\n"
    )
    found = diagnose_text(line)
    assert found.code == "parallel-sizes"
    assert "--tensor-parallel-size 1" in [f.text for f in found.fixes]


def test_a_model_config_check_older_than_strict_validation_is_the_value_not_a_pin() -> None:
    # each model's config class (models/*/configuration_*.py): a check every release read
    # makes is answered by the value it names; a pin below the strict releases only where
    # the message is theirs alone
    since = catalogue.strict_since()
    assert since is not None
    from tools.audit_answers import log_line

    own = [
        t
        for t in catalogue.templates("transformers")
        if "/models/" in t.file and "/auto/" not in t.file
    ]
    old = [t for t in own if catalogue._key(t.releases[0]) < catalogue._key(since)]
    new = [t for t in own if catalogue._key(t.releases[0]) >= catalogue._key(since)]
    assert old and new
    for template in old[:: max(1, len(old) // 25)]:
        found = diagnose_text(log_line(template, 0))
        if found.code == "config-validation":
            assert not any("transformers<" in f.text for f in found.fixes), template.text
    pinned = [diagnose_text(log_line(t, 0)) for t in new[:: max(1, len(new) // 25)]]
    assert any(
        any(f"transformers<{since}" in f.text for f in d.fixes)
        for d in pinned
        if d.code == "config-validation"
    )


def test_a_switch_the_message_requires_is_the_bare_flag() -> None:
    found = diagnose_text(_raised("require numa_bind=True"))
    assert found.fixes[0].text == "--numa-bind"


def test_a_setting_held_to_a_bound_is_its_flag_never_a_package() -> None:
    # "requires data_parallel_size > 1": an EngineArgs field, so a flag with the bound; a
    # model's own property held the same way ("requires hc_count > 1") is the config's value
    found = diagnose_text(_raised("requires data_parallel_size > 1"))
    assert found.fixes[0].text == "--data-parallel-size N"
    for phrase in ("requires markov_rank > 0", "requires hc_count > 1"):
        answered = diagnose_text(_raised(phrase))
        assert not any(f.kind == "dependency" and "_" in f.text for f in answered.fixes), phrase


def test_a_vcs_address_to_install_is_kept_whole_and_a_size_is_no_package() -> None:
    found = diagnose_text(_raised("pip install git+https://github.com/TIGER-AI-Lab/Mantis.git"))
    assert "pip install git+https://github.com/TIGER-AI-Lab/Mantis.git" in [
        f.text for f in found.fixes
    ]
    for phrase in ("mm_mxfp8 requires K >=", "requires window >= 2 * PCP size"):
        answered = diagnose_text(_raised(phrase))
        assert answered.code != "dependency", phrase
        assert not any(f.kind == "dependency" for f in answered.fixes), phrase


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@pytest.mark.parametrize(
    "flag", ["--tool-call-parser", "--reasoning-parser", "--quantization", "--load-format"]
)
def test_a_value_a_flag_refuses_is_the_releases_whose_choices_hold_it(
    engine: catalogue.Engine, flag: str
) -> None:
    # a flag's values per release (add_argument's choices, the EngineArgs field's Literal
    # type, a parser registry's names): argparse's invalid choice gets the span of releases
    # read that take the value, and a value none takes gets no upgrade
    values = catalogue._features(engine)[f"choices:{flag}"]
    assert values, f"no {flag} values read for {engine}"
    banner = "server_args=ServerArgs(" if engine == "sglang" else "vLLM API server version 0.1.0"
    refused = f"{banner}\nerror: argument {flag}: invalid choice: '{{}}' (choose from 'x')\n"
    for value in list(values)[:: max(1, len(values) // 12)]:
        span = catalogue.feature_span(engine, f"choices:{flag}", value)
        assert span is not None
        found = diagnose_text(refused.format(value))
        assert found.code == "invalid-choice"
        bound = f">={span[0]}" + (f",<{span[1]}" if span[1] else "")
        assert found.fixes[0].text == f"pip install '{engine}{bound}'"
    unknown = diagnose_text(refused.format("zz"))
    assert not any(f.kind == "dependency" for f in unknown.fixes)


def test_a_flag_argparse_names_by_all_its_spellings_is_its_long_one() -> None:
    values = catalogue._features("vllm")["choices:--quantization"]
    value = next(iter(values))
    found = diagnose_text(
        "vLLM API server version 0.1.0\n"
        f"error: argument --quantization/-q: invalid choice: '{value}' (choose from 'x')\n"
    )
    assert found.fixes[0].kind == "dependency"
    assert "--quantization" in found.cause and " -q " not in found.cause


def _template_line(phrase: str, *values: str) -> str:
    """The first line of the read template whose text holds ``phrase``, its holes filled with
    ``values`` in order, as vLLM's engine core logs it."""
    template = next(t for t in catalogue.templates("vllm") if phrase in t.text)
    holes = iter(values)
    text = "".join(p if i % 2 == 0 else next(holes) for i, p in enumerate(template.parts))
    return f"{PREFIXES[0]}{template.exception}: {text}"


@pytest.mark.parametrize(
    ("method", "gpu", "fix"),
    [
        # fp8 asked 89 of the GPU in 0.4.3, 80 from 0.5.5 (the Marlin fallback), 75 from 0.14
        ("fp8", "86", "pip install 'vllm>=0.5.1'"),
        ("fp8", "75", "pip install 'vllm>=0.14.0'"),
        ("fp8", "70", None),  # no release read asks 7.0 or less: the GPU's limit
    ],
)
def test_a_gpu_a_release_refuses_a_method_gets_the_releases_that_ask_no_more(
    method: str, gpu: str, fix: str | None
) -> None:
    line = _template_line(
        "is not supported for the current GPU. Minimum capability", method, "90", gpu
    )
    found = diagnose_text(line)
    assert found.code == "quantization-gpu"
    dependencies = [f.text for f in found.fixes if f.kind == "dependency"]
    assert dependencies == ([fix] if fix else [])
    assert ("hardware limit" in found.cause) is (fix is None)


def test_the_recorder_reads_each_methods_capability_and_choices_defined_by_another_name(
    tmp_path: Path,
) -> None:
    from tools.read_model_classes import choices
    from tools.read_quantization import min_capabilities

    files = {
        "vllm/model_executor/layers/quantization/fp8.py": (
            "class Fp8Config:\n"
            "    def get_name(self):\n        return 'fp8'\n"
            "    def get_min_capability(self):\n        return 80\n"
            "class Computed:\n"  # a capability computed at run time is not known
            "    def get_name(self):\n        return 'mx'\n"
            "    def get_min_capability(self):\n        return 80 if X else 90\n"
        ),
        "vllm/model_executor/layers/quantization/__init__.py": (
            "QuantizationMethods = Literal['awq', 'fp8']\n"
            "QUANTIZATION_METHODS = list(get_args(QuantizationMethods))\n"
        ),
        "vllm/engine/arg_utils.py": (
            "class EngineArgs:\n    quantization: Optional[str] = None\n"
            "def add(parser):\n"
            "    parser.add_argument('--quantization', choices=[*QUANTIZATION_METHODS, None])\n"
        ),
    }
    with wheel_of(tmp_path / "vllm-9.9.9-py3-none-any.whl", files) as archive:
        assert min_capabilities(archive, "vllm") == {"min_capability:fp8": ["80"]}
        assert choices(archive, "vllm")["choices:--quantization"] == ["awq", "fp8"]


def test_the_recorder_reads_choices_a_function_defines_before_its_flag(tmp_path: Path) -> None:
    # SGLang 0.5.1 builds the attention backends' list inside add_cli_args itself
    from tools.read_model_classes import choices

    files = {
        "sglang/srt/server_args.py": (
            "class ServerArgs:\n    attention_backend: Optional[str] = None\n"
            "    @staticmethod\n    def add_cli_args(parser):\n"
            "        ATTN_BACKENDS = ['triton', 'flashinfer']\n"
            "        parser.add_argument('--attention-backend', choices=ATTN_BACKENDS)\n"
        ),
    }
    with wheel_of(tmp_path / "sglang-9.9.9-py3-none-any.whl", files) as archive:
        assert choices(archive, "sglang")["choices:--attention-backend"] == [
            "flashinfer",
            "triton",
        ]


def test_the_recorder_reads_the_gguf_architectures_transformers_maps(tmp_path: Path) -> None:
    from tools.read_model_classes import gguf_architectures

    mapping = "GGUF_CONFIG_MAPPING = {'general': {}, 'llama': {}, 'gemma2': {}, 'tokenizer': {}}\n"
    files = {"transformers/integrations/ggml.py": mapping}
    with wheel_of(tmp_path / "transformers-9.9.9-py3-none-any.whl", files) as archive:
        assert gguf_architectures(archive) == {"gguf": ["gemma2", "llama"]}


@pytest.mark.parametrize(
    ("line", "fix"),
    [
        # transformers before 4.48 worded it so; 4.48.0 is the first read that maps gemma2
        ("ValueError: Architecture gemma2 not supported", "pip install 'transformers>=4.48.0'"),
        # the loader normalises minimax-m2 to minimax_m2, mapped from 5.4.0 (read)
        (
            "ValueError: GGUF model with architecture minimax-m2 is not supported yet.",
            "pip install 'transformers>=5.4.0'",
        ),
        ("ValueError: GGUF model with architecture nosuch is not supported yet.", None),
    ],
)
def test_a_gguf_architecture_is_the_transformers_releases_whose_loader_maps_it(
    line: str, fix: str | None
) -> None:
    found = diagnose_text(f"INFO vLLM API server version 0.5.4\n{line}")
    dependencies = [f.text for f in found.fixes if f.kind == "dependency"]
    assert dependencies == ([fix] if fix else [])


_SELECTOR = (
    "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig("
    "head_size=128, dtype=torch.bfloat16, kv_cache_dtype=auto, block_size=8, use_mla=False, "
    "use_sparse=False). Reasons: {{FLASH_ATTN: [{a}], FLASHINFER: [{b}], TRITON_ATTN: [{c}]}}"
)


@pytest.mark.parametrize(
    ("reasons", "flag"),
    [
        (("block_size not supported",) * 3, "--block-size 16"),
        (("dtype not supported",) * 3, "--dtype bfloat16"),
        # each backend has its own reason: no one setting is the cause
        (("head_size not supported", "block_size not supported", "dtype not supported"), None),
    ],
)
def test_a_setting_every_attention_backend_refuses_is_that_setting(
    reasons: tuple[str, str, str], flag: str | None
) -> None:
    found = diagnose_text(_SELECTOR.format(a=reasons[0], b=reasons[1], c=reasons[2]))
    assert found.code == "no-attention-backend"
    flags = [f.text for f in found.fixes if f.kind == "flag"]
    assert flags == ([flag] if flag else [])
    assert not any("strip-fp8-kv-cache" in f.text for f in found.fixes)


@pytest.mark.parametrize(
    ("given", "fixes"),
    [
        # the e5m2 cache was already asked for: the e4m3 kernel came another way
        ("fp8_e5m2", ["--kv-cache-dtype auto"]),
        # the flag asked for e4m3: e5m2 is the answer; the directive (overridden) is not
        ("fp8", ["--kv-cache-dtype fp8_e5m2"]),
    ],
)
def test_fp8e4nv_is_answered_by_the_kv_dtype_the_command_line_gave(
    given: str, fixes: list[str]
) -> None:
    found = diagnose_text(
        f"$ vllm serve /m --tensor-parallel-size 2 --kv-cache-dtype {given}\n"
        '(Worker_TP0 pid=7) ERROR 10-11 16:19:02 [multiproc_executor.py:671] ValueError("type '
        "fp8e4nv not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', "
        "'fp8e5')\")"
    )
    assert [f.text for f in found.fixes if f.kind == "flag"] == fixes
    assert not any(f.kind == "transform" for f in found.fixes)


def test_gpus_per_node_not_a_multiple_of_tp_is_the_gpus_made_visible() -> None:
    found = diagnose_text(
        "INFO 08-12 22:35:15 [api_utils.py:273] non-default args: {'tensor_parallel_size': 2}\n"
        "ValueError: The number of GPUs per node is not divisible by the number of tensor "
        "parallelism."
    )
    assert found.code == "parallel-sizes"
    assert [f.text for f in found.fixes if f.kind == "env"] == ["CUDA_VISIBLE_DEVICES=0,1"]


def test_an_error_raised_under_a_runtime_whose_source_is_not_read_is_not_recognised() -> None:
    # SGLang's diffusion runtime builds a quantization config from nothing; the words match a
    # checkpoint-config message of the LLM runtime, which would blame the checkpoint
    found = diagnose_text(
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.12/site-packages/sglang/multimodal_gen/runtime/loader/'
        'transformer_load_utils.py", line 495, in _resolve_quant_config\n'
        "    return quant_cls.from_config({})\n"
        "ValueError: Cannot find any of ['quant_method'] in the model's quantization config."
    )
    assert not found.recognised
    assert "sglang/multimodal_gen" in found.cause
    assert found.fixes == ()


@pytest.mark.parametrize(
    ("phrase", "fixes"),
    [
        # what the message refuses is not what to set: the switch's other value, or the flag
        # left out (vLLM 0.8's _raise_or_fallback, SGLang's server_args checks)
        ("VLLM_USE_V1=1 is not supported with", ["VLLM_USE_V1=0"]),
        ("cannot be used with --headless", ["leave out --headless"]),
    ],
)
def test_a_value_or_flag_the_message_refuses_is_never_the_answer(
    phrase: str, fixes: list[str]
) -> None:
    found = diagnose_text(_raised(phrase))
    texts = [f.text for f in found.fixes]
    assert all(fix in texts for fix in fixes), texts
    assert "VLLM_USE_V1=1" not in texts and "--headless" not in texts


def test_the_other_half_of_a_refused_combination_is_unset_not_set() -> None:
    # vLLM 0.8's _raise_or_fallback: "VLLM_USE_V1=1 is not supported with
    # VLLM_ATTENTION_BACKEND=TRITON_ATTN_VLLM_V1." (vllm#15853): the backend variable is the
    # other half of what it refuses, so it is unset, never set to the value refused
    found = diagnose_text(
        "NotImplementedError: VLLM_USE_V1=1 is not supported with "
        "VLLM_ATTENTION_BACKEND=TRITON_ATTN_VLLM_V1.\n"
    )
    texts = [f.text for f in found.fixes if f.kind == "env"]
    assert texts == ["VLLM_USE_V1=0", "unset VLLM_ATTENTION_BACKEND"]
    # SGLang's "X=A is incompatible with Y=1.": neither value is set again
    found = diagnose_text(
        "[2026-12-04 10:00:00 TP0] ValueError: SGLANG_FLASHINFER_MEGAMOE_COMBINE_DTYPE=fp8 is "
        "incompatible with SGLANG_FLASHINFER_MEGAMOE_IN_KERNEL_FC2_REDUCE=1.\n"
    )
    assert all(f.text.startswith("unset ") for f in found.fixes if f.kind == "env")


def test_a_bare_assert_in_an_attention_backend_is_that_backend_on_this_gpu() -> None:
    # vLLM 0.7's V1 FlashAttention on a V100: no message, only the file; and the prefix of
    # vLLM before 0.8 ("core.py:210] ", the bracket only closing)
    found = diagnose_text(
        'ERROR 02-17 20:51:49 core.py:210]   File "/env/lib/python3.12/site-packages/vllm/v1/'
        'attention/backends/flash_attn.py", line 156, in __init__\n'
        "ERROR 02-17 20:51:49 core.py:210]     assert is_fa_version_supported(self.fa_version)\n"
        "ERROR 02-17 20:51:49 core.py:210] AssertionError\n"
    )
    assert found.code == "attention-backend"
    assert "flash_attn.py" in found.cause
    assert [f.text for f in found.fixes if f.kind == "env"] == ["VLLM_USE_V1=0"]


def test_a_package_the_release_has_a_switch_for_is_installed_or_switched_off() -> None:
    # vllm/utils/deep_gemm.py names the package; envs.py of the releases raising it reads
    # VLLM_USE_DEEP_GEMM; a worker's wrapper quotes only the first sentence of the message
    found = diagnose_text(
        "(EngineCore_DP0 pid=2001) ERROR 12-02 10:00:00 [core.py:842] RuntimeError: Worker "
        "failed with error 'DeepGEMM backend is not available or outdated.', please check the "
        "stack trace above for the root cause"
    )
    assert found.code == "dependency"
    assert [f.text for f in found.fixes if f.kind == "env"] == ["VLLM_USE_DEEP_GEMM=0"]
    assert any("deep_gemm" in f.text for f in found.fixes if f.kind == "advice")


def test_a_package_a_release_could_not_load_is_installed_once() -> None:
    # vLLM 0.5.0.post1's config.py: "Unable to load Ray which is required for multi-node
    # inference" (read from its wheel); later releases add "please install Ray with `pip
    # install ray`", whose own remedy is the same command, named once
    for words in ("", ", please install Ray with `pip install ray`."):
        found = diagnose_text(
            "INFO 07-01 10:00:00 api_server.py:1] vLLM API server version 0.5.0.post1\n"
            f"ValueError: Unable to load Ray which is required for multi-node inference{words}\n"
        )
        assert found.code == "dependency"
        assert [f.text for f in found.fixes] == ["pip install ray"]


def test_the_recorder_reads_the_environment_variables_a_release_reads(tmp_path: Path) -> None:
    from tools.read_model_classes import env_names

    envs = (
        "if TYPE_CHECKING:\n    VLLM_USE_DEEP_GEMM: bool = True\n"
        "environment_variables = {'VLLM_USE_DEEP_GEMM': lambda: 1, 'HOME': lambda: 2}\n"
    )
    with wheel_of(tmp_path / "vllm-9.9.9-py3-none-any.whl", {"vllm/envs.py": envs}) as archive:
        assert env_names(archive, "vllm") == {"env": ["VLLM_USE_DEEP_GEMM"]}


@pytest.mark.parametrize(
    "phrase",
    [
        "is less than than max local gpu count",  # vLLM 0.7's mp executor
        "is larger than the number of available GPUs",  # config/parallel.py
    ],
)
def test_more_gpus_asked_than_the_node_has_is_sizes_that_fit_or_ray(phrase: str) -> None:
    found = diagnose_text(_raised(phrase))
    assert found.code == "parallel-sizes"
    texts = [f.text for f in found.fixes]
    assert "--distributed-executor-backend ray" in texts
    assert not any(t.startswith("CUDA_VISIBLE_DEVICES") for t in texts)


@pytest.mark.parametrize(
    ("phrase", "fix"),
    [
        ("Please set prefill_context_parallel_size to 1", "--prefill-context-parallel-size 1"),
        ("Please enable dp attention when setting enable_dp_lm_head", "--enable-dp-attention"),
    ],
)
def test_a_setting_the_message_asks_for_in_words_is_its_flag(phrase: str, fix: str) -> None:
    found = diagnose_text(_raised(phrase))
    assert fix in [f.text for f in found.fixes]
    # no size to divide: never a generic tensor-parallel size
    assert not any(f.text.endswith(" N") for f in found.fixes)


def _sglang_template(fragment: str) -> Template:
    return next(t for t in catalogue.templates("sglang") if fragment in t.text)


def test_a_reasoning_parser_whose_think_token_is_not_one_token_is_left_out_or_changed() -> None:
    # SGLang 0.5.12 on (constrained/reasoner_grammar_backend.py), as the scheduler starts
    template = _sglang_template("must encode to exactly one token for constrained reasoning")
    found = diagnose_text(
        "$ python -m sglang.launch_server --model-path /m --reasoning-parser deepseek-v3\n"
        f"[2026-05-09 10:00:00] Scheduler hit an exception: {_log_line(template, 1)}\n"
    )
    assert found.code == "reasoning-parser"
    assert [f.text for f in found.fixes][0] == "leave out --reasoning-parser"


def test_a_requests_grammar_the_backend_refuses_is_no_setting_to_change() -> None:
    # outlines_backend.py: a request's regex; no flag or checkpoint edit changes a request
    template = _sglang_template("Hit invalid regex schema")
    found = diagnose_text(f"[2026-05-09 10:00:00] {_log_line(template, 2)}\n")
    assert found.code == "grammar-request"
    assert not any(f.kind in ("flag", "transform") for f in found.fixes)


@pytest.mark.parametrize(
    ("fragment", "first"),
    [
        # vLLM 0.9.2 on (vllm/reasoning/): the parser is built as the engine starts
        ("DeepSeek R1 reasoning parser could not locate think", "leave out --reasoning-parser"),
        ("The tokenizer must be an instance of MistralTokenizer", "--tokenizer-mode mistral"),
        # a name the release does not register: one of its own list
        ("Available parsers:", "--reasoning-parser NAME, a name of this release's own list"),
    ],
)
def test_vllms_reasoning_parser_refusing_the_model_is_the_parser_or_the_tokenizer(
    fragment: str, first: str
) -> None:
    template = next(t for t in catalogue.templates("vllm") if fragment in t.text)
    found = diagnose_text(
        "$ vllm serve /m --reasoning-parser deepseek_r1\n"
        f"(EngineCore_DP0 pid=7) ERROR 05-09 10:00:00 [core.py:708] {_log_line(template, 3)}\n"
    )
    assert found.code == "reasoning-parser"
    assert found.fixes[0].text == first


def test_the_recorder_reads_the_flags_a_releases_parser_defines(tmp_path: Path) -> None:
    from tools.read_model_classes import cli_flags

    files = {
        "vllm/engine/arg_utils.py": "class EngineArgs:\n    max_model_len: int = 0\n",
        "vllm/entrypoints/openai/cli_args.py": (
            "class FrontendArgs:\n    lora_modules: list = None\n"
            "def make_arg_parser(parser):\n"
            "    parser.add_argument('--host', type=str)\n"
            "    parser.add_argument('-tp', '--tensor-parallel-size', type=int)\n"
        ),
        # not serve's parser: the benchmarks', the chat client subcommand's
        "vllm/benchmarks/serve.py": "parser.add_argument('--request-rate')\n",
        "vllm/entrypoints/cli/openai.py": "parser.add_argument('--model-name')\n",
    }
    with wheel_of(tmp_path / "vllm-9.9.9-py3-none-any.whl", files) as archive:
        assert cli_flags(archive, "vllm") == {
            "flags": ["--host", "--lora-modules", "--max-model-len", "--tensor-parallel-size"]
        }


def test_a_quantization_config_class_the_message_names_is_its_method(tmp_path: Path) -> None:
    from tools.read_quantization import quantization_classes

    source = (
        "class ModelOptFp4Config:\n"
        "    @classmethod\n    def get_name(cls):\n        return 'modelopt_fp4'\n"
    )
    files = {"sglang/srt/layers/quantization/modelopt_quant.py": source}
    with wheel_of(tmp_path / "sglang-9.9.9-py3-none-any.whl", files) as archive:
        assert quantization_classes(archive, "sglang") == {
            "quant_class:ModelOptFp4Config": ["modelopt_fp4"]
        }
    # SGLang 0.5.1 to 0.5.17 (modelopt_quant.py): a FP4 checkpoint read as FP8
    found = diagnose_text(
        "[2025-12-01 10:00:00 TP0] Scheduler hit an exception: ValueError: ModelOptFp8Config "
        "only supports static FP8 quantization in SGLang. For FP4 quantization, use "
        "ModelOptFp4Config. Check the quantization config for your model's configuration.\n"
    )
    assert "--quantization modelopt_fp4" in [f.text for f in found.fixes]


@pytest.mark.parametrize(
    ("version", "architecture", "offered"),
    [
        ("0.11.0", "Glm4vMoeForConditionalGeneration", True),  # its class supports data mode
        ("0.10.1", "Glm4vMoeForConditionalGeneration", False),  # no --mm-encoder-tp-mode yet
        ("0.11.0", "LlamaForCausalLM", False),  # no vision encoder to replicate
    ],
)
def test_a_vision_encoder_s_heads_get_the_data_parallel_encoder_where_read(
    version: str, architecture: str, offered: bool
) -> None:
    log = (
        f"(APIServer pid=1) INFO 08-26 09:12:01 [api_server.py:1805] vLLM API server version "
        f"{version}\n"
        f"(APIServer pid=1) INFO 08-26 09:12:07 [model.py:547] Resolved architecture: "
        f"{architecture}\n"
        "(Worker_TP0 pid=2) ERROR 08-26 09:13:15 [multiproc_executor.py:559] AssertionError: 12 "
        "is not divisible by 8\n"
    )
    found = diagnose_text(log)
    assert found.code == "parallel-sizes"
    assert found.fixes[0].text == "--tensor-parallel-size 4"  # divides 12, and 8 KV heads
    assert any(f.text == "--mm-encoder-tp-mode data" for f in found.fixes) is offered


def test_a_class_flag_set_true_is_a_feature_of_the_classes_that_inherit_it(tmp_path: Path) -> None:
    from tools.read_model_classes import features

    source = (
        "class SupportsMultiModal:\n    supports_encoder_tp_data: ClassVar[bool] = False\n"
        "class Glm4vForConditionalGeneration(SupportsMultiModal):\n"
        "    supports_encoder_tp_data = True\n"
        "class Glm4vMoeForConditionalGeneration(Glm4vForConditionalGeneration):\n    pass\n"
        "class LlavaForConditionalGeneration(SupportsMultiModal):\n    pass\n"
    )
    wheel = tmp_path / "vllm-9.9.9-cp38-abi3-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("vllm/model_executor/models/glm4_1v.py", source)
    with zipfile.ZipFile(wheel) as archive:
        assert features(archive)["encoder_tp_data"] == [
            "Glm4vForConditionalGeneration",
            "Glm4vMoeForConditionalGeneration",
        ]


def test_vllm_s_own_config_readers_are_read_with_the_start_up_files() -> None:
    # get_config builds the model's config with vLLM's config classes and its Mistral-format
    # reader (transformers_utils/configs/), 0.10.1 on: their refusals are start-up errors
    from patcher.advice import catalogue as cat

    found = cat.match("Found unknown quantization='{'quant_method': 'x'}' in config", "vllm")
    assert found is not None
    assert {"0.15.0", "0.34.0"} <= set(found.template.releases)
    from tools.read_errors import START_UP

    assert "vllm/transformers_utils/configs/*.py" in START_UP["vllm"]
