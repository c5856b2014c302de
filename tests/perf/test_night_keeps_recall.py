"""A full night on an imported history older than 90 days must not hide it from recall.

Run: ``.venv/bin/pytest tests/perf/test_night_keeps_recall.py -m perf -s``. Four of the
harness's conversations (2022–2024, so every turn is past the frozen threshold) are each
imported into a store of their own; every question is asked before and after the night's
jobs (collect, dream, garden, lint, gaps, layers, tiering, prefetch) run on the store as
the nightly schedule runs them (the code location's jobs, in process), and hit@5 / MRR are
compared. The target: hit@5 falls by at most 0.01.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import numpy as np
import pytest

from memvault.embed import MiniLMEmbedder
from memvault.recall import Recaller
from tests.perf.recall_eval.conversations import Conversation, conversations
from tests.perf.recall_eval.evaluate import CachedEmbedder, _score, build_store

CONVERSATIONS = 4


def _asked(url: str, conv: Conversation, embedder: CachedEmbedder) -> list[dict[str, float]]:
    import memvault

    recaller = Recaller(embedder)  # type: ignore[arg-type]
    with memvault.open(url) as store:
        return [
            _score(
                [
                    h.block_id
                    for h in recaller.recall(
                        store, q.text, limit=10, record=False, facts=False
                    ).results
                ],
                q.gold,
            )
            for q in conv.questions
        ]


def _mean(rows: list[dict[str, float]], metric: str) -> float:
    return float(np.mean([r[metric] for r in rows]))


@pytest.mark.perf
@pytest.mark.timeout(1800)
def test_a_night_on_an_old_import_keeps_what_recall_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.cli.demo import NIGHT
    from pipelines.runner import failures, run_job

    monkeypatch.setenv("MEMVAULT_CLAUDE_PROJECTS", "none")
    embedder = CachedEmbedder(MiniLMEmbedder(), tmp_path / "vectors.npz")
    before: list[dict[str, float]] = []
    after: list[dict[str, float]] = []
    lost_blocks = 0
    tiers: dict[str, int] = {}
    for conv in conversations()[:CONVERSATIONS]:
        build_store(conv, tmp_path, embedder).close()
        url = f"duckdb://{tmp_path / f'{conv.id}.duckdb'}"
        before += _asked(url, conv, embedder)
        with dg.DagsterInstance.ephemeral() as instance:
            for job in NIGHT:
                result = run_job(job, url, instance=instance)
                assert result.success, (job, failures(result))
        after += _asked(url, conv, embedder)
        import memvault

        with memvault.open(url) as store:
            lost_blocks += store.fetch("SELECT count(*) FROM blocks WHERE status <> 'active'")[0][0]
            for tier, n in store.fetch("SELECT tier, count(*) FROM blocks GROUP BY tier"):
                tiers[tier] = tiers.get(tier, 0) + n
            assert store.fetch("SELECT count(*) FROM runs WHERE kind = 'dream'")[0][0] >= 1
    drop = _mean(before, "hit@5") - _mean(after, "hit@5")
    print(
        f"\n{len(before)} questions over {CONVERSATIONS} imported conversations (2022-2024)\n"
        f"hit@5 before the night {_mean(before, 'hit@5'):.3f}, after {_mean(after, 'hit@5'):.3f} "
        f"(drop {drop:+.3f}); MRR {_mean(before, 'MRR'):.3f} -> {_mean(after, 'MRR'):.3f}; "
        f"blocks no longer active after the night: {lost_blocks}; tiers after it: {tiers}"
    )
    assert drop <= 0.01
