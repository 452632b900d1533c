"""doctor's answers when torch.distributed's rendezvous fails as the engine starts: the TCP
store its processes meet at (``TCPStore``, torch's ``c10d/socket.cpp``). vLLM sets it up at
``get_distributed_init_method(ip, get_open_port())``: the port is ``VLLM_PORT`` (counting up
from it while taken), else one the OS picks; the address is ``get_ip()`` (``VLLM_HOST_IP``, else
the address of the interface that routes outward), or the loopback address for the workers of
one node from 0.10 (multiproc_executor.py); torchrun's own rendezvous defaults to port 29500.

- "The server socket has failed to listen on any local network address ... EADDRINUSE": the
  port is held by another process (a server still running, one left from a crash, a second
  launch on the same node); errno 13 (EACCES) is a port below 1024 without root.
- "The client socket has failed to connect to any network address of (IP, PORT)" or "has timed
  out after ... while trying to connect to (IP, PORT)": a process could not reach the store at
  IP: an address the others cannot route to (a container's, a public one behind NAT, a
  firewall), or the node that should listen there never did."""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix, LogContext, Rule

LISTEN = re.compile(
    r"server socket has failed to listen on any local network address"
    r"(?:.*?port: (\d+))?(?:.*?(EADDRINUSE|errno: 98|Address already in use|errno: 13|"
    r"Permission denied))?"
)
CONNECT = re.compile(
    r"client socket has (?:failed to connect to any network address of|timed out after "
    r"\S+ while trying to connect to) \(([^,()]+), (\d+)\)"
)


def port_taken(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """The rendezvous port is held by another process, or below 1024 without root."""
    port, why = m.group(1), m.group(2) or ""
    where = f"port {port}" if port else "its port"
    if "13" in why or "Permission" in why:
        return (
            f"torch.distributed could not listen on {where}: a port below 1024 needs root",
            [Fix("advice", "a port of 1024 or above (VLLM_PORT, or MASTER_PORT for torchrun)")],
        )
    held = (
        f"ss -ltnp 'sport = :{port}' names the process holding it"
        if port
        else "ss -ltnp names the processes holding ports"
    )
    return (
        f"torch.distributed could not listen on {where} for its rendezvous: another process "
        "holds it (a server still running, one left from a crash, a second launch on this node)",
        [
            Fix("advice", "stop the process holding the port", note=held),
            Fix(
                "advice",
                "or another port: VLLM_PORT=<free port> (vLLM counts up from it while taken), "
                "or MASTER_PORT for a launch under torchrun (29500 by default)",
            ),
        ],
    )


def unreachable(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """A process could not reach the rendezvous at the address the engine chose."""
    address, port = m.group(1).strip(), m.group(2)
    return (
        f"a process of the engine could not reach torch.distributed's rendezvous at "
        f"{address}:{port}: the engine set it up at its own address (VLLM_HOST_IP, else the "
        "interface that routes outward), which the others cannot route to (a container's "
        "address, a public one, a firewall), or the node that should listen there never did",
        [
            Fix(
                "advice",
                "one node: VLLM_HOST_IP=127.0.0.1",
                note="the processes then meet on the loopback address",
            ),
            Fix(
                "advice",
                "several nodes: VLLM_HOST_IP on each, an address the others reach (not a "
                "container's own), with the port open between them",
            ),
        ],
    )


RENDEZVOUS_RULES: tuple[Rule, ...] = (
    ("rendezvous-port", LISTEN, port_taken),
    ("rendezvous-address", CONNECT, unreachable),
)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
RENDEZVOUS_MARKERS = ("failed to listen on any", "socket has ")
