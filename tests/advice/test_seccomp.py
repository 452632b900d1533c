"""doctor's answer to a C++ exception carrying EPERM (patcher/advice/seccomp.py): a container's
seccomp profile refusing the clone3 glibc starts threads with."""

from __future__ import annotations

from patcher.advice.doctor import diagnose_text


def test_the_cpp_runtimes_last_words_for_eperm_name_the_containers_seccomp_profile() -> None:
    found = diagnose_text(
        "INFO 03-07 10:00:00 [__init__.py:239] Automatically detected platform cuda.\n"
        "terminate called after throwing an instance of 'std::system_error'\n"
        "  what():  Operation not permitted\n"
        "Aborted (core dumped)\n"
    )
    assert found is not None and found.code == "container-seccomp"
    assert "seccomp=unconfined" in found.fixes[0].text
    assert any("20.10.10" in f.text for f in found.fixes)


def test_a_file_refused_with_eperm_is_not_taken_for_the_seccomp_profile() -> None:
    found = diagnose_text(
        "Traceback (most recent call last):\n"
        "PermissionError: [Errno 1] Operation not permitted: '/models/llama/config.json'\n"
    )
    assert found is None or found.code != "container-seccomp"
