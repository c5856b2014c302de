"""The suite never reads what a user leaves behind: the checkout's ``.dagster/`` and
``.memvault/`` (``memvault demo`` writes both), ``MEMVAULT_*``/``DAGSTER_HOME`` in the shell,
``~/.claude/projects``."""

from __future__ import annotations

import os
from pathlib import Path

from memvault.config import claude_projects_dir, inbox_dir, store_url
from memvault.profile.settings import DEFAULT_START, ProfileSettings, settings_file

ROOT = Path(__file__).parents[2].resolve()


def _outside_checkout(path: str | Path) -> bool:
    return not Path(path).resolve().is_relative_to(ROOT)


def test_the_instance_the_store_and_the_inbox_are_this_process_own() -> None:
    assert _outside_checkout(os.environ["DAGSTER_HOME"])
    assert _outside_checkout(settings_file())
    assert _outside_checkout(store_url(None).removeprefix("duckdb://"))
    assert _outside_checkout(inbox_dir())


def test_the_profile_starts_where_the_defaults_say_not_where_a_demo_left_it() -> None:
    assert ProfileSettings.from_env().start == DEFAULT_START


def test_no_transcripts_of_the_user_are_found() -> None:
    # The home is the test process's own (beside its instance), with no ~/.claude in it.
    assert Path.home().parent == Path(os.environ["DAGSTER_HOME"]).parent
    assert claude_projects_dir() is None
