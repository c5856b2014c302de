"""A tiered store moved by export and ingest keeps its originals (both backends).

An old conversation goes frozen (each turn's text becomes a one-line headline, its full text
goes to ``block_originals``). Exported and ingested into a fresh store, every block keeps its
digest and digest kind, every original comes along: ``memvault show --original`` prints it
and a recall made of its rare words finds the block, as in the store it came from. The
import is one audited run that undo takes back whole; an export written before originals
were exported still ingests.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import memvault
from memvault.embed import HashingEmbedder
from memvault.errors import IngestError
from memvault.ingest import ingest_file
from memvault.judge import HeuristicJudge
from memvault.lifecycle.tiering import run_tiering
from memvault.normalize import utcnow
from memvault.recall import Recaller
from memvault.store import Store
from memvault.store.audit import undo_run
from pipelines.cli.app import app
from tests.conftest import _drop_schema
from tests.helpers import PG_URL, clear_cli_environment, export_text, table_dump
from tests.old_history import add_history, hit_at, questions

EMBEDDER = HashingEmbedder()


@pytest.fixture
def fresh_url(store_url: str, tmp_path: Path) -> Iterator[str]:
    """An empty second store on the backend of ``store_url``."""
    if store_url.startswith("duckdb://"):
        yield f"duckdb://{tmp_path / 'fresh.duckdb'}"
        return
    schema = f"mvtest_{secrets.token_hex(4)}"
    yield f"{PG_URL}?schema={schema}"
    _drop_schema(schema)


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    clear_cli_environment(monkeypatch)
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing")


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _tiered(url: str) -> dict[str, str]:
    """The old conversation, frozen in one tiering pass; id → original text."""
    with memvault.open(url) as store:
        texts = add_history(store)
        result = run_tiering(store, HeuristicJudge(), now=utcnow())
        assert result.summary()["tiers_after"]["frozen"] == len(texts)
        assert result.summary()["originals_kept"] == len(texts)
    return texts


def _blocks(store: Store) -> list[dict]:
    return table_dump(store, "blocks")


def _rare_words_query(store: Store, block_id: str) -> str:
    """A query of words only the original of ``block_id`` holds (not its digest)."""
    text = store.get_row("block_originals", block_id)["text"]  # type: ignore[index]
    digest = store.get_row("blocks", block_id)["text"]  # type: ignore[index]
    activity, place = text.split(" tried ")[1].split(" ")[0], text.split(" in ")[-1].split(",")[0]
    assert activity not in digest and place not in digest
    return f"{activity} {place}"


def test_export_then_ingest_keeps_originals_findable_and_shown(
    cli: None, store_url: str, fresh_url: str, tmp_path: Path
) -> None:
    texts = _tiered(store_url)
    dump = tmp_path / "moved.jsonl"
    code, _, err = _cli("export", "--store", store_url, "-o", str(dump))
    assert code == 0, err
    records = [json.loads(line) for line in dump.read_text().splitlines()]
    kept = [r for r in records if r["type"] == "original"]
    assert {r["id"]: r["text"] for r in kept} == texts
    assert {r["digest_kind"] for r in records if r["type"] == "block"} == {"headline"}

    code, out, err = _cli("ingest", str(dump), "--store", fresh_url)
    assert code == 0, err
    assert "60 original" in out

    with memvault.open(store_url) as source, memvault.open(fresh_url) as fresh:
        # Everything the source had, the same: digests, digest kinds, tier times, originals.
        assert _blocks(fresh) == _blocks(source)
        assert table_dump(fresh, "block_originals") == table_dump(source, "block_originals")
        assert export_text(fresh) == export_text(source)  # and it round-trips byte for byte

        # Found by the original's words, in the moved store as in the source.
        _, answer = questions()[0]
        assert hit_at(fresh, Recaller(EMBEDDER)) == hit_at(source, Recaller(EMBEDDER)) >= 0.9
        for block_id in ("turn-07", answer):
            query = _rare_words_query(fresh, block_id)
            hits = Recaller(EMBEDDER).recall(fresh, query, limit=3, record=False).results
            assert hits[0].block_id == block_id, (query, [h.block_id for h in hits])
            assert hits[0].original_archived and hits[0].digest_kind == "headline"
            assert hits[0].text != texts[block_id]  # shown: the digest

        # Tiering the moved store again has nothing to do: the digest kinds came along.
        again = run_tiering(fresh, HeuristicJudge(), now=utcnow())
        assert again.written == 0
        assert table_dump(fresh, "block_originals") == table_dump(source, "block_originals")

    code, out, err = _cli("show", answer, "--original", "--store", fresh_url)
    assert code == 0, err
    assert out == texts[answer] + "\n"
    code, out, err = _cli("show", answer, "--store", fresh_url)
    assert code == 0 and "frozen, headline digest" in out and "original archived" in out


def test_the_import_is_audited_idempotent_and_undone_whole(
    store_url: str, fresh_url: str, tmp_path: Path
) -> None:
    texts = _tiered(store_url)
    dump = tmp_path / "moved.jsonl"
    with memvault.open(store_url) as source:
        dump.write_text(export_text(source))
    with memvault.open(fresh_url) as fresh:
        report = ingest_file(fresh, dump)
        assert report.inserted["original"] == len(texts)
        audited = fresh.fetch(
            "SELECT target_id, before_image FROM audit_log WHERE run_id = :r "
            "AND target_table = 'block_originals'",
            {"r": report.run_id},
        )
        assert sorted(r[0] for r in audited) == sorted(texts)
        assert all(r[1] is None for r in audited)  # an insert: nothing was there before

        again = ingest_file(fresh, dump, force=True)
        assert again.inserted["original"] == 0 and again.existing["original"] == len(texts)

        undo_run(fresh, report.run_id)
        assert fresh.counts()["blocks"] == 0
        assert fresh.fetch("SELECT count(*) FROM block_originals")[0][0] == 0


def test_an_export_from_before_originals_were_exported_still_ingests(
    store_url: str, fresh_url: str, tmp_path: Path
) -> None:
    texts = _tiered(store_url)
    with memvault.open(store_url) as source:
        lines = [json.loads(line) for line in export_text(source).splitlines()]
    old = tmp_path / "old.jsonl"
    with old.open("w") as fh:
        for record in lines:
            if record["type"] == "original":
                continue
            record.pop("digest_kind", None)
            record.pop("tiered_at", None)
            fh.write(json.dumps(record) + "\n")
    with memvault.open(fresh_url) as fresh:
        report = ingest_file(fresh, old)
        assert report.inserted["block"] == len(texts) and report.inserted["original"] == 0
        row = fresh.get_row("blocks", "turn-00")
        assert row is not None and row["digest_kind"] is None and row["tier"] == "frozen"


def test_an_original_of_an_unknown_block_is_refused(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(
        json.dumps(
            {
                "type": "original",
                "id": "blk-nowhere",
                "text": "the full text",
                "digested_at": "2026-02-01T10:00:00Z",
            }
        )
        + "\n"
    )
    with pytest.raises(IngestError, match=r"bad\.jsonl:1: unknown block 'blk-nowhere'"):
        ingest_file(store, path)
    assert store.fetch("SELECT count(*) FROM block_originals")[0][0] == 0
