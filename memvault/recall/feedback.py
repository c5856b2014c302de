"""The owner's word on a recall: a verdict on the whole answer, or + / − on its blocks.

``correct`` / ``incorrect`` / ``ambiguous`` set the recall's verdict (a
``feedback`` row of kind ``verdict`` valued +1 / −1 / 0, and ``recall_log.verdict``
with ``verdict_at``); two ``incorrect`` on the same question make a knowledge
gap. ``+`` / ``-`` write one ``boost`` row (+1 / −1) per block — the one named,
or every block the recall returned — and keep ``blocks.feedback_score`` equal to
the sum of that block's boosts. Nothing is written when the recall, the verdict
or the block is unknown. One feedback is one run (kind ``feedback``), so it can
be undone.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from memvault.errors import MemvaultError
from memvault.ids import new_run_id
from memvault.normalize import utcnow
from memvault.store import Store
from memvault.store.queries.recall import boost_sums, recalled_results

#: Verdict word → (recall_log.verdict, feedback value).
VERDICTS: dict[str, tuple[str, int]] = {
    "correct": ("CORRECT", 1),
    "incorrect": ("INCORRECT", -1),
    "ambiguous": ("AMBIGUOUS", 0),
}
#: Boost sign → feedback value.
BOOSTS: dict[str, int] = {"+": 1, "-": -1}
ACCEPTED = "correct, incorrect, ambiguous, + or -"


class FeedbackError(MemvaultError):
    """Feedback that cannot be recorded as given (nothing was written)."""


@dataclass
class FeedbackReport:
    run_id: str
    recall_id: str
    verdict: str
    feedback_ids: list[str] = field(default_factory=list)
    feedback_scores: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def feedback(
    store: Store,
    recall_id: str,
    verdict: str,
    *,
    block_id: str | None = None,
    note: str | None = None,
    now: dt.datetime | None = None,
    run_id: str | None = None,
) -> FeedbackReport:
    """Record the owner's verdict (correct|incorrect|ambiguous) or boost (+|-) on a recall
    (as run ``run_id`` when given: ``memvault serve`` names the run before it writes)."""
    word = verdict.strip().lower()
    if word not in VERDICTS and word not in BOOSTS:
        raise FeedbackError(f"unknown verdict {verdict!r}: use {ACCEPTED}")
    found = recalled_results(store, recall_id)
    if found is None:
        raise FeedbackError(
            f"no recall with id {recall_id!r} (the recall id is printed by `memvault recall`)"
        )
    results: list[str] = json.loads(found[0] or "[]")
    session_id = found[1]
    if block_id is not None and word in VERDICTS:
        raise FeedbackError("--block goes with + or -; a verdict judges the whole recall")
    if block_id is not None and block_id not in results:
        raise FeedbackError(f"recall {recall_id} did not return block {block_id!r}")
    now = now or utcnow()
    run_id = run_id or new_run_id("feedback")
    report = FeedbackReport(run_id=run_id, recall_id=recall_id, verdict=word)
    with store.mutation(run_id, "feedback") as m:
        store.record_run(run_id, "feedback", now, {"recall_id": recall_id, "verdict": word})
        if word in VERDICTS:
            label, value = VERDICTS[word]
            targets = [(recall_id, "verdict", value)]
            m.update(
                "recall_log", recall_id, {"verdict": label, "verdict_at": now},
                action="verdict", reason=f"owner said {word}",
            )  # fmt: skip
        else:
            blocks = [block_id] if block_id is not None else results
            if not blocks:
                raise FeedbackError(f"recall {recall_id} returned no block to rate")
            targets = [(b, "boost", BOOSTS[word]) for b in blocks]
        frame = pl.DataFrame(
            {
                "id": [f"{run_id}:{k}" for k in range(len(targets))],
                "target_id": [t for t, _, _ in targets],
                "kind": [k for _, k, _ in targets],
                "value": [float(v) for _, _, v in targets],
                "session_id": [session_id] * len(targets),
                "note": [note] * len(targets),
                "created_at": [now] * len(targets),
            },
            schema_overrides={"session_id": pl.Utf8, "note": pl.Utf8},
        )
        report.feedback_ids = m.insert("feedback", frame, action="feedback", reason=f"owner said {word}")  # fmt: skip
        if word in BOOSTS:
            sums = boost_sums(store, [t for t, _, _ in targets])
            m.update_many(
                "blocks", sums, action="feedback-score", reason="sum of the owner's boosts"
            )
            report.feedback_scores = dict(zip(sums["id"], sums["feedback_score"], strict=True))
    return report
