"""Helpers shared by the test modules (fixtures live in conftest.py)."""

from __future__ import annotations

import datetime as dt
import io
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from memvault.export import write_export
from memvault.store import Store

PG_URL = os.environ.get("MEMVAULT_TEST_PG", "postgresql://root@127.0.0.1:5432/test")
IN_CI = os.environ.get("CI", "").lower() == "true"
FIXTURES = Path(__file__).parent / "fixtures"


def _test_now() -> dt.datetime:
    """``MEMVAULT_TEST_TODAY`` (a date, or a date and time in UTC), else 2026-12-05 10:00."""
    raw = os.environ.get("MEMVAULT_TEST_TODAY", "").strip() or "2026-12-05"
    moment = dt.datetime.fromisoformat(raw.removesuffix("Z"))
    if len(raw) <= 10:
        moment = moment.replace(hour=10)
    return moment.replace(tzinfo=None)


#: The moment the tests take for now, whatever day they run: every generated history ends
#: here and memvault's clock (``MEMVAULT_CLOCK_SHIFT``, set by conftest.py for this process and
#: every process it starts) reads it when the test process starts. ``MEMVAULT_TEST_TODAY``
#: moves it; ``.ci/run`` runs the tests that build histories at two other dates too, so a
#: test that depends on the day fails the day it is written.
TEST_NOW = _test_now()

#: Internal clause ids (D1, T3, GD5, GD-S3, design.md §…) mean nothing to a reader.
CLAUSE = re.compile(r"\b(?:[DTLEASRPGBO]\d|GD\d|GD-S\d|SPEC)\b|§")
#: Skill levels are a product word the owner sees ("can teach (L3)"); lint layers are not.
_SKILL_LEVEL = re.compile(
    r"\b(?:heard of|have done|can teach)\W{0,3}L[1-3]\b|\bL[1-3]\W{0,3}(?:heard of|have done|can teach)"
)


def internal_codes(text: str, names: Iterable[str] = ()) -> list[str]:
    """The internal clause ids in text a user reads (skill levels named with their words are
    allowed, and so are ``names``: the store's own entities, such as the tool "S3")."""
    for name in sorted(names, key=len, reverse=True):
        text = text.replace(name, "")
    return [m.group(0) for m in CLAUSE.finditer(_SKILL_LEVEL.sub("", text))]


def require_service(available: bool, what: str) -> None:
    """Skip on a laptop without the service; fail under CI=true."""
    if available:
        return
    if IN_CI:
        pytest.fail(f"{what} is required under CI=true but is not available")
    pytest.skip(f"{what} not available")


def export_text(store: Store) -> str:
    """The store's full export, as the text `memvault export` writes."""
    out = io.StringIO()
    write_export(store, out)
    return out.getvalue()


def table_dump(store: Store, table: str) -> list[dict]:
    """Every row of a table, ordered by id: for exact before/after comparisons."""
    return store.read_table(table).to_dicts()


def asset_metadata(result: Any, key: str) -> dict[str, Any]:
    """The metadata (plain values) of asset ``key``'s materialization in a run result."""
    from pipelines.runner import materializations

    found = materializations(result)
    if key not in found:
        raise AssertionError(f"{key} was not materialized")
    return found[key]


#: Environment the CLI reads or sets (its global options set the MEMVAULT_* ones for the
#: process); CLI tests start without them and leave none behind.
CLI_ENVIRONMENT = (
    "MEMVAULT_STORE",
    "DAGSTER_HOME",
    "MEMVAULT_LLM_BASE_URL",
    "MEMVAULT_LLM_MODEL",
    "MEMVAULT_LLM_ESCALATION_MODEL",
    "MEMVAULT_EMBEDDER",
    "MEMVAULT_PROFILE_START",
    "MEMVAULT_TIMEZONE",
    "MEMVAULT_PROFILE_BATCH_DAYS",
)


def clear_cli_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset ``CLI_ENVIRONMENT`` for a test and make sure none of it outlives the test.

    (``monkeypatch.delenv`` of an unset variable records nothing to undo, so a value the
    CLI sets during the test would leak; setting it first records "unset" as the original.)
    """
    for var in CLI_ENVIRONMENT:
        monkeypatch.setenv(var, "")
        monkeypatch.delenv(var)
