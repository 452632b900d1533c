# Apache-2.0 (see the patcher repository's pyproject.toml)
"""The options every patcher.patcher module takes to name a checkpoint, and its attributes."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  path:
    description: The checkpoint folder. One of O(path) or O(repo_id) is required.
    type: path
  repo_id:
    description: An C(ORG/NAME) repository in the host's Hugging Face cache.
    type: str
  revision:
    description: The revision of O(repo_id) (default is the one C(refs/main) names).
    type: str
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
"""
