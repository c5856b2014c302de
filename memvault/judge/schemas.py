"""Write each task's reply schema beside its prompt: ``python -m memvault.judge.schemas``.

The files ``prompts/<task>.schema.json`` let a reader of a prompt see the
exact reply format; a test keeps them equal to the reply models, so run this
after changing a reply model. ``--check`` only reports files that differ.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from memvault.judge.registry import all_tasks
from memvault.judge.tasks import JudgeTask
from memvault.paths import data_dir


def schema_path(task: JudgeTask[Any, Any]) -> Path:
    """Where a task's schema file lives."""
    return data_dir("prompts") / f"{task.name}.schema.json"


def schema_text(task: JudgeTask[Any, Any]) -> str:
    """The schema file's content for a task."""
    return json.dumps(task.reply_model.model_json_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 on drift")
    args = parser.parse_args(argv)
    stale = []
    for task in all_tasks().values():
        path = schema_path(task)
        text = schema_text(task)
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    if args.check and stale:
        print("out of date: " + ", ".join(str(p) for p in stale))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
