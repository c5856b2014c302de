"""Answers to questions: a reply is also scored by the question it answers.

In a conversation the answer is often the reply to the other speaker's question ("What did
you name the kitten?" — "Noodle, because of her fur."): the reply shares nothing with a
question about it, the turn before it everything. A block that follows, in the same session,
a question (a text ending in "?") by another speaker gains a share of that question's score.
Lifting every neighbour alike was measured and lost (docs/recall.md): it lifts the chatter
around every match as much as the answer; so did lifting the bubbles of one message sent in
several (the same speaker within two minutes).

A question asks for what the query asks about; it does not tell it. It shares the query's
words ("Which race did you run?") yet rarely holds the answer, so a block that is a question
ranks at ``QUESTION_FACTOR`` of its score — after its reply has taken its share of the full
score.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from memvault.recall.speakers import speaker
from memvault.store import Store
from memvault.store.queries.recall import session_turns

#: The share of the question's score its reply gains.
REPLY_SHARE = 0.5
#: What a question keeps of its (positive) score.
QUESTION_FACTOR = 0.8


def _replies(blocks: pl.DataFrame) -> list[tuple[str, str]]:
    """(reply id, question id) among ``blocks`` (id, session_id, created_at, text): each block
    that follows, in its session, a question by another speaker."""
    frame = (
        blocks.sort("session_id", "created_at", "id")
        .with_columns(
            prev=pl.col("id").shift(1).over("session_id"),
            prev_text=pl.col("text").shift(1).over("session_id"),
        )
        .filter(
            pl.col("prev").is_not_null()
            & pl.col("prev_text").str.strip_chars_end().str.ends_with("?")
        )
    )
    return [
        (reply, question)
        for reply, question, text, asked in frame.select("id", "prev", "text", "prev_text").iter_rows()
        if speaker(asked) != speaker(text) or speaker(text) is None
    ]  # fmt: skip


def questions_answered(store: Store, ids: list[str]) -> np.ndarray:
    """For each of ``ids``, the position (in ``ids``) of the question it replies to, or -1."""
    out = np.full(len(ids), -1, dtype=np.int64)
    if not ids:
        return out
    blocks = session_turns(store)
    if not blocks.height:  # (an empty result has no column types on PostgreSQL)
        return out
    row = {b: i for i, b in enumerate(ids)}
    for reply, question in _replies(blocks.filter(pl.col("id").is_in(ids))):
        out[row[reply]] = row[question]
    return out


def replies_in_sessions(store: Store, sessions: list[str]) -> dict[str, str | None]:
    """Every active block of ``sessions`` with the question it replies to (None: none), as
    :func:`questions_answered` links them: what a long-lived index re-reads for the sessions
    that changed instead of every session."""
    if not sessions:
        return {}
    blocks = session_turns(store, sessions)
    if not blocks.height:
        return {}
    out: dict[str, str | None] = dict.fromkeys(blocks["id"].to_list())
    out.update(_replies(blocks))
    return out


def with_replies(total: np.ndarray, asked: np.ndarray) -> np.ndarray:
    """A reply's score: its own when positive (a reply sharing nothing with the query is no
    evidence against it) plus ``REPLY_SHARE`` of the positive score of the question it
    answers; other blocks keep their score. Only the replies' rows are worked on."""
    replies = np.flatnonzero(asked >= 0)
    if not total.size or not replies.size:
        return total
    lift = REPLY_SHARE * _positive(total[asked[replies]])
    lifted = lift > 0
    rows = replies[lifted]
    out = total.copy()
    out[rows] = _positive(total[rows]) + lift[lifted]
    return out


def _positive(scores: np.ndarray) -> np.ndarray:
    """``scores`` below 0, or without evidence (``-inf``), as 0."""
    return np.clip(np.where(np.isfinite(scores), scores, 0.0), 0.0, None)


def is_question(text: str) -> bool:
    """Whether a block asks (its text ends in a question mark)."""
    return text.rstrip().endswith("?")


def with_questions_lowered(total: np.ndarray, question: np.ndarray) -> np.ndarray:
    """``total`` with the positive scores of the questions times ``QUESTION_FACTOR`` (a new
    array: the caller adds to it in place)."""
    out = total.copy()
    asks = question & (total > 0)
    out[asks] *= QUESTION_FACTOR
    return out
