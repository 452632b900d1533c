"""doctor on xFormers' dispatcher finding no attention operator (xformers_dispatch.py): the
operators' reasons on the lines after the message name the build, the dtype or the GPU; held to
xFormers' own wordings as recorded from its wheel."""

from __future__ import annotations

from pathlib import Path

from patcher.advice.doctor import diagnose_text

RECORDED = Path(__file__).parents[2] / "snapshots" / "engines" / "xformers-dispatch.txt"
BANNER = "INFO 12-23 02:43:20 api_server.py:585] vLLM API server version 0.6.4.post1\n"
FIRST = (
    "NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:"
)
INPUTS = (
    "     query       : shape=(1, 2048, 32, 128) (torch.float16)\n"
    "     key         : shape=(1, 2048, 32, 128) (torch.float16)\n"
    "     attn_bias   : <class 'xformers.ops.fmha.attn_bias.BlockDiagonalCausalMask'>\n"
    "     p           : 0.0\n"
)


def _log(*operators: tuple[str, list[str]], prefix: str = "") -> str:
    lines = [FIRST, *INPUTS.splitlines()]
    for name, reasons in operators:
        lines.append(f"`{name}` is not supported because:")
        lines += [f"    {r}" for r in reasons]
    return "".join(f"{prefix}{line}\n" for line in lines)


def test_an_xformers_that_cannot_load_its_operators_gets_the_pin_of_the_log_s_release() -> None:
    log = BANNER + _log(
        ("fa2F@v2.5.7-pt", ["xFormers wasn't build with CUDA support"]),
        ("cutlassF-pt", ["xFormers wasn't build with CUDA support"]),
        prefix="[rank0]: ",
    )
    found = diagnose_text(log)
    assert found.code == "xformers-dispatch"
    assert "could not load its compiled operators" in found.cause
    assert found.fixes[0].kind == "dependency"
    assert found.fixes[0].text == "pip install 'xformers==0.0.28.post3'"
    assert "vLLM 0.6.4.post1" in (found.fixes[0].note or "")
    assert found.fixes[1].text.startswith("or an xFormers built for the torch installed")


def test_with_no_release_named_an_xformers_built_for_the_torch_installed() -> None:
    found = diagnose_text(_log(("cutlassF", ["xFormers wasn't build with CUDA support"])))
    assert [f.kind for f in found.fixes] == ["advice"]  # no release: no pin to name
    assert found.fixes[0].text.startswith("an xFormers built for the torch installed")


def test_a_dtype_refusal_asks_half_unless_the_command_gave_it() -> None:
    float32 = [  # the dtype-only operator last: a heading after it is not its reason
        ("cutlassF-pt", ["attn_bias type is <class 'xformers.ops.fmha.attn_bias.Tensor'>"]),
        ("fa2F@v2.5.7-pt", ["dtype=torch.float32 (supported: {torch.float16, torch.bfloat16})"]),
    ]
    found = diagnose_text(
        BANNER + _log(*float32, prefix="(EngineCore pid=1) ") + "Process EngineCore_DP0:\n"
    )
    assert [f.text for f in found.fixes if f.kind == "flag"] == ["--dtype half"]
    args = "INFO 12-23 02:43:20 api_server.py:586] args: Namespace(model='m', dtype='half')\n"
    given = diagnose_text(BANNER + args + _log(*float32))
    assert given.code == "xformers-dispatch"
    assert all(f.text != "--dtype half" for f in given.fixes)  # given already: not asked again
    assert any("else no config fix" in f.text for f in given.fixes)


def test_a_gpu_every_operator_refuses_is_no_config_fix() -> None:
    too_old = (
        "requires device with capability > (8, 0) but your GPU has capability (7, 0) (too old)"
    )
    found = diagnose_text(
        _log(
            ("fa2F@v2.5.7-pt", [too_old, "bf16 is only supported on A100+ GPUs"]),
            ("cutlassF", ["max(query.shape[-1], value.shape[-1]) > 128"]),
        )
        + "Traceback (most recent call last):\n"
        + "RuntimeError: Engine core initialization failed. See root cause above.\n"
    )
    assert found.code == "xformers-dispatch"  # the wrapper after the reasons is not the root
    assert all(f.kind != "dependency" for f in found.fixes)
    assert all(f.text != "--dtype half" for f in found.fixes)  # fa2F refuses the GPU as well
    assert any("else no config fix" in f.text for f in found.fixes)


def test_the_first_line_alone_asks_for_the_reasons_and_names_no_fix() -> None:
    found = diagnose_text(BANNER + FIRST + "\n")
    assert found.code == "xformers-dispatch"
    assert [f.kind for f in found.fixes] == ["advice"]
    assert "reasons" in found.fixes[0].text


def test_a_message_quoted_on_one_line_is_read_whole() -> None:
    joined = (
        FIRST + "\\n     query : shape=(1, 8, 2, 64) (torch.float32)\\n`cutlassF` is not supported "
        "because:\\n    dtype=torch.float32 (supported: {torch.float16, torch.bfloat16})"
    )
    found = diagnose_text("ray.exceptions.RayTaskError(NotImplementedError): " + joined + "\n")
    assert [f.text for f in found.fixes if f.kind == "flag"] == ["--dtype half"]


def test_the_wordings_read_are_xformers_own_as_recorded() -> None:
    recorded = RECORDED.read_text()
    assert 'msg = f"""No operator found for `{name}` with inputs:' in recorded
    assert 'return f"`{op.NAME}` is not supported because:\\n    "' in recorded
    for reason in (
        'reasons.append("xFormers wasn\'t build with CUDA support")',
        'reasons.append(f"dtype={dtype} (supported: {cls.SUPPORTED_DTYPES})")',
        'reasons.append("bf16 is only supported on A100+ GPUs")',
        '"operator wasn\'t built - see `python -m xformers.info` for more info"',
        '"xFormers can\'t load C++/CUDA extensions. "',
    ):
        assert reason in recorded, reason
