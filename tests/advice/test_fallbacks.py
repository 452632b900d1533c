"""doctor's readings of an error outside the catalogue (patcher/advice/fallbacks.py): a
``TypeError`` over ``None`` in a settings file's own check is that setting left unset."""

from __future__ import annotations

import pytest

from patcher.advice.catalogue import ROPE_TYPE_KEY_ONLY, feature_releases, version_key
from patcher.advice.doctor import diagnose_text

# The source line is vLLM 0.34.0's config/speculative.py (line 1817): its check of the
# speculative tokens against the MTP modules, reached before num_speculative_tokens defaults.
_SPECULATIVE = (
    '$ vllm serve /m --speculative-config \'{"method": "mtp"}\'\n'
    "(APIServer pid=1) INFO 09-04 10:00:00 [api_server.py:1839] vLLM API server version 0.34.0\n"
    '(APIServer pid=1)   File "/env/lib/python3.12/site-packages/vllm/config/speculative.py", '
    "line 1817, in __post_init__\n"
    "(APIServer pid=1)     if min(self.num_mtp_modules(), self.num_speculative_tokens) <= 1:\n"
    "(APIServer pid=1) TypeError: '<' not supported between instances of 'NoneType' and 'int'\n"
)


def test_a_setting_a_config_check_reads_unset_is_given_in_its_json_flag() -> None:
    found = diagnose_text(_SPECULATIVE)
    assert found.code == "engine-flags"
    assert "num_speculative_tokens was left unset" in found.cause
    assert [f.text for f in found.fixes] == [
        '--speculative-config with "num_speculative_tokens" given'
    ]


def test_a_setting_of_the_engine_arguments_left_unset_is_its_own_flag() -> None:
    found = diagnose_text(
        '  File "/env/lib/python3.12/site-packages/vllm/engine/arg_utils.py", line 1500, in '
        "create_engine_config\n"
        "    if self.max_num_seqs > 256:\n"
        "TypeError: '>' not supported between instances of 'NoneType' and 'int'\n"
    )
    assert [f.text for f in found.fixes if f.kind == "flag"] == ["--max-num-seqs VALUE"]


@pytest.mark.parametrize(
    "log",
    [
        # not a settings file: a model's forward, whose None is not a setting the user gives
        '  File "/env/lib/python3.12/site-packages/vllm/model_executor/models/llama.py", line 9\n'
        "    if self.head_dim > 1:\n"
        "TypeError: '>' not supported between instances of 'NoneType' and 'int'\n",
        # two settings in one comparison: which was unset is not known
        '  File "/env/lib/python3.12/site-packages/vllm/config/scheduler.py", line 9\n'
        "    if self.max_num_seqs > self.max_num_batched_tokens:\n"
        "TypeError: '>' not supported between instances of 'NoneType' and 'int'\n",
        # a TypeError about something else than None
        '  File "/env/lib/python3.12/site-packages/vllm/config/speculative.py", line 9\n'
        "    if self.num_speculative_tokens > 1:\n"
        "TypeError: '>' not supported between instances of 'str' and 'int'\n",
    ],
)
def test_an_unset_setting_is_read_only_where_one_setting_of_a_settings_file_was_none(
    log: str,
) -> None:
    found = diagnose_text(log)
    assert not found.recognised
    assert found.fixes == ()


@pytest.mark.parametrize(
    "message",
    [
        # FlashAttention 4's CuTe kernels (through SGLang's fa3/fa4 backends) on an SM120 GPU
        "AssertionError: FP8 is only supported on SM100 (compute capability 10.x) for FA4 CuTe",
        "RuntimeError: FlashMLA is only supported on Hopper GPUs",
    ],
)
def test_an_attention_kernels_own_gpu_check_is_another_attention_backend(message: str) -> None:
    found = diagnose_text(f"$ sglang serve --model-path /m --attention-backend fa3\n{message}\n")
    assert found.code == "attention-backend"
    assert "read from its words" in found.cause
    assert any("--attention-backend" in f.text for f in found.fixes)


def test_a_kernel_named_without_a_gpu_it_needs_is_not_read_as_the_attention_backend() -> None:
    found = diagnose_text("RuntimeError: FA4 CuTe kernel failed to compile: ptxas exited 1\n")
    assert found.code != "attention-backend"


def test_a_moe_method_without_the_runner_its_forced_backend_needs_is_that_backend() -> None:
    # SGLang's FP8 MoE method under --moe-runner-backend flashinfer_cutlass builds no runner
    found = diagnose_text(
        "python -m sglang.launch_server --model-path Qwen/Qwen3-30B-A3B-Instruct-2507-FP8 "
        "--moe-runner-backend flashinfer_cutlass\n"
        '  File "/env/sglang/srt/layers/quantization/fp8.py", line 1402, in apply\n'
        "AttributeError: 'Fp8MoEMethod' object has no attribute 'runner'\n"
    )
    assert found.code == "moe-backend"
    assert [f.text for f in found.fixes] == ["drop --moe-runner-backend if it was given"]


def test_a_fix_the_command_line_already_gave_is_not_offered_again() -> None:
    # SGLang's MoE runner: no fused func for the all-to-all backend; the command line already
    # gives --moe-a2a-backend none (another setting forced deepep), and no --moe-runner-backend
    found = diagnose_text(
        "python -m sglang.launch_server --model-path /m --tp 8 --enable-prefill-cp "
        "--moe-a2a-backend none\n"
        "NotImplementedError: Runner backend MoeRunnerBackend.MARLIN requires a fused func for "
        "a2a backend deepep, but none is registered.\n"
    )
    texts = [f.text for f in found.fixes]
    assert "--moe-a2a-backend none" not in texts
    assert len(texts) == 1 and texts[0].startswith("the command line already gives")


