"""doctor's answer when Triton has no fp8e4nv on the GPU ("type fp8e4nv not supported in this
architecture. The supported fp8 dtypes are ('fp8e4b15', 'fp8e5')"): FP8 e4m3 needs SM89 or newer.
Two causes raise it: an FP8 e4m3 KV cache (the checkpoint's directive or --kv-cache-dtype fp8,
read by the attention kernels) and FP8 weights (a quantization method's or a fused MoE's Triton
kernel). The last frame of the engine's own code tells them apart where the traceback shows it;
only the KV cache's cause gets ``strip-fp8-kv-cache``. FP8 weights below SM89 run in vLLM from
0.9.0.1 through Marlin, block-wise and MoE too (0.8.5.post1 turned Marlin off for block-wise
FP8 and had none for MoE; snapshots/engines/fp8-marlin-vllm.txt)."""

from __future__ import annotations

import re

from patcher.advice.catalogue import feature_releases, version_key
from patcher.advice.log_rules import Fix, LogContext, Rule

# Where the last frame of the engine's own code was when Triton refused fp8e4nv: a weight
# kernel's file (quantization methods, fused MoE) or an attention kernel's (which read the KV
# cache in its dtype).
_WEIGHT_KERNEL = re.compile(r"/(?:quantization|fused_moe|moe)/")
_ATTENTION_KERNEL = re.compile(r"/(?:attention|attention_backends?)/|_attn\.py|attention\.py")


