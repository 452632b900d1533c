# -*- coding: utf-8 -*-
# Apache-2.0 (see the patcher repository's pyproject.toml)
"""Shared by the patcher.patcher modules: the patcher library (installed on the managed host),
the checkpoint argument, Ansible diffs of the real bytes, and one-line failures."""

from __future__ import annotations

import traceback

from ansible.module_utils.basic import missing_required_lib

try:
    import patcher  # noqa: F401  (the library on the managed host)
except ImportError:
    PATCHER_IMPORT_ERROR = traceback.format_exc()
else:
    PATCHER_IMPORT_ERROR = None

CHECKPOINT_ARGS = dict(
    path=dict(type="path"),
    repo_id=dict(type="str"),
    revision=dict(type="str"),
)
CHECKPOINT_RULES = dict(
    mutually_exclusive=[("path", "repo_id")],
    required_one_of=[("path", "repo_id")],
    required_by={"revision": "repo_id"},
)


def require_patcher(module):
    """Fail the task in one line when patcher is not installed on the managed host."""
    if PATCHER_IMPORT_ERROR is not None:
        module.fail_json(
            msg=missing_required_lib(
                "patcher",
                url="copy the wheel built from the patcher repository to the host and pip "
                "install it (distribution checkpoint-patcher; the patcher README, 'Install')",
            ),
            exception=PATCHER_IMPORT_ERROR,
        )


def checkpoint_of(params):
    """The checkpoint as patcher takes it: a folder, or ORG/NAME[@REVISION] in the HF cache."""
    if params.get("path"):
        return params["path"]
    revision = params.get("revision")
    return params["repo_id"] + ("@" + revision if revision else "")


def _text(data):
    if data is None:
        return ""
    return data.decode("utf-8", "replace")


def file_diff(path, before, after):
    """One Ansible diff entry: the real text before and after, so --diff is a unified diff of
    the file's bytes (not a re-serialised JSON)."""
    header = "%s (content)" % path
    return dict(
        before=_text(before),
        after=_text(after),
        before_header=header,
        after_header=header,
    )


def fail(module, error, **result):
    """Fail the task with patcher's own one-line message (the same as the CLI prints)."""
    module.fail_json(
        msg=str(error),
        file=None if error.file is None else str(error.file),
        pointer=error.pointer,
        hint=error.hint,
        exit_code=error.exit_code,
        **result,
    )
