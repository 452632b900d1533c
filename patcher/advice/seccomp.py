"""doctor's answer when a process of the engine dies on a C++ exception carrying EPERM: the
C++ runtime's last words ("terminate called after throwing an instance of
'std::system_error'", then ``what():  Operation not permitted``, strerror(EPERM)) for a system
call the kernel refused. In a container that is the container's seccomp profile: glibc 2.34 and
later start every thread with ``clone3``, and Docker's default profile refused ``clone3`` with
EPERM, which glibc takes as fatal, where it now answers ENOSYS and glibc falls back to ``clone``
(moby/moby#42680, fixed by moby/moby#42681 and its 20.10 backport #42836, in Docker 20.10.10;
containerd#6014 for containerd's profile). A thread the engine, NCCL or Ray starts is then
refused before the model is read.
"""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix, LogContext, Rule

# libstdc++'s verbose terminate handler: "  what():  " and the exception's what(), here
# std::system_error's message for errno EPERM.
REFUSED = re.compile(r"what\(\):\s+Operation not permitted")


def refused(_m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """A C++ call refused with EPERM: in a container, its seccomp profile."""
    return (
        "a process died on a system call the kernel refused with EPERM (C++'s std::system_error "
        "'Operation not permitted'); in a container that is its seccomp profile: glibc 2.34 on "
        "starts threads with clone3, which Docker's default profile refused with EPERM before "
        "Docker 20.10.10 (moby/moby#42680)",
        [
            Fix(
                "advice",
                "run the container with docker run --security-opt seccomp=unconfined "
                "(or --privileged)",
                note="the profile then lets clone3 through; in Kubernetes, "
                "securityContext.seccompProfile.type: Unconfined",
            ),
            Fix(
                "advice",
                "or upgrade Docker to 20.10.10 or later (containerd 1.4.12 / 1.5.7), whose "
                "default profile answers clone3 with ENOSYS, so glibc falls back to clone",
            ),
        ],
    )


SECCOMP_RULES: tuple[Rule, ...] = (("container-seccomp", REFUSED, refused),)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
SECCOMP_MARKERS = ("what",)  # its "w" shares the filter's branch of "which is of "