def no_fp8e4nv(_m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """Triton refused fp8e4nv: an FP8 e4m3 KV cache or FP8 weights, told apart by the last
    engine frame of the traceback where the log shows one."""
    # The command line's own KV dtype (given_flags.given_kv_dtype) trims these fixes to the ones
    # that change something; only the reading differs when that dtype was not e4m3.
    kv_fixes = [
        ctx.apply("strip-fp8-kv-cache"),
        Fix("flag", "--kv-cache-dtype fp8_e5m2", note="or auto, with the directive stripped"),
    ]
    frame = ctx.frame or ""
    if _WEIGHT_KERNEL.search(frame):
        return (
            "this GPU's Triton has no fp8e4nv (FP8 e4m3 needs SM89+), and the kernel that asked "
            "for it is a weight kernel (the traceback's last engine frame is in "
            f"{_frame_file(frame)}): the checkpoint's FP8 weights, not a KV cache setting; no "
            "config edit helps",
            _fp8_weights_elsewhere(ctx, frame),
        )
    if _ATTENTION_KERNEL.search(frame):
        return (
            "this GPU's Triton has no fp8e4nv (FP8 e4m3 needs SM89+), and the kernel that asked "
            f"for it is an attention kernel ({_frame_file(frame)}), which reads the KV cache in "
            "its dtype: an FP8 e4m3 KV cache (the checkpoint's directive or --kv-cache-dtype "
            "fp8) does not run here",
            kv_fixes,
        )
    # neither frame: the weights' ways out too, each under its condition
    fixes = [
        *kv_fixes,
        *(
            Fix("advice", f"if the weights are FP8{where}: {fix.text}", note=fix.note)
            for fix, where in _weights_fixes(ctx, moe=None)
        ),
    ]
    if ctx.kv_dtype is not None and ctx.kv_dtype not in ("auto", "fp8", "fp8_e4m3"):
        return (
            f"this GPU's Triton has no fp8e4nv (FP8 e4m3 needs SM89+), and the log's command "
            f"line already set --kv-cache-dtype {ctx.kv_dtype}: an FP8 kernel of this model "
            "still reached e4m3, so no FP8 KV cache runs here; or the weights are FP8",
            fixes,
        )
    return (
        "this GPU's Triton has no fp8e4nv (FP8 e4m3 needs SM89+; RDNA3 has only fp8e5). It is "
        "raised by an FP8 e4m3 KV cache or by an FP8 weight kernel, and this line cannot tell "
        "which: if the KV cache is FP8 (the checkpoint's directive or --kv-cache-dtype fp8), "
        "use a BF16 cache or fp8_e5m2; if the weights are FP8, a kernel that runs them below "
        "SM89 (Marlin) or another GPU or checkpoint",
        fixes,
    )


# The first vLLM release read whose Fp8LinearMethod and Fp8MoEMethod run FP8 weights (block-wise
# too) through Marlin below SM89; 0.8.5.post1 turned Marlin off for block-wise FP8 and had none
# for MoE (snapshots/engines/fp8-marlin-vllm.txt).
FP8_MARLIN_FROM = "0.9.0.1"


# The first vLLM release read whose --moe-backend takes marlin (the catalogue's choices); in
# 0.34.0 the Marlin experts take FP8 weights (block, channel, tensor) from SM75 while Triton's
# take FP8 only where the platform supports it, SM89 (snapshots/engines/fp8-marlin-vllm.txt).
def _moe_marlin() -> tuple[str, ...]:
    return feature_releases("vllm", "choices:--moe-backend", "marlin")


def _weights_fixes(ctx: LogContext, moe: bool | None) -> list[tuple[Fix, str]]:
    """The ways FP8 weights run below SM89, each with the condition it holds under (empty
    where it needs none): vLLM's Marlin MoE backend for a MoE (``moe`` None: not known),
    vLLM's Marlin path from FP8_MARLIN_FROM, another GPU or checkpoint."""
    found: list[tuple[Fix, str]] = []
    marlin_moe = _moe_marlin()
    first = marlin_moe[0] if marlin_moe else None
    if (
        moe is not False
        and first is not None
        and (ctx.version is None or ctx.version >= version_key(first))
    ):
        note = (
            f"vLLM {first} on: its Marlin MoE kernels take FP8 weights below SM89; the Triton "
            "MoE kernel needs fp8e4nv"
        )
        # a flag only where the log's release is known to take it
        flag = (
            Fix("flag", "--moe-backend marlin", note=note)
            if ctx.version is not None
            else Fix("advice", f"with vLLM {first} on: --moe-backend marlin", note=note)
        )
        found.append((flag, " in a MoE model"))
    marlin = "vLLM runs FP8 weights, block-wise and MoE too, through Marlin on GPUs below SM89"
    note = f"from {FP8_MARLIN_FROM} {marlin} (read from its fp8.py)"
    upgrade = f"pip install 'vllm>={FP8_MARLIN_FROM}'"
    if ctx.version is None:
        found.append(
            (Fix("advice", f"with a vLLM before {FP8_MARLIN_FROM}: {upgrade}", note=note), "")
        )
    elif ctx.version < version_key(FP8_MARLIN_FROM):
        found.insert(0, (Fix("dependency", upgrade, note=note), ""))
    other = (
        "an SM89+ GPU (Ada, Hopper, Blackwell), or a checkpoint of another quantization (BF16, "
        "AWQ, GPTQ) for this GPU"
    )
    return [*found, (Fix("advice", other), "")]


def _fp8_weights_elsewhere(ctx: LogContext, frame: str) -> list[Fix]:
    """Where FP8 weights run below SM89, for a weight kernel's frame: SGLang's gets another GPU
    or checkpoint only (no Marlin path read)."""
    if "sglang/" in frame:
        return [_weights_fixes(ctx, moe=False)[-1][0]]
    moe = "/fused_moe/" in frame or "/moe/" in frame
    return [fix for fix, _ in _weights_fixes(ctx, moe=moe)]


def _frame_file(frame: str) -> str:
    """The engine's file a traceback frame line names (``vllm/.../fp8_utils.py``)."""
    found = re.search(r"((?:vllm|sglang)/[\w/.-]+\.py)", frame)
    return found.group(1) if found else "the engine"


FP8E4NV_RULES: tuple[Rule, ...] = (
    ("fp8e4nv", re.compile(r"type fp8e4nv not supported"), no_fp8e4nv),
)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
FP8E4NV_MARKERS = ("fp8e4nv not supported",)
