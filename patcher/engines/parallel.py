"""The parallel sizes a config allows: how vLLM and SGLang split attention heads over GPUs.

Both engines refuse, before any weight is loaded, a tensor-parallel size that does not divide
the attention heads: vLLM in ``ModelConfig.verify_with_parallel_config`` ("Total number of
attention heads (N) must be divisible by tensor parallel size (T)."; every release read,
0.10.1 to 0.34.0), SGLang in each model's attention (``assert self.total_num_heads % tp_size
== 0``, sglang/srt/models/llama.py @ 0.5.23). The KV heads split too (``QKVParallelLinear``
in both engines' ``layers/linear.py``): with at least as many KV heads as GPUs, the GPUs must
divide them; with fewer, they must divide the GPUs (each is replicated). MLA models
(``kv_lora_rank``) have no KV heads to split. No config edit is the fix; another size is.

A block-quantized MoE checkpoint (``quantization_config.weight_block_size`` [n, k]) splits each
expert's ``moe_intermediate_size`` over the MoE tensor-parallel size, and each GPU's slice must
stay a multiple of the block: vLLM's ``validate_fp8_block_shape_moe`` (utils/fp8_utils.py,
0.10.1 to 0.34.0: the slice over n, and over k with more than one GPU; with
``--enable-expert-parallel`` experts are split instead, the slice is whole), SGLang's
``check_quantized_moe_compatibility`` (model_runner_components/moe_ep_setup.py @ 0.5.23: the
MoE TP size is ``--tp-size`` over ``--ep-size``, which must divide it). A shared expert
(``shared_expert_intermediate_size``, Qwen2/3-MoE and Qwen3-Next; ``share_expert_dim``,
Step-3.5) is a dense MLP, split by ``--tensor-parallel-size`` whatever the expert parallelism:
its slice must be whole blocks too (vLLM's ``validate_fp8_block_shape`` and SGLang's
``Fp8LinearMethod.validate_block_quant_shapes``: "Weight output_partition_size = N is not
divisible by weight quantization block_n = B"), so expert parallelism alone does not start it
(sglang#10852, sglang#26107).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from patcher.engines.engine import Engine
from patcher.engines.files import ConfigFiles
from patcher.engines.launch_flags import EXPERT_PARALLEL_FLAGS, flag_words
from patcher.engines.view import StartupError

SIZES = (1, 2, 4, 8, 16, 32, 64)


def _model(config: dict[str, Any]) -> tuple[dict[str, Any], str]:
    text = config.get("text_config")
    return (text, "/text_config") if isinstance(text, dict) else (config, "")


def _count(model: dict[str, Any], key: str) -> int | None:
    value = model.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _kv_splits(kv_heads: int, tp: int) -> bool:
    return tp % kv_heads == 0 if tp >= kv_heads else kv_heads % tp == 0


def tensor_parallel_error(
    engine: Engine,
    files: ConfigFiles,
    tensor_parallel: int | None,
    flags: Sequence[str] = (),
) -> StartupError | None:
    """The engine's refusal of a tensor-parallel size that does not split the attention heads,
    the KV heads, or a block-quantized expert's slice, with the sizes that would (None: it
    splits, or nothing to judge). ``flags``: the server's own, for its expert parallelism."""
    if engine.name not in ("vllm", "sglang") or not tensor_parallel or tensor_parallel < 2:
        return None
    if not isinstance(files.config, dict):
        return None
    model, where = _model(files.config)
    heads = _count(model, "num_attention_heads")
    if heads is None:
        return None
    kv_heads = None if "kv_lora_rank" in model else _count(model, "num_key_value_heads")
    sizes = [n for n in SIZES if heads % n == 0 and (kv_heads is None or _kv_splits(kv_heads, n))]
    flag = "--tensor-parallel-size" if engine.name == "vllm" else "--tp-size"
    note = f"a hardware plan, not a file edit: {flag} {' or '.join(map(str, sizes))}"
    tp = tensor_parallel
    if heads % tp:
        message = (
            f"Total number of attention heads ({heads}) must be divisible by tensor parallel "
            f"size ({tp})."
            if engine.name == "vllm"
            else f"AssertionError: total_num_heads ({heads}) % tp_size ({tp}) != 0"
        )
        return StartupError(
            message,
            code="tensor-parallel-heads",
            file="config.json",
            pointer=f"{where}/num_attention_heads",
            note=f"{note} divides {heads} heads",
        )
    if kv_heads is not None and not _kv_splits(kv_heads, tp):
        big, small = (kv_heads, tp) if kv_heads >= tp else (tp, kv_heads)
        return StartupError(
            f"{big} is not divisible by {small}"
            + (" (AssertionError in QKVParallelLinear)" if engine.name == "vllm" else ""),
            code="tensor-parallel-kv-heads",
            file="config.json",
            pointer=f"{where}/num_key_value_heads",
            note=f"{note} splits {kv_heads} KV heads",
        )
    return block_slice_error(engine, files, tp, flags) or group_slice_error(engine, files, tp)


