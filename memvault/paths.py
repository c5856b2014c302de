"""Where memvault's own data files (sql/, prompts/, bundled model files) live.

In a source checkout (the editable install the README uses) they are the
repository's top-level folders; in a wheel they are packed under
``memvault/_data``.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The folder ``sql`` or ``prompts``, wherever this installation keeps it."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"memvault data folder {name!r} not found next to {_PACKAGE}")


def sql_text(relative: str) -> str:
    """The text of a file under sql/, e.g. ``queries/store_counts.sql``."""
    return (data_dir("sql") / relative).read_text(encoding="utf-8")


def data_file(name: str) -> Path:
    """A top-level data file such as ``dagster.yaml``, wherever this installation keeps it."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"memvault data file {name!r} not found next to {_PACKAGE}")
