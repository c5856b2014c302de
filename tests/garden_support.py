"""Shared pieces of the gardener tests: a demo store, the adapter, and store snapshots."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import memvault
from memvault.embed import make_embedder
from memvault.gardener.adapters.memvault_store import MemvaultGardenStore
from memvault.gardener.ledger import Ledger
from memvault.gardener.run import GardenResult, run_garden
from memvault.gardener.state import GardenConfig
from memvault.gardener.tasks import GARDEN_TASKS
from memvault.ingest import ingest_file
from memvault.judge import HeuristicJudge, Judge, ScriptedJudge
from memvault.normalize import utcnow
from memvault.store import Store
from memvault_demo import DemoConfig, GroundTruth, generate, write_jsonl
from tests.helpers import TEST_NOW

HASHING = make_embedder("hashing")
UNLIMITED = 10**6


def demo_file(directory: Path, sessions: int = 60, days: int = 120) -> tuple[Path, GroundTruth]:
    """A demo history as JSONL (ending now, so decay sees realistic ages)."""
    records, truth = generate(DemoConfig(sessions=sessions, days=days, seed=7, end=TEST_NOW))
    path = directory / f"demo-{sessions}-{days}.jsonl"
    write_jsonl(records, path)
    return path, truth


def seed(store: Store, path: Path) -> None:
    ingest_file(store, str(path))


def a_new_session(
    store: Store,
    directory: Path,
    memories: int,
    *,
    topic: str = "deploys",
    texts: Sequence[str] = (),
) -> str:
    """One session collected now with ``memories`` new short memory items (and one per text of
    ``texts``), through the real ingest path (what the collector does on an active day);
    returns the session id."""
    now = utcnow()
    stamp = now.strftime("%Y%m%dT%H%M%S%f")
    session = f"ses_new_{topic}_{stamp}"
    records: list[dict[str, Any]] = [
        {"type": "session", "id": session, "source": "claude-code", "started_at": now.isoformat(),
         "title": f"Work on {topic}", "project": topic},
        *(
            {"type": "block", "session_id": session, "kind": "memory",
             "text": f"New note {n} about {topic} written on {stamp}: step {n * 3} comes first.",
             "created_at": (now + dt.timedelta(microseconds=n)).isoformat()}
            for n in range(memories)
        ),
        *(
            {"type": "block", "session_id": session, "kind": "memory", "text": text,
             "created_at": (now + dt.timedelta(microseconds=memories + n)).isoformat()}
            for n, text in enumerate(texts)
        ),
    ]  # fmt: skip
    path = directory / f"{session}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    ingest_file(store, str(path))
    return session


def rules_as_a_model() -> ScriptedJudge:
    """A judge that answers every gardener question the way the offline rules do, but counts
    as a model (a stand-in for an LLM): what the gardener does with a model's decisions."""
    return ScriptedJudge({name: task.heuristic for name, task in GARDEN_TASKS.items()})


def adapter(store: Store) -> MemvaultGardenStore:
    return MemvaultGardenStore(store, embedder=HASHING)


def garden(
    store: Store,
    *,
    judge: Judge | None = None,
    mode: str = "tend-and-propose",
    **config: Any,
) -> GardenResult:
    """One run of the ceremony over memvault's own store (the store is its own ledger)."""
    cfg = GardenConfig(mode=mode, **config)  # type: ignore[arg-type]
    return run_garden(Ledger(store), [adapter(store)], judge or HeuristicJudge(), cfg)


def until_clean(store: Store, limit: int = 40, **kwargs: Any) -> list[GardenResult]:
    """Runs repeated until the resume point is clean (fails after ``limit`` runs)."""
    results = []
    for _ in range(limit):
        result = garden(store, **kwargs)
        results.append(result)
        assert result.succeeded, result.outcome.summary + "\n" + result.report
        if all(s.resume_text() == "clean" for s in result.state.stores.values()):
            return results
    raise AssertionError(f"not clean after {limit} runs:\n{results[-1].report}")


MEMORY_TABLES = ("blocks", "triples", "mentions", "entities", "sessions", "diary")


def counts(store: Store) -> dict[str, int]:
    return store.counts((*MEMORY_TABLES, "review_queue", "artifacts"))


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return "<time>"
    return value


def end_state(store: Store) -> dict[str, Any]:
    """The store's content with the clock taken out (times of writes differ between runs)."""
    blocks = store.fetch_df(
        "SELECT id, text, importance, status, parent_id, tags, session_id, "
        "expires_at IS NOT NULL AS expiring FROM blocks ORDER BY id"
    ).to_dicts()
    triples = store.fetch_df(
        "SELECT id, status, invalid_at, superseded_by FROM triples ORDER BY id"
    ).to_dicts()
    # A proposal's id hashes the store's name (its URL): two stores compare by what is proposed.
    proposals = store.fetch_df(
        "SELECT kind, target_id, status, proposal FROM review_queue ORDER BY kind, target_id"
    ).to_dicts()
    for p in proposals:
        body = json.loads(p.pop("proposal"))
        p["related"] = body.get("related")
        p["certain"] = body.get("certain")
    proposals.sort(key=lambda p: (p["kind"], p["target_id"] or "", p["related"] or []))
    mentions = [r[0] for r in store.fetch("SELECT id FROM mentions ORDER BY id")]
    return {
        "blocks": [{k: _plain(v) for k, v in b.items()} for b in blocks],
        "triples": triples,
        "proposals": proposals,
        "mentions": mentions,
    }


@contextmanager
def opened(url: str) -> Iterator[Store]:
    with memvault.open(url) as store:
        yield store


def drop_backup_schemas(url: str) -> None:
    """PostgreSQL snapshots live in schemas beside the test's; remove them with it."""
    if not url.startswith("postgresql"):
        return
    from urllib.parse import parse_qs, urlsplit

    import psycopg

    from tests.helpers import PG_URL

    schema = parse_qs(urlsplit(url).query)["schema"][0]
    with psycopg.connect(PG_URL, autocommit=True) as con:
        rows = con.execute(
            "SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE %s",
            [f"{schema}_bk_%"],
        ).fetchall()
        for (name,) in rows:
            con.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
