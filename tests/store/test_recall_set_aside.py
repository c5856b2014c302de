"""An owner with many current facts: only the best candidates that state one are read in full,
and the answer (hits and scores) is the one reading every candidate gives."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pytest

from memvault.embed import HashingEmbedder
from memvault.recall import Recaller
from memvault.recall import recaller as module
from memvault.records import (
    BlockRecord,
    EntityRecord,
    MentionRecord,
    Record,
    SessionRecord,
    TripleRecord,
)
from memvault.store import Store
from memvault.vectors import embed_missing
from tests.recall_support import T0, add_records

TOOLS = ["pytest", "ruff", "mypy", "docker", "terraform", "grafana", "redis", "kafka"]


def _tools_store(store: Store, tmp_path: Path, seed: int) -> None:
    """Ada uses 60 tools, each said in its own block (a triple linked to it), some with the
    owner's feedback, among notes that state nothing."""
    rng = random.Random(seed)
    out: list[Record] = [
        SessionRecord(id="s1", started_at=T0 - dt.timedelta(days=3), title="tools"),
        EntityRecord(id="ent_ada", name="Ada Lovelace", entity_type="person"),
    ]
    for k in range(80):
        at = T0 - dt.timedelta(days=2) + dt.timedelta(minutes=k)
        tool = f"{rng.choice(TOOLS)}-{k}"
        text = (
            f"Ada uses {tool} for testing the {rng.choice(TOOLS)} service."
            if k < 60
            else f"Which tools does Ada use for testing? Notes on {rng.choice(TOOLS)}, testing tools."
        )
        out += [
            BlockRecord(id=f"b{k:03d}", session_id="s1", text=text, created_at=at),
            MentionRecord(entity="ent_ada", block_id=f"b{k:03d}", session_id="s1", mentioned_at=at),
        ]
        if k < 60:
            out.append(
                TripleRecord(subject="ent_ada", predicate="uses_tool", object=tool,
                             created_at=at, source_session="s1", source_block=f"b{k:03d}")
            )  # fmt: skip
    add_records(store, out, tmp_path / "h.jsonl")
    with store.mutation("test-feedback", "setup") as m:
        for k in rng.sample(range(80), 12):
            m.update(
                "blocks",
                f"b{k:03d}",
                {"feedback_score": rng.choice([-3, -1, 1, 2, 5])},
                action="feedback",
            )
    embed_missing(store, HashingEmbedder(), kinds=("block",))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_setting_aside_changes_neither_hits_nor_scores(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    _tools_store(store, tmp_path, seed)
    question = "which tools does Ada use for testing"
    hidden: list[dict[str, float]] = []
    set_aside = module.Recaller.set_aside

    def spy(*args: object) -> tuple[list[tuple[str, float]], dict[str, float]]:
        out = set_aside(*args)  # type: ignore[arg-type]
        hidden.append(out[1])
        return out

    def read_all(_s: object, _c: object, cands: list[tuple[str, float]], _k: int) -> tuple[list[tuple[str, float]], dict[str, float]]:  # fmt: skip
        return cands, {}

    for limit in (1, 3, 10):
        monkeypatch.setattr(module.Recaller, "set_aside", staticmethod(spy))
        fast = Recaller(HashingEmbedder(), refresh_seconds=0).recall(store, question, limit=limit, record=False)  # fmt: skip
        monkeypatch.setattr(module.Recaller, "set_aside", staticmethod(read_all))
        full = Recaller(HashingEmbedder(), refresh_seconds=0).recall(store, question, limit=limit, record=False)  # fmt: skip
        assert [(h.block_id, h.score) for h in fast.results] == [
            (h.block_id, h.score) for h in full.results
        ]
        assert fast.facts == full.facts
    assert all(hidden), "nothing was set aside: the test would not test it"