def _rope_key_log(version: str, code: str, key: str) -> str:
    """vLLM's banner and a traceback through its settings file reading one rope_scaling key."""
    return (
        f"INFO 10-10 10:00:00 api_server.py:219] vLLM API server version {version}\n"
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.11/site-packages/vllm/config.py", line 1226, in '
        "_get_and_verify_max_len\n"
        f"    {code}\n"
        "       ~~~~~~~~~~~~^^^^^^^^\n"
        f"KeyError: '{key}'\n"
    )


def test_the_legacy_type_key_read_by_an_old_release_is_the_first_release_reading_rope_type() -> (
    None
):
    legacy = feature_releases("vllm", "rope_type", ROPE_TYPE_KEY_ONLY)
    assert legacy, "the catalogue records vLLM releases whose get_rope reads only 'type'"
    old = max(legacy, key=version_key)
    found = diagnose_text(_rope_key_log(old, 'if rope_scaling["type"] == "yarn":', "type"))
    assert found.code == "rope-config"
    (upgrade,) = [f for f in found.fixes if f.kind == "dependency"]
    first = upgrade.text.split(">=")[1].rstrip("'")
    # the release named builds llama3 (the rope_type a newer config names) from rope_type, and
    # so does every release read after it
    assert version_key(first) > version_key(old)
    assert first in feature_releases("vllm", "rope_type", "llama3")
    assert first not in legacy
    # a release reading rope_type already: the key is added beside it, no upgrade named
    later = diagnose_text(_rope_key_log(first, 'if rope_scaling["type"] == "yarn":', "type"))
    assert later.code == "rope-config"
    assert [f.kind for f in later.fixes] == ["advice"]
    assert '"type" beside "rope_type"' in later.fixes[0].text


def test_another_rope_scaling_key_the_engine_reads_is_set_in_config_json() -> None:
    found = diagnose_text(
        _rope_key_log("0.4.3", 'scaling_factor = rope_scaling["factor"]', "factor")
    )
    assert found.code == "rope-config"
    assert found.fixes[0].text == "patcher set CKPT config.json /rope_scaling/factor VALUE"


@pytest.mark.parametrize(
    ("code", "key"),
    [
        ('if rope_scaling["type"] == "yarn":', "factor"),  # the key read is not the one missing
        ('if hf_config["type"] == "yarn":', "type"),  # another mapping than rope_scaling
    ],
)
def test_a_key_error_is_read_as_rope_scaling_only_where_the_line_reads_that_key(
    code: str, key: str
) -> None:
    assert diagnose_text(_rope_key_log("0.4.3", code, key)).code != "rope-config"


@pytest.mark.parametrize(
    ("line", "first"),
    [
        # retyped into a report: a space before the colon, a misspelling, the KV figure dropped
        (
            "ValueError : the model's max seq len (32768) is larger than the maxinum number of "
            "tokens that can be stored in KV cache, Try increasing 'gpu_memory_utilization' or "
            "decreasing 'max_model_len' when initializing the engine",
            "--max-model-len 16384",
        ),
        (
            "RuntimeError: max_model_len 131072 exceeds what the KV cache holds",
            "--max-model-len 32768",
        ),
    ],
)
def test_a_length_larger_than_the_kv_cache_in_other_words_asks_for_a_shorter_one(
    line: str, first: str
) -> None:
    found = diagnose_text(line + "\n")
    assert found.code == "kv-cache-memory"
    assert found.fixes[0].text == first  # shorter than the length asked, never the same
    assert "read from its words" in found.cause


def test_words_naming_the_kv_cache_and_a_length_without_a_shortage_are_not_this() -> None:
    found = diagnose_text("ValueError: max_model_len must be set when the KV cache is offloaded\n")
    assert found.code != "kv-cache-memory"


def test_the_kv_sizes_alone_ask_for_a_length_in_their_proportion() -> None:
    # a report's retelling of vLLM's refusal: the sizes, neither length (olmocr#269)
    found = diagnose_text("ValueError: 1.75 GiB KV cache is needed, available 0.13 GiB\n")
    assert found.code == "kv-cache-memory"
    assert found.fixes[0].kind == "advice"  # no length to give: a flag would not run as pasted
    assert found.fixes[0].text.startswith("a --max-model-len at most 7% of the length asked")
    assert "--max-model-len 32768" not in [f.text for f in found.fixes]  # no length to halve
    assert "--gpu-memory-utilization 0.95" in [f.text for f in found.fixes]


def test_vllm_sizes_without_its_estimate_give_the_length_they_hold() -> None:
    # vLLM 0.9's message names the KV sizes for the length asked and no estimate of its own
    found = diagnose_text(
        "INFO 07-05 10:00:00 [api_server.py:1287] vLLM API server version 0.9.1\n"
        "ValueError: To serve at least one request with the models's max seq len (32768), "
        "(1.75 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(0.13 GiB). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
        "when initializing the engine.\n"
    )
    assert found.code == "kv-cache-memory"
    assert found.fixes[0].text == "--max-model-len 2048"  # 32768 x 0.13 / 1.75 = 2434
    assert "in proportion to the KV cache sizes" in found.cause
