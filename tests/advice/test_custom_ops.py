"""doctor's answer when vLLM's compiled extension lacks an op its Python calls
(patcher/advice/custom_ops.py): PyTorch's '_OpNamespace' refusal, and vLLM's own wrapper's
words for it (_custom_ops.py's hint_on_error, 0.5.0.post1 on)."""

from __future__ import annotations

from patcher.advice.doctor import diagnose_text

MISSING = (
    "AttributeError: '_OpNamespace' '_C_cache_ops' object has no attribute 'reshape_and_cache'"
)
OBSOLETE = (
    "ERROR 11-04 22:26:53 _custom_ops.py:63] Possibly you have built or installed an obsolete "
    "version of vllm."
)
CUSTOM_OPS_LINES = [MISSING, OBSOLETE]
VERSION = "INFO 11-04 22:26:40 api_server.py:528] vLLM API server version 0.6.3.post1\n"


def test_an_op_the_extension_lacks_is_a_clean_install_of_the_release_run() -> None:
    assert diagnose_text(VERSION + OBSOLETE + "\n" + MISSING + "\n").code == "obsolete-build"
    found = diagnose_text(VERSION + MISSING + "\n")
    assert "_C_cache_ops.reshape_and_cache" in found.cause
    # the release the log names (three numbers, as pip takes them)
    assert found.fixes[0].text == "pip install --force-reinstall --no-cache-dir 'vllm==0.6.3'"
    assert found.fixes[0].kind == "dependency"
    assert "build/" in found.fixes[1].text
    # no release in the log: a placeholder, told as advice
    bare = diagnose_text(MISSING + "\n")
    assert bare.fixes[0].kind == "advice" and "VERSION" in bare.fixes[0].text


def test_an_extension_that_did_not_import_is_answered_by_its_own_line() -> None:
    # the op is missing because the extension never loaded: glibc (vLLM 0.5.2's needs 2.32)
    found = diagnose_text(
        "WARNING 07-19 14:45:53 _custom_ops.py:14] Failed to import from vllm._C with "
        "ImportError(\"/lib64/libc.so.6: version `GLIBC_2.32' not found (required by "
        '/envs/v/lib/python3.11/site-packages/vllm/_C.abi3.so)")\n'
        + VERSION
        + "AttributeError: '_OpNamespace' '_C' object has no attribute 'rms_norm'\n"
    )
    assert found.code == "glibc-too-old"


def test_an_ops_wrapper_checking_its_own_tensors_is_not_sent_to_a_setting() -> None:
    # _custom_ops.py's checks of the tensors the engine passes (read from its source, 0.12.0
    # on): an invariant of the engine, not a divisibility of a size the user sets
    found = diagnose_text(
        "(EngineCore_DP0 pid=1) ERROR 12-04 10:00:00 [core.py:1] ValueError: last dim of `a` "
        "must be divisible by 32, got 24.\n"
    )
    assert found.family is not None and found.family.name == "op-arguments"
    assert not any("--tensor-parallel-size" in f.text for f in found.fixes)
    assert all(f.kind == "advice" for f in found.fixes)