def _expert_parallel_flag(
    engine: Engine, flags: Sequence[str]
) -> tuple[str, str | None, tuple[str, ...]] | None:
    names = EXPERT_PARALLEL_FLAGS.get(engine.name, ())
    return next((f for f in flag_words(flags, engine.name) if f[0] in names), None)


def expert_parallel_words(engine: Engine, flags: Sequence[str]) -> tuple[str, ...]:
    """The words of ``flags`` that ask for expert parallelism, as given (``--ep-size 8``,
    ``--ep-size=8``, ``--enable-expert-parallel``); () when none do."""
    found = _expert_parallel_flag(engine, flags)
    return () if found is None else found[2]


def expert_parallel(engine: Engine, flags: Sequence[str]) -> int | None:
    """The expert-parallel size the server's flags ask for: SGLang's ``--ep-size N``; vLLM's
    ``--enable-expert-parallel`` (its size is the GPUs', 0 here: every expert whole); None
    when not asked."""
    found = _expert_parallel_flag(engine, flags)
    if found is None:
        return None
    if engine.name == "vllm":
        return 0
    value = found[1] or ""
    return int(value) if value.isdigit() and int(value) > 0 else None


def block_slice_error(
    engine: Engine, files: ConfigFiles, tp: int, flags: Sequence[str] = ()
) -> StartupError | None:
    """The refusal of a block-quantized MoE expert's slice that is not a multiple of the block
    (see the module's note), with the sizes that would split it; None otherwise."""
    config = files.config
    quant = config.get("quantization_config") if isinstance(config, dict) else None
    block = quant.get("weight_block_size") if isinstance(quant, dict) else None
    if not isinstance(config, dict) or not (
        isinstance(block, list) and len(block) == 2 and all(_positive(b) for b in block)
    ):
        return None
    model, where = _model(config)
    size = _count(model, "moe_intermediate_size")
    if size is None or engine.name not in ("vllm", "sglang"):
        return None
    if engine.name == "vllm" and (quant or {}).get("quant_method") != "fp8":
        return None
    ep = expert_parallel(engine, flags)
    block_n, block_k = block
    pointer = f"{where}/moe_intermediate_size"
    shared = _shared_expert(model, where)
    shared_fits = shared is None or _whole_blocks(shared[0], tp, block_n, block_k)
    if shared is not None and not shared_fits:
        shared_size, shared_pointer = shared
        fits = [
            n
            for n in SIZES
            if _whole_blocks(shared_size, n, block_n, block_k)
            and (ep is not None or _whole_blocks(size, n, block_n, block_k))
        ]
        flag = "--tensor-parallel-size" if engine.name == "vllm" else "--tp-size"
        return StartupError(
            f"Weight output_partition_size = {shared_size // tp} is not divisible by weight "
            f"quantization block_n = {block_n}."
            if shared_size % tp == 0
            else f"{shared_size} is not divisible by {tp}",
            code="block-quant-slice",
            file="config.json",
            pointer=shared_pointer,
            note=f"a hardware plan, not a file edit: {flag} {' or '.join(map(str, fits))}; "
            "expert parallelism does not help, the shared expert is split by TP",
        )
    if engine.name == "vllm":
        moe_tp = 1 if ep == 0 else tp
        fits = [n for n in SIZES if size % n == 0 and (size // n) % block_n == 0]
        sizes = " or ".join(map(str, fits))
        note = (
            f"a hardware plan, not a file edit: --tensor-parallel-size {sizes} keeps each "
            "GPU's slice a multiple of the block, or --enable-expert-parallel (whole experts "
            "per GPU)"
        )
        if size % moe_tp or (size // moe_tp) % block_n:
            return StartupError(
                f"The output_size of gate's and up's weight = {size // moe_tp} is not divisible "
                f"by weight quantization block_n = {block_n}.",
                code="block-quant-slice",
                file="config.json",
                pointer=pointer,
                note=note,
            )
        if moe_tp > 1 and (size // moe_tp) % block_k:
            return StartupError(
                f"The input_size of down's weight = {size // moe_tp} is not divisible by weight "
                f"quantization block_k = {block_k}.",
                code="block-quant-slice",
                file="config.json",
                pointer=pointer,
                note=note,
            )
        return None
    ep_size = ep or 1
    if tp % ep_size:
        return StartupError(
            f"tp_size {tp} must be divisible by ep_size {ep_size}",
            code="block-quant-slice",
            file="config.json",
            pointer=pointer,
            note=f"a hardware plan: --ep-size {tp} (whole experts per GPU) or one dividing {tp}",
        )
    moe_tp = tp // ep_size
    if size % moe_tp or (size // moe_tp) % block_n:
        return StartupError(
            f"For quantized MoE models, please make sure (moe_intermediate_size={size} / "
            f"moe_tp_size={moe_tp}) % weight_block_size_n={block_n} == 0 where moe_tp_size is "
            f"equal to tp_size ({tp}) divided by ep_size ({ep_size}).",
            code="block-quant-slice",
            file="config.json",
            pointer=pointer,
            note=f"a hardware plan, not a file edit: --ep-size {tp} (whole experts per GPU)",
        )
    return None


def group_slice_error(engine: Engine, files: ConfigFiles, tp: int) -> StartupError | None:
    """The refusal of a group-quantized (AWQ, GPTQ) MLP whose down projection's slice is not
    a whole number of groups: both engines' ``awq.py`` ``create_weights`` ("The input size is
    not aligned with the quantized weight shape. This can be caused by too large tensor
    parallel size."; vLLM 0.10.1 to 0.34.0, SGLang 0.4.6 to 0.5.23), and Marlin's, which
    vLLM picks for them on newer GPUs, the same way. None otherwise."""
    config = files.config
    quant = config.get("quantization_config") if isinstance(config, dict) else None
    if not isinstance(config, dict) or not isinstance(quant, dict):
        return None
    if str(quant.get("quant_method", "")).lower() not in ("awq", "gptq"):
        return None
    group = quant.get("group_size", quant.get("q_group_size"))
    model, where = _model(config)
    size = _count(model, "intermediate_size")
    if not isinstance(group, int) or not _positive(group) or size is None:
        return None
    if engine.name not in ("vllm", "sglang"):
        return None
    if size % tp == 0 and (size // tp) % group == 0:
        return None
    fits = [n for n in SIZES if size % n == 0 and (size // n) % group == 0]
    flag = "--tensor-parallel-size" if engine.name == "vllm" else "--tp-size"
    return StartupError(
        "The input size is not aligned with the quantized weight shape. This can be caused "
        "by too large tensor parallel size.",
        code="group-quant-slice",
        file="config.json",
        pointer=f"{where}/intermediate_size",
        note=f"a hardware plan, not a file edit: {flag} {' or '.join(map(str, fits))} keeps "
        f"each GPU's slice of intermediate_size {size} a whole number of {group}-wide groups "
        "(pipeline parallel keeps the GPUs), or a checkpoint quantized with the size padded",
    )


def shared_expert_refused(files: ConfigFiles, routed_part: int) -> bool:
    """Whether a block-quantized checkpoint's shared expert is refused at the TP a routed
    expert's slice of ``routed_part`` names (``moe_intermediate_size`` / slice): a dense MLP,
    split by that TP whatever the expert parallelism."""
    config = files.config
    quant = config.get("quantization_config") if isinstance(config, dict) else None
    block = quant.get("weight_block_size") if isinstance(quant, dict) else None
    if not isinstance(config, dict) or not (
        isinstance(block, list) and len(block) == 2 and all(_positive(b) for b in block)
    ):
        return False
    model, where = _model(config)
    size = _count(model, "moe_intermediate_size")
    shared = _shared_expert(model, where)
    if size is None or shared is None or routed_part <= 0 or size % routed_part:
        return False
    return not _whole_blocks(shared[0], size // routed_part, block[0], block[1])


def _shared_expert(model: dict[str, Any], where: str) -> tuple[int, str] | None:
    """A shared expert's intermediate size and its pointer, where the config names one."""
    for key in ("shared_expert_intermediate_size", "share_expert_dim"):
        size = _count(model, key)
        if size is not None:
            return size, f"{where}/{key}"
    return None


def _whole_blocks(size: int, tp: int, block_n: int, block_k: int) -> bool:
    """Whether ``size`` split over ``tp`` GPUs leaves each a whole number of blocks (over n,
    and over k with more than one GPU)."""
    if size % tp:
        return False
    part = size // tp
    return part % block_n == 0 and (tp == 1 or part % block_k == 0)


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
