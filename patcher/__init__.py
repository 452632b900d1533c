"""patcher: named, reversible, journalled edits to the config files of a model checkpoint.

The library API, flat::

    from patcher import apply, revert, status, check, plan, sync, PatcherError

Every function returns a value and none prints (see ``patcher.api``). The names are loaded on
first use, so ``import patcher`` (and the CLI's start-up) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from patcher.version import __version__ as __version__

if TYPE_CHECKING:
    from patcher.api import ApplyResult as ApplyResult
    from patcher.api import CheckpointDiff as CheckpointDiff
    from patcher.api import CheckpointError as CheckpointError
    from patcher.api import CheckReport as CheckReport
    from patcher.api import ConflictError as ConflictError
    from patcher.api import Diagnosis as Diagnosis
    from patcher.api import DoesNotApplyError as DoesNotApplyError
    from patcher.api import EngineView as EngineView
    from patcher.api import FileChange as FileChange
    from patcher.api import InputFileError as InputFileError
    from patcher.api import JournalError as JournalError
    from patcher.api import KvBudget as KvBudget
    from patcher.api import LockTimeoutError as LockTimeoutError
    from patcher.api import Overrides as Overrides
    from patcher.api import PatcherError as PatcherError
    from patcher.api import Plan as Plan
    from patcher.api import ReapplyResult as ReapplyResult
    from patcher.api import RebaseResult as RebaseResult
    from patcher.api import RevertResult as RevertResult
    from patcher.api import Status as Status
    from patcher.api import SyncResult as SyncResult
    from patcher.api import Target as Target
    from patcher.api import TargetError as TargetError
    from patcher.api import Transform as Transform
    from patcher.api import TransformError as TransformError
    from patcher.api import UnsafePathError as UnsafePathError
    from patcher.api import UpstreamDiff as UpstreamDiff
    from patcher.api import UpstreamError as UpstreamError
    from patcher.api import WriteError as WriteError
    from patcher.api import apply as apply
    from patcher.api import check as check
    from patcher.api import diff as diff
    from patcher.api import diff_upstream as diff_upstream
    from patcher.api import doctor as doctor
    from patcher.api import engine_view as engine_view
    from patcher.api import get_transform as get_transform
    from patcher.api import kv_budget as kv_budget
    from patcher.api import list_transforms as list_transforms
    from patcher.api import make_target as make_target
    from patcher.api import overrides as overrides
    from patcher.api import plan as plan
    from patcher.api import reapply as reapply
    from patcher.api import rebase as rebase
    from patcher.api import revert as revert
    from patcher.api import secret_values as secret_values
    from patcher.api import status as status
    from patcher.api import sync as sync

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


def __getattr__(name: str) -> Any:
    if name in __all__:
        from patcher import api

        return getattr(api, name)
    raise AttributeError(f"module 'patcher' has no attribute {name!r}")
