"""The public library API: every function returns a value and none prints.

from patcher import api
result = api.apply("/models/kimi", "strip-fp8-kv-cache")
api.status("/models/kimi").applied
api.revert("/models/kimi", "strip-fp8-kv-cache")
"""

from __future__ import annotations

from patcher.advice.check import CheckReport
from patcher.advice.check import check_checkpoint as check
from patcher.advice.diagnosis import Diagnosis
from patcher.advice.doctor import diagnose as doctor
from patcher.advice.kvbudget import KvBudget, kv_budget
from patcher.advice.overrides import Overrides
from patcher.advice.overrides import engine_overrides as overrides
from patcher.engines.model import engine_view
from patcher.engines.target import Target, make_target
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
from patcher.ops.adding import ApplyResult
from patcher.ops.apply import apply
from patcher.ops.diff import CheckpointDiff, diff
from patcher.ops.reapply import ReapplyResult, reapply
from patcher.ops.rebase import RebaseResult, rebase
from patcher.ops.rebuilding import FileChange
from patcher.ops.revert import RevertResult, revert
from patcher.ops.sync import Plan, SyncResult, plan, sync
from patcher.ops.upstream import UpstreamDiff, diff_upstream
from patcher.store.file_status import Status
from patcher.store.file_status import checkpoint_status as status
from patcher.text.secrets import secret_values
from patcher.transforms.catalog import builtin_transforms as list_transforms
from patcher.transforms.catalog import find_transform as get_transform
from patcher.transforms.definition import Transform

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
    "secret_values",
    "status",
    "sync",
]
