"""doctor's answer when Ray cannot place vLLM's workers (patcher/advice/ray_cluster.py): the
first bundle is pinned to the node at vLLM's own address (VLLM_HOST_IP)."""

from __future__ import annotations

from patcher.advice.doctor import diagnose_text

# vllm/executor/ray_utils.py (0.8.5.post1 to 0.34.0 in the reading), and Ray's autoscaler
REFUSED = (
    "ERROR 03-03 23:26:06 engine.py:389] Cannot provide a placement group of "
    "placement_group_specs=[{'node:111.6.168.225': 0.001, 'GPU': 1.0}, {'GPU': 1.0}] within "
    "1800 seconds. See `ray status` and `ray list nodes` to make sure the cluster has enough "
    "resources."
)
AUTOSCALER = (
    "(autoscaler +13s) Error: No available node types can fulfill resource request "
    "{'node:10.61.0.27': 0.001, 'GPU': 1.0}. Add suitable node types to this cluster to "
    "resolve this issue."
)
RAY_LINES = [REFUSED, AUTOSCALER]


def test_a_placement_group_never_granted_names_the_address_and_vllm_host_ip() -> None:
    found = diagnose_text(
        "2025-03-03 22:56:06,173 INFO worker.py:1636 -- Connecting to existing Ray cluster at "
        "address: 172.16.1.2:6379...\n" + REFUSED + "\n"
    )
    assert found.code == "ray-placement"
    assert "111.6.168.225" in found.cause and "2 GPUs" in found.cause
    assert "VLLM_HOST_IP" in found.fixes[0].text


def test_rays_own_words_get_the_same_answer() -> None:
    found = diagnose_text(AUTOSCALER + "\n")
    assert found.code == "ray-placement"
    assert "10.61.0.27" in found.cause
