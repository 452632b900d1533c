"""What each value of vLLM's deprecated ``--task`` became, read with ``ast`` from the releases
that had both it and its replacements (0.10.1 to 0.12.0): ``_RUNNER_TASKS`` (the runner each
task runs on, ``{"pooling": ["embedding", "embed", ...]}``) and ``ModelConfig``'s nested
``_task_to_convert`` (the ``--convert`` a pooling task adapts a model with, where it returns a
constant), recorded per release as the ``task_runner`` feature, ``<task>=<runner>[/<convert>]``.

Releases from 0.13.0 have no ``--task``; argparse refuses it ("unrecognized arguments: --task
embed"), and the last release that took it says, in its deprecation hint, to use ``--runner``
and ``--convert`` instead: patcher/advice/flag_choices.py names them from this reading.
"""

from __future__ import annotations

import ast
import zipfile

from tools.wheel_modules import modules

_CONFIG = "vllm/config"


def _runner_tasks(tree: ast.Module) -> dict[str, str]:
    """Each task of a module-level ``_RUNNER_TASKS`` dict with the runner it lists it under."""
    found: dict[str, str] = {}
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if not (isinstance(target, ast.Name) and target.id == "_RUNNER_TASKS"):
            continue
        value = node.value
        if not isinstance(value, ast.Dict):
            continue
        for key, tasks in zip(value.keys, value.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(tasks, ast.List)):
                continue
            for task in tasks.elts:
                if isinstance(task, ast.Constant) and isinstance(task.value, str):
                    found[task.value] = str(key.value)
    return found


def _converts(tree: ast.Module) -> dict[str, str]:
    """Each task ``_task_to_convert`` returns a constant ``--convert`` for (``if task ==
    "embed" or task == "embedding": return "embed"``)."""
    found: dict[str, str] = {}
    for function in ast.walk(tree):
        if not (isinstance(function, ast.FunctionDef) and function.name == "_task_to_convert"):
            continue
        for node in ast.walk(function):
            if not isinstance(node, ast.If):
                continue
            returned = next(
                (
                    s.value.value
                    for s in node.body
                    if isinstance(s, ast.Return)
                    and isinstance(s.value, ast.Constant)
                    and isinstance(s.value.value, str)
                ),
                None,
            )
            if returned is None:
                continue
            tests = node.test.values if isinstance(node.test, ast.BoolOp) else [node.test]
            for test in tests:
                if (
                    isinstance(test, ast.Compare)
                    and len(test.comparators) == 1
                    and isinstance(test.ops[0], ast.Eq)
                    and isinstance(test.comparators[0], ast.Constant)
                    and isinstance(test.comparators[0].value, str)
                ):
                    found[test.comparators[0].value] = returned
    return found


def task_runners(archive: zipfile.ZipFile, engine: str) -> dict[str, list[str]]:
    """The ``task_runner`` feature of a vLLM release; none where it has no ``_RUNNER_TASKS``."""
    if engine != "vllm":
        return {}
    runners: dict[str, str] = {}
    converts: dict[str, str] = {}
    for _name, _text, tree in modules(archive, _CONFIG, ("_RUNNER_TASKS",)):
        runners |= _runner_tasks(tree)
        converts |= _converts(tree)
    if not runners:
        return {}
    return {
        "task_runner": sorted(
            f"{task}={runner}" + (f"/{converts[task]}" if task in converts else "")
            for task, runner in runners.items()
        )
    }
