#!/usr/bin/python
# -*- coding: utf-8 -*-
# Apache-2.0 (see the patcher repository's pyproject.toml)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sync
short_description: Converge a model checkpoint to what its engine and GPU need
description:
  - Does what C(patcher sync) does, through the patcher library on the managed host. The
    transforms the target needs (judged against the upstream files by patcher's engine
    model) and the ones asked for are applied, the ones no longer wanted are reverted, and
    the ones with new parameters are re-applied, all in one all-or-nothing step.
  - The target comes from a profile file on the host, or from O(engine) and O(gpu) (these
    override a profile's).
  - Idempotent; a second run reports C(changed=false).
version_added: "0.1.0"
options:
  profile:
    description:
      - The path of a profile (TOML) on the host; see the patcher docs/plan-and-sync.md.
    type: path
  engine:
    description: The serving engine and version, such as C(vllm==0.16.0).
    type: str
  gpu:
    description: The GPU, such as C(rtx-pro-6000) or C(h100).
    type: str
  tensor_parallel:
    description: The tensor-parallel size the checkpoint is served with.
    type: int
  pipeline_parallel:
    description: The pipeline-parallel size.
    type: int
  gpu_memory_utilization:
    description: vLLM's gpu_memory_utilization (default that version's).
    type: float
  kv_cache_memory:
    description: The KV space per GPU, such as C(1GiB) (vLLM's --kv-cache-memory-bytes).
    type: str
  weights:
    description: The weights of all GPUs together, such as C(590GB) (default the weight index's).
    type: str
  max_model_len:
    description: The context wanted (default what the engine derives).
    type: int
  kv_cache_dtype:
    description:
      - The engine's --kv-cache-dtype, such as C(bfloat16) (default not passed, so C(auto)
        resolves from the checkpoint). A choice the version or GPU cannot run fails the task.
    type: str
  flags:
    description:
      - Server flags always passed, as argv words, such as C([--enable-prefix-caching]). One
        naming a launch setting (C(-tp 8)) is read as that setting.
    type: list
    elements: str
  transforms:
    description: Transforms wanted whatever the target, name to parameters.
    type: dict
  overlay:
    description:
      - Leave the checkpoint untouched (a read-only model store) and converge this overlay
        folder of links and patched copies instead; it is made when missing.
    type: path
extends_documentation_fragment:
  - patcher.patcher.checkpoint
author:
  - patcher contributors
"""

EXAMPLES = r"""
- name: Patch the checkpoint for this node's GPU
  patcher.patcher.sync:
    path: /models/Kimi-K2.5-NVFP4
    engine: vllm==0.16.0
    gpu: "{{ patcher_gpu }}"
    tensor_parallel: 8
  notify: restart vllm

- name: From a profile shipped to the host
  patcher.patcher.sync:
    repo_id: nvidia/Kimi-K2.5-NVFP4
    profile: /etc/patcher/profile.toml
"""

RETURN = r"""
actions:
  description:
    - The plan's steps (apply, revert, reapply, restore) with the reason for each.
    - C(restore) puts back a transform whose files a re-download returned to the upstream bytes.
  returned: always
  type: list
  elements: dict
  sample: [{"action": "apply", "name": "strip-fp8-kv-cache", "params": {}, "reason": "needed: ..."}]
applied:
  description: The transforms applied to the checkpoint after the task, oldest first.
  returned: always
  type: list
  elements: str
entries:
  description: The journal entries the task created (C(applied)) and retired (C(reverted)).
  returned: always
  type: dict
files:
  description: The config files the task changed (in check mode, would change).
  returned: always
  type: list
  elements: str
checkpoint:
  description: The folder synced (the overlay when O(overlay) is given).
  returned: always
  type: str
target:
  description: The target, as C(vllm==0.16.0 on rtx-pro-6000 (12.0) x8).
  returned: always
  type: str
flags:
  description: The server's flags for the target, as C(patcher plan) prints them.
  returned: always
  type: list
  elements: str
argv:
  description: The server's whole command line, for a service unit or a container's args.
  returned: always
  type: list
  elements: str
starts_unknown:
  description:
    - What the engine model cannot tell about this start (empty when it can), as C(patcher plan)
      prints it on its C(starts) line. A non-empty list means the files are right for the
      target but patcher cannot say that the server starts.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.patcher.patcher.plugins.module_utils.common import (
    CHECKPOINT_ARGS,
    CHECKPOINT_RULES,
    checkpoint_of,
    fail,
    file_diff,
    require_patcher,
)


def run(module, api):
    p = module.params
    target = api.make_target(
        engine=p["engine"],
        gpu=p["gpu"],
        tensor_parallel=p["tensor_parallel"],
        transforms=p["transforms"],
        profile=p["profile"],
        pipeline_parallel=p["pipeline_parallel"],
        gpu_memory_utilization=p["gpu_memory_utilization"],
        kv_cache_memory=p["kv_cache_memory"],
        weights=p["weights"],
        max_model_len=p["max_model_len"],
        kv_cache_dtype=p["kv_cache_dtype"],
        flags=p["flags"],
    )
    # A secret flag's value (--api-key) is the server's, not the task output's: no_log masks
    # it in the result, the diff and -v.
    module.no_log_values.update(api.secret_values(list(target.flags)))
    result = api.sync(checkpoint_of(p), target, dry_run=module.check_mode, overlay=p["overlay"])
    plan = result.plan
    actions = [
        dict(action=a.action, name=a.name, params=dict(a.params), reason=a.reason)
        for a in plan.actions
    ]
    applied = [e.transform for e in api.status(plan.checkpoint).applied]
    if module.check_mode:
        dropped = {a.name for a in plan.actions if a.action == "revert"}
        added = [a.name for a in plan.actions if a.action == "apply"]
        applied = [n for n in applied if n not in dropped] + added
    output = dict(
        changed=not plan.in_sync,
        actions=actions,
        applied=applied,
        entries=dict(applied=list(result.applied), reverted=list(result.reverted)),
        files=[f.path for f in result.files],
        checkpoint=str(plan.checkpoint),
        target=target.describe(),
        flags=[] if plan.launch is None else list(plan.launch.flags),
        argv=[] if plan.launch is None else list(plan.launch.argv),
        starts_unknown=[] if plan.launch is None else list(plan.launch.unknowns),
    )
    return output, [file_diff(f.path, f.before, f.after) for f in result.files]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            **CHECKPOINT_ARGS,
            profile=dict(type="path"),
            engine=dict(type="str"),
            gpu=dict(type="str"),
            tensor_parallel=dict(type="int"),
            pipeline_parallel=dict(type="int"),
            gpu_memory_utilization=dict(type="float"),
            kv_cache_memory=dict(type="str"),
            weights=dict(type="str"),
            max_model_len=dict(type="int"),
            kv_cache_dtype=dict(type="str"),
            flags=dict(type="list", elements="str"),
            transforms=dict(type="dict"),
            overlay=dict(type="path"),
        ),
        supports_check_mode=True,
        required_one_of=CHECKPOINT_RULES["required_one_of"] + [("profile", "engine")],
        mutually_exclusive=CHECKPOINT_RULES["mutually_exclusive"],
        required_by=CHECKPOINT_RULES["required_by"],
    )
    require_patcher(module)
    import patcher as api

    try:
        result, diff = run(module, api)
    except api.PatcherError as error:
        fail(module, error, changed=False)
    if module._diff:
        result["diff"] = diff
    module.exit_json(**result)


if __name__ == "__main__":
    main()
