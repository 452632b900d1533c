"""doctor's answer when Ray cannot place vLLM's workers: vLLM (``executor/ray_utils.py``, read
0.5.5 to 0.34.0) asks Ray for a placement group of one GPU bundle per worker, the first pinned
to the node it runs on by the custom resource ``node:<IP>``, where IP is ``get_ip()``:
``VLLM_HOST_IP``, else the address of its own network interface. Where no node of the Ray
cluster joined under that address (a public address, a container's, another interface's), or
the cluster has fewer free GPUs than bundles, Ray never grants the group: its autoscaler says
"No available node types can fulfill resource request {'node:IP': 0.001, 'GPU': 1.0}", vLLM
logs "Waiting for creating a placement group ... make sure the IP addresses used by ray
cluster are the same as VLLM_HOST_IP", then raises "Cannot provide a placement group of
placement_group_specs=[...] within N seconds"."""

from __future__ import annotations

import re

from patcher.advice.log_rules import Fix, LogContext, Rule

PLACEMENT = re.compile(
    r"(?:Cannot provide a placement group|No available node types can fulfill resource "
    r"request)[^\n]*?'node:([\w.:-]+)'"
)


def unplaced(m: re.Match[str], _ctx: LogContext) -> tuple[str, list[Fix]]:
    """The driver's bundle pinned to an address no Ray node has, or too few free GPUs."""
    address = m.group(1)
    bundles = len(re.findall(r"'(?:GPU|NPU|XPU)': 1(?:\.0)?", m.string[m.start() :]))
    wanted = f"{bundles} GPUs" if bundles > 1 else "one GPU per worker"
    return (
        f"Ray cannot place vLLM's workers: vLLM pins its first GPU to the Ray node at {address} "
        f"(VLLM_HOST_IP, else its own network address) and asks for {wanted} in all, and the "
        "cluster has no node joined under that address, or fewer free GPUs",
        [
            Fix(
                "advice",
                "set VLLM_HOST_IP, on every node, to the address the node joined the Ray "
                "cluster with",
                note="`ray list nodes` shows each node's address; ray start --node-ip-address "
                "sets it",
            ),
            Fix(
                "advice",
                f"or a --tensor-parallel-size x --pipeline-parallel-size the cluster's free GPUs "
                f"cover ({wanted}; `ray status` counts them)",
            ),
        ],
    )


RAY_CLUSTER_RULES: tuple[Rule, ...] = (("ray-placement", PLACEMENT, unplaced),)
# One plain word of each rule above, for the line filter (engine_rules._MARKERS).
RAY_CLUSTER_MARKERS = ("Cannot provide a placement", "No available node types")
