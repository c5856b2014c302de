"""Recall quality on our own labelled conversations (tests/perf/recall_eval), three systems in one run.

Run: ``.venv/bin/pytest tests/perf/test_recall_quality.py -m perf -s``. Prints hit@5,
recall@5, recall@10 and MRR per question type and overall for memvault.recall, a library
BM25 (rank-bm25) and dense-only retrieval over the same MiniLM vectors. Generation is seeded;
the ~4k MiniLM vectors take about half a minute on two cores.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.perf.recall_eval.conversations import conversations
from tests.perf.recall_eval.evaluate import evaluate, table


def test_the_generated_set_is_deterministic_and_large_enough() -> None:
    first, again = conversations(), conversations()
    assert [q.text for c in first for q in c.questions] == [q.text for c in again for q in c.questions]  # fmt: skip
    assert sum(len(c.questions) for c in first) >= 500
    turns = {t.id for c in first for t in c.turns}
    assert all(g in turns for c in first for q in c.questions for g in q.gold)


@pytest.mark.perf
@pytest.mark.timeout(900)
def test_recall_quality_against_bm25_and_dense(tmp_path: Path) -> None:
    result = evaluate(tmp_path)
    print("\n" + table(result))
    assert result["memvault"]["all"]["hit@5"] >= result["bm25"]["all"]["hit@5"]
