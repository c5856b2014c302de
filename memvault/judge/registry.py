"""Every judge task of memvault, by name.

Tasks are defined beside the stage that asks them (extraction in
``judge.tasks``, reflection in ``dream.reflect``, conflicts in
``temporal.conflict.judge``, the gardener's in ``gardener.tasks``); this
module gathers them for the schema files and the prompt tests. It imports
lazily so that no stage pulls in every other one.
"""

from __future__ import annotations

import importlib
from typing import Any

from memvault.judge.tasks import JudgeTask

#: module → names of the JudgeTask constants it defines
TASK_MODULES: dict[str, tuple[str, ...]] = {
    "memvault.judge.tasks": ("EXTRACT_MEMORY",),
    "memvault.dream.reflect": ("REFLECT",),
    "memvault.profile.diary": ("DIARY",),
    "memvault.temporal.conflict.judge": ("RESOLVE_CONFLICT", "CONFIRM_CHANGE"),
    "memvault.lint.semantic": ("DETECT_CONTRADICTION",),
    "memvault.lifecycle.digest": ("TIER_DIGEST",),
    "memvault.gardener.tasks": (
        "DEDUP_CLUSTER",
        "DEDUP_VALIDATE",
        "DEDUP_CONFIRMED",
        "BLOAT_SCAN",
        "BLOAT_SPLIT",
    ),
}


def all_tasks() -> dict[str, JudgeTask[Any, Any]]:
    """Task name → task, for every task memvault asks."""
    tasks: dict[str, JudgeTask[Any, Any]] = {}
    for module_name, names in TASK_MODULES.items():
        module = importlib.import_module(module_name)
        for name in names:
            task = getattr(module, name)
            tasks[task.name] = task
    return tasks
