"""doctor's answer when the model argument reached huggingface_hub as a repository id and is
none: ``HFValidationError`` from ``validate_repo_id`` (huggingface_hub's ``_validators.py``:
"Repo id must be in the form 'repo_name' or 'namespace/repo_name'", "Repo id must use
alphanumeric chars"), and transformers' own ``Incorrect path_or_model_id`` (its hub.py).

The engines take a model argument that is no folder on this machine for a Hub name, so the
refused id says which mistake it was: a local path that does not exist here (the usual one:
a path outside the container, a typo), or a Hub name with its branch attached
(``REPO:BRANCH``), which the Hub reads only as a separate revision."""

from __future__ import annotations

import re

from patcher.advice.catalogue import declared
from patcher.advice.log_rules import Fix, LogContext


def _revision(repo: str, branch: str, ctx: LogContext) -> tuple[str, list[Fix]]:
    having = [e for e in ctx.engines() if declared(e, "--revision")]
    download = f"hf download {repo} --revision {branch} --local-dir DIR, and give DIR as the model"
    fixes = [Fix("advice", f"download the branch: {download}")]
    if having:
        fixes = [
            Fix(
                "advice",
                f"give the model as {repo} and the branch as --revision {branch}",
                note=f"{' and '.join(having)}'s own flag for the Hub branch",
            ),
            Fix("advice", f"or download the branch: {download}"),
        ]
    return (
        f"{repo}:{branch} is a Hub name with its branch attached, which the Hub does not read "
        "as one id: the branch is a separate revision",
        fixes,
    )


def invalid_repo_id(m: re.Match[str], ctx: LogContext) -> tuple[str, list[Fix]]:
    """``HFValidationError: Repo id must ...: 'X'``: the model argument, taken for a Hub id."""
    given = m.group(1)
    branch = re.fullmatch(r"([\w.-]+/[\w.-]+):([\w./-]+)", given)
    if branch is not None:
        return _revision(branch.group(1), branch.group(2), ctx)
    if "models--" in given:
        cache = re.search(r"models--([\w.-]+?)--([\w.-]+)", given)
        repo = f"{cache.group(1)}/{cache.group(2)}" if cache else "ORG/NAME"
        return (
            f"{given} is a Hub cache folder, which holds the checkpoint under "
            "snapshots/REVISION/, not at its top: with no config.json there, the engine took "
            "the path for a Hub name",
            [
                Fix("advice", f"give the folder {given.rstrip('/')}/snapshots/REVISION"),
                Fix(
                    "advice",
                    f"or the Hub name {repo}, with HF_HOME={home}"
                    if (home := given.partition("/hub/models--")[0]) and "/hub/" in given
                    else f"or the Hub name {repo}, with HF_HOME set to the folder above hub/",
                ),
            ],
        )
    if given.startswith(("/", "./", "../", "~")) or given.count("/") > 1:
        return (
            f"{given} is no checkpoint folder where the engine runs (no such folder, or no "
            "config.json in it), so the engine took it for a Hub name, which it cannot be",
            [
                Fix(
                    "advice",
                    "the path as the server sees it: in a container, where the checkpoint is "
                    "mounted (docker run -v HOST_DIR:/models, then /models); check it holds "
                    "config.json",
                ),
            ],
        )
    return "", []
