"""doctor's answers when torch.distributed's rendezvous fails at start
(patcher/advice/rendezvous.py): a port taken, an address the processes cannot reach."""

from __future__ import annotations

from patcher.advice.doctor import diagnose_text

TAKEN = (
    "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
    "network address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: "
    "address already in use"
)
REFUSED_PORT = (
    "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
    "network address. The server socket has failed to bind to 0.0.0.0:98 (errno: 13 - "
    "Permission denied)."
)
UNREACHABLE = (
    "torch.distributed.DistNetworkError: The client socket has timed out after 600s while "
    "trying to connect to (10.60.2.1, 53591)."
)
RENDEZVOUS_LINES = [TAKEN, UNREACHABLE]


def test_a_taken_port_names_the_port_and_a_way_to_another() -> None:
    found = diagnose_text(f"(EngineCore_DP0 pid=7) ERROR 04-05 10:00:00 [core.py:1] {TAKEN}\n")
    assert found.code == "rendezvous-port"
    assert "29500" in found.cause and "sport = :29500" in (found.fixes[0].note or "")
    assert any("VLLM_PORT" in f.text for f in found.fixes)


def test_a_port_below_1024_is_not_said_to_be_taken() -> None:
    found = diagnose_text(REFUSED_PORT + "\n")
    assert found.code == "rendezvous-port"
    assert "below 1024" in found.cause


def test_an_unreachable_rendezvous_names_its_address_and_vllm_host_ip() -> None:
    found = diagnose_text(UNREACHABLE + "\n")
    assert found.code == "rendezvous-address"
    assert "10.60.2.1:53591" in found.cause
    assert found.fixes[0].text == "one node: VLLM_HOST_IP=127.0.0.1"
