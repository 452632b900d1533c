"""The public library API: every function returns a value and none prints.

from patcher import api
result = api.apply("/models/kimi", "strip-fp8-kv-cache")
api.status("/models/kimi").applied
api.revert("/models/kimi", "strip-fp8-kv-cache")
"""

from __future__ import annotations

from patcher.applying import ApplyResult
from patcher.applying import apply_transform as apply
from patcher.catalog import builtin_transforms as list_transforms
from patcher.catalog import find_transform as get_transform
from patcher.engines.model import engine_view
from patcher.engines.view import EngineView
from patcher.errors import (
    CheckpointError,
    ConflictError,
    DoesNotApplyError,
    InputFileError,
    JournalError,
    LockTimeoutError,
    PatcherError,
    TargetError,
    TransformError,
    UnsafePathError,
    UpstreamError,
    WriteError,
)
from patcher.file_status import Status
from patcher.file_status import checkpoint_status as status
from patcher.findings import CheckReport
from patcher.findings import check_checkpoint as check
from patcher.kvbudget import KvBudget, kv_budget
from patcher.log_doctor import Diagnosis
from patcher.log_doctor import diagnose as doctor
from patcher.offline_diff import CheckpointDiff
from patcher.offline_diff import diff_checkpoint as diff
from patcher.planning import FileChange, Plan, SyncResult
from patcher.planning import plan_checkpoint as plan
from patcher.planning import sync_checkpoint as sync
from patcher.reapplying import ReapplyResult
from patcher.reapplying import reapply_transforms as reapply
from patcher.rebasing import RebaseResult
from patcher.rebasing import rebase_checkpoint as rebase
from patcher.reverting import RevertResult
from patcher.reverting import revert_transforms as revert
from patcher.runtime_overrides import Overrides
from patcher.runtime_overrides import engine_overrides as overrides
from patcher.targets import Target, make_target
from patcher.transform import Transform
from patcher.upstream import UpstreamDiff, diff_upstream

__all__ = [
    "ApplyResult",
    "CheckReport",
    "CheckpointDiff",
    "CheckpointError",
    "ConflictError",
    "Diagnosis",
    "DoesNotApplyError",
    "EngineView",
    "FileChange",
    "InputFileError",
    "JournalError",
    "KvBudget",
    "LockTimeoutError",
    "Overrides",
    "PatcherError",
    "Plan",
    "ReapplyResult",
    "RebaseResult",
    "RevertResult",
    "Status",
    "SyncResult",
    "Target",
    "TargetError",
    "Transform",
    "TransformError",
    "UnsafePathError",
    "UpstreamDiff",
    "UpstreamError",
    "WriteError",
    "apply",
    "check",
    "diff",
    "diff_upstream",
    "doctor",
    "engine_view",
    "get_transform",
    "kv_budget",
    "list_transforms",
    "make_target",
    "overrides",
    "plan",
    "reapply",
    "rebase",
    "revert",
    "status",
    "sync",
]
