#!/usr/bin/python
# -*- coding: utf-8 -*-
# Apache-2.0 (see the patcher repository's pyproject.toml)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: transform
short_description: Apply or revert one patcher transform on a model checkpoint
description:
  - Applies a named patcher transform (a built-in name or a transform file on the host) to the
    config files of a local model checkpoint, or reverts it, through patcher's journal, so the
    edit can be undone byte for byte.
  - Needs the patcher library installed in the Python that runs the module on the managed host.
  - Idempotent; a second run reports C(changed=false).
version_added: "0.1.0"
options:
  name:
    description: The transform, a built-in name (C(patcher list)) or the path of a transform file.
    type: str
    required: true
  params:
    description: The transform's parameters, name to value.
    type: dict
    default: {}
  state:
    description:
      - V(present) applies the transform; V(absent) reverts every applied entry of it, giving
        back the bytes it started from.
    type: str
    choices: [present, absent]
    default: present
  force:
    description: With V(absent), undo what still matches even when the files were edited by hand.
    type: bool
    default: false
extends_documentation_fragment:
  - patcher.patcher.checkpoint
author:
  - patcher contributors
"""

EXAMPLES = r"""
- name: Drop the FP8 KV-cache directive this GPU's attention backend cannot run
  patcher.patcher.transform:
    path: /models/Kimi-K2.5-NVFP4
    name: strip-fp8-kv-cache
  notify: restart vllm

- name: Cap the context
  patcher.patcher.transform:
    repo_id: nvidia/Kimi-K2.5-NVFP4
    name: set-context-length
    params:
      length: 131072

- name: Undo it
  patcher.patcher.transform:
    path: /models/Kimi-K2.5-NVFP4
    name: set-context-length
    state: absent
"""

RETURN = r"""
actions:
  description: What the task did (or, in check mode, would do), one item per journal entry.
  returned: always
  type: list
  elements: dict
  sample: [{"action": "apply", "name": "strip-fp8-kv-cache", "entry": 1, "files": ["config.json"]}]
applied:
  description: The transforms applied to the checkpoint after the task, oldest first.
  returned: always
  type: list
  elements: str
entries:
  description: The journal entry ids the task created or reverted (none in check mode).
  returned: always
  type: list
  elements: int
checkpoint:
  description: The checkpoint folder.
  returned: always
  type: str
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


def _applied(api, checkpoint, predicted=None):
    names = [e.transform for e in api.status(checkpoint).applied]
    if predicted is not None:
        names = predicted(names)
    return names


def present(module, api, checkpoint):
    p = module.params
    result = api.apply(checkpoint, p["name"], p["params"], dry_run=module.check_mode)
    changed = result.outcome in ("applied", "dry-run")
    files = [f.path for f in result.files]
    actions = []
    if changed:
        actions.append(
            dict(action="apply", name=result.transform.name, entry=result.entry_id, files=files)
        )
    diff = [file_diff(f.path, f.before, f.after) for f in result.files]
    applied = _applied(
        api,
        checkpoint,
        (lambda names: names + [result.transform.name]) if module.check_mode and changed else None,
    )
    return (
        dict(
            changed=changed,
            actions=actions,
            applied=applied,
            entries=[result.entry_id] if changed and result.entry_id is not None else [],
            checkpoint=str(result.checkpoint),
        ),
        diff,
        result.warnings,
    )


def absent(module, api, checkpoint):
    p = module.params
    transform = api.get_transform(p["name"]).name
    status = api.status(checkpoint)
    mine = [e for e in status.applied if e.transform == transform]
    actions, diff, entries = [], [], []
    for entry in reversed(mine):
        result = api.revert(
            checkpoint, "#%d" % entry.id, force=p["force"], dry_run=module.check_mode
        )
        for reverted in result.entries:
            files = [f.path for f in reverted.files if f.new is not None]
            actions.append(
                dict(action="revert", name=reverted.transform, entry=reverted.entry_id, files=files)
            )
            diff += [
                file_diff(f.path, f.current, f.new) for f in reverted.files if f.new is not None
            ]
            if not module.check_mode:
                entries.append(reverted.entry_id)
        if module.check_mode:
            break  # the later entries' reverts depend on this one's being written
    applied = [e.transform for e in status.applied if e not in mine]
    if not module.check_mode:
        applied = _applied(api, checkpoint)
    return (
        dict(
            changed=bool(actions),
            actions=actions,
            applied=applied,
            entries=entries,
            checkpoint=str(status.checkpoint),
        ),
        diff,
        (),
    )


def main():
    module = AnsibleModule(
        argument_spec=dict(
            **CHECKPOINT_ARGS,
            name=dict(type="str", required=True),
            params=dict(type="dict", default={}),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            force=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
        **CHECKPOINT_RULES,
    )
    require_patcher(module)
    import patcher as api

    checkpoint = checkpoint_of(module.params)
    try:
        if module.params["state"] == "present":
            result, diff, warnings = present(module, api, checkpoint)
        else:
            result, diff, warnings = absent(module, api, checkpoint)
    except api.PatcherError as error:
        fail(module, error, changed=False)
    for warning in warnings:
        module.warn(warning)
    if module._diff:
        result["diff"] = diff
    module.exit_json(**result)


if __name__ == "__main__":
    main()
