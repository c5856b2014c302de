"""No SQL is built from user-controlled text: store paths, schema names and URLs are quoted,
checked or passed as parameters, one test per place that could take them."""

from __future__ import annotations

from pathlib import Path

import pytest

import memvault
from memvault.errors import StoreError
from memvault.gardener.adapters.memvault_store import MemvaultGardenStore, restore_backup
from memvault.gardener.capabilities import survey
from memvault.store.backends import sql_literal
from tests.helpers import export_text
from tests.store.temporal_history import History

HOSTILE_DIRS = [
    "o'brien's memories",
    "evil'; DROP TABLE triples; --",
    "x' (FORMAT csv); CREATE TABLE pwned (a INTEGER); --",
]


def _small(url: str, tmp_path: Path) -> None:
    h = History()
    h.entity("ada", "Ada Lovelace")
    h.fact("t1", "ada", "lives_in", "London", valid="2024-01-01", created="2024-01-01")
    with memvault.open(url) as store:
        h.ingest(store, tmp_path)


@pytest.mark.parametrize("folder", HOSTILE_DIRS)
def test_a_duckdb_snapshot_of_a_store_whose_path_holds_quotes(tmp_path: Path, folder: str) -> None:
    home = tmp_path / folder
    url = f"duckdb://{home / 'store.duckdb'}"
    _small(url, tmp_path)
    with memvault.open(url) as store:
        before = export_text(store)
        garden = MemvaultGardenStore(store)
        garden.bind(survey(garden.name, garden.tools()).mapping)
        ref = garden.backup("garden-run'1")
        # Nothing was dropped or created by the path, and the snapshot holds the store.
        tables = {r[0] for r in store.fetch("SELECT table_name FROM information_schema.tables")}
        assert "triples" in tables and "pwned" not in tables
        assert export_text(store) == before
    restored_url = f"duckdb://{tmp_path / ('copy ' + folder) / 'restored.duckdb'}"
    with restore_backup(ref, restored_url) as restored:
        assert export_text(restored) == before


def test_sql_literal_quotes_and_refuses_nul() -> None:
    assert sql_literal("a'b") == "'a''b'"
    with pytest.raises(StoreError):
        sql_literal("a\x00b")


@pytest.mark.parametrize(
    "schema", ["memvault; DROP TABLE x", "a b", "x'y", 'x"y', "1abc", "memvault--"]
)
def test_a_postgres_schema_name_from_the_url_is_checked_not_spliced(schema: str) -> None:
    from urllib.parse import quote

    with pytest.raises(StoreError, match="not a valid SQL identifier"):
        memvault.open(f"postgresql://root@127.0.0.1:5432/test?schema={quote(schema)}")
