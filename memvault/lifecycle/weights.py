"""Usage signals per block, computed from the recall log and the owner's feedback.

Usage is *honoured, not written over the data*: nothing here changes ``importance``. The
lifecycle (tiering, the gardener's decay, the dream's prune) reads these weights instead.

Per block:

* ``access_multiplier`` — how much longer the block's half-life is because it was recalled:
  ``1 + Σ max(0, 1 − a/30)`` over its accesses (``a`` = days since that recall), capped at 10.
  Each recall extends the half-life; the extension wears off linearly over 30 days.
* ``feedback_boost`` — the sum of the owner's +/− on the block (feedback ``kind='boost'``,
  or ``'thumbs'`` as ingested feedback records spell it).
* ``verdict_score`` — the sum of the verdicts of the recalls that returned it (CORRECT +1,
  INCORRECT −1, AMBIGUOUS 0).
* ``retention`` — ``0.5 ** (effective_age / 30)``: 1 for a new block, 0.5 at one effective
  half-life.

The effective age is the age divided by both factors::

    effective_age = age_days / (access_multiplier × feedback_factor)
    feedback_factor = 2 ** clip(feedback_boost + 0.5 × verdict_score, −3, 3)

so one + keeps a block twice as young, one − ages it twice as fast, and no amount of
feedback moves it by more than 8× either way.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from memvault.store import Store
from memvault.store.queries.blocks import block_ages
from memvault.store.queries.recall import boosts_until, recalls_until

#: Days over which one recall's extension of the half-life wears off.
ACCESS_WINDOW_DAYS = 30.0
#: No block's half-life grows more than this by recalls.
MULTIPLIER_CAP = 10.0
#: Feedback moves the effective age by at most 2**3 = 8× either way.
FEEDBACK_EXPONENT_CAP = 3.0
#: A verdict counts half as much as an explicit +/− from the owner.
VERDICT_WEIGHT = 0.5
#: The half-life behind ``retention``.
BASE_HALF_LIFE_DAYS = 30.0

_VERDICTS = {"CORRECT": 1.0, "INCORRECT": -1.0, "AMBIGUOUS": 0.0}
_DAY_US = 86_400_000_000

WEIGHT_COLUMNS = (
    "block_id",
    "access_multiplier",
    "feedback_boost",
    "verdict_score",
    "last_access_at",
    "retention",
)


# -- the pure core -------------------------------------------------------------------------


def access_multiplier(access_ages_days: Sequence[float] | np.ndarray) -> float:
    """``1 + Σ max(0, 1 − a/30)`` over the ages (days) of a block's accesses, capped at 10."""
    ages = np.asarray(access_ages_days, dtype=float)
    ages = ages[ages >= 0]
    gain = np.clip(1.0 - ages / ACCESS_WINDOW_DAYS, 0.0, None).sum()
    return float(min(MULTIPLIER_CAP, 1.0 + gain))


def feedback_factor(feedback_boost: Any, verdict_score: Any) -> Any:
    """``2 ** clip(boost + 0.5 × verdict, −3, 3)``: > 1 keeps a block younger, < 1 ages it."""
    exponent = np.asarray(feedback_boost, dtype=float) + VERDICT_WEIGHT * np.asarray(
        verdict_score, dtype=float
    )
    out = np.power(2.0, np.clip(exponent, -FEEDBACK_EXPONENT_CAP, FEEDBACK_EXPONENT_CAP))
    return float(out) if out.ndim == 0 else out


def effective_age_days(age_days: Any, weights: Mapping[str, Any] | pl.DataFrame) -> Any:
    """The age that counts for tiering and decay: ``age / (access_multiplier × feedback_factor)``.

    ``weights`` holds ``access_multiplier``, ``feedback_boost`` and ``verdict_score`` (a row of
    :func:`block_weights` or the whole frame); missing ones count as neutral. Scalars give a
    float, columns give an array.
    """

    def get(name: str, neutral: float) -> Any:
        if isinstance(weights, pl.DataFrame):
            return (
                weights[name].fill_null(neutral).to_numpy() if name in weights.columns else neutral
            )
        value = weights.get(name)
        return neutral if value is None else value

    multiplier = np.asarray(get("access_multiplier", 1.0), dtype=float)
    factor = feedback_factor(get("feedback_boost", 0.0), get("verdict_score", 0.0))
    age = np.clip(np.asarray(age_days, dtype=float), 0.0, None)
    out = age / (np.maximum(multiplier, 1.0) * factor)
    return float(out) if np.ndim(out) == 0 else out


def retention(effective_age: Any) -> Any:
    """``0.5 ** (effective_age / 30)``."""
    out = np.power(0.5, np.asarray(effective_age, dtype=float) / BASE_HALF_LIFE_DAYS)
    return float(out) if np.ndim(out) == 0 else out


def regained_interest(weights: Mapping[str, Any]) -> bool:
    """Usage says the block is wanted again: a recall in the last 30 days or net positive feedback."""
    boost = float(weights.get("feedback_boost") or 0.0)
    verdict = float(weights.get("verdict_score") or 0.0)
    return (
        float(weights.get("access_multiplier") or 1.0) > 1.0
        or feedback_factor(boost, verdict) > 1.0
    )


# -- from the store ------------------------------------------------------------------------


def _days_before(now: dt.datetime, column: str) -> pl.Expr:
    return (pl.lit(now, dtype=pl.Datetime("us")) - pl.col(column)).dt.total_microseconds() / _DAY_US


def recall_accesses(
    store: Store, now: dt.datetime, block_ids: Sequence[str] | None
) -> pl.DataFrame:
    """One row per (recall, returned block) up to ``now``: block_id, created_at, verdict."""
    recalls = recalls_until(store, now)
    if recalls.is_empty():
        return pl.DataFrame(
            schema={"block_id": pl.Utf8, "created_at": pl.Datetime("us"), "verdict": pl.Float64}
        )
    out = (
        recalls.lazy()
        .select(
            pl.col("created_at").cast(pl.Datetime("us")),
            pl.col("verdict")
            .cast(pl.Utf8)
            .replace_strict(_VERDICTS, default=None, return_dtype=pl.Float64),
            pl.col("result_ids")
            .cast(pl.Utf8)
            .fill_null("[]")
            .str.json_decode(pl.List(pl.Utf8))
            .alias("block_id"),
        )
        .explode("block_id")
        .drop_nulls("block_id")
    )
    if block_ids is not None:
        out = out.filter(pl.col("block_id").is_in(list(block_ids)))
    return out.select("block_id", "created_at", "verdict").collect()


def block_weights(
    store: Store, now: dt.datetime, block_ids: Sequence[str] | None = None
) -> pl.DataFrame:
    """Usage weights of the active blocks (or of ``block_ids``), as of ``now``.

    Columns: block_id, access_multiplier, feedback_boost, verdict_score, last_access_at,
    retention (see the module docstring for the formulas). Reads the recall log, the boosts
    and the blocks' ages; writes nothing.
    """
    blocks = block_ages(store, block_ids)
    schema = {
        "block_id": pl.Utf8,
        "created_at": pl.Datetime("us"),
        "last_accessed_at": pl.Datetime("us"),
    }
    blocks = pl.DataFrame(schema=schema) if blocks.is_empty() else blocks.cast(schema)  # type: ignore[arg-type]
    return weights_frame(
        blocks,
        recall_accesses(store, now, block_ids),
        boosts(store, now, block_ids),
        now,
    )


def boosts(store: Store, now: dt.datetime, block_ids: Sequence[str] | None = None) -> pl.DataFrame:
    """The owner's +/− per block up to ``now`` (``boost`` and ingested ``thumbs``):
    block_id, feedback_boost."""
    frame = boosts_until(store, now, block_ids)
    schema = {"block_id": pl.Utf8, "feedback_boost": pl.Float64}
    return pl.DataFrame(schema=schema) if frame.is_empty() else frame.cast(schema)  # type: ignore[arg-type]


def weights_frame(
    blocks: pl.DataFrame, accesses: pl.DataFrame, boost: pl.DataFrame, now: dt.datetime
) -> pl.DataFrame:
    """The weights from already-read frames (``blocks``: block_id, created_at,
    last_accessed_at; ``accesses``: block_id, created_at, verdict; ``boost``: block_id,
    feedback_boost). Pure: tests and the perf benchmark call it without a store."""
    per_block = (
        accesses.lazy()
        .with_columns(
            gain=(1.0 - _days_before(now, "created_at") / ACCESS_WINDOW_DAYS).clip(0.0, 1.0)
        )
        .group_by("block_id")
        .agg(
            access_gain=pl.col("gain").sum(),
            verdict_score=pl.col("verdict").sum(),
            last_recall_at=pl.col("created_at").max(),
        )
    )
    joined = (
        blocks.lazy()
        .join(per_block, on="block_id", how="left")
        .join(boost.lazy(), on="block_id", how="left")
        .with_columns(
            access_multiplier=(1.0 + pl.col("access_gain").fill_null(0.0)).clip(
                1.0, MULTIPLIER_CAP
            ),
            feedback_boost=pl.col("feedback_boost").fill_null(0.0),
            verdict_score=pl.col("verdict_score").fill_null(0.0),
            last_access_at=pl.max_horizontal("last_recall_at", "last_accessed_at"),
            age_days=_days_before(now, "created_at").clip(0.0, None),
        )
        .collect()
    )
    effective = effective_age_days(joined["age_days"].to_numpy(), joined)
    return joined.with_columns(retention=pl.Series(retention(effective), dtype=pl.Float64)).select(
        WEIGHT_COLUMNS
    )


#: Upper bounds of the multiplier histogram's buckets (the last one holds the cap).
MULTIPLIER_BUCKETS: tuple[float, ...] = (1.0, 2.0, 5.0, MULTIPLIER_CAP)


def weights_summary(weights: pl.DataFrame) -> dict[str, Any]:
    """What the weights say about the store as a whole, for reports: how many blocks use
    reinforces, the spread of the multiplier, and how many blocks feedback lifts or lowers."""
    if weights.is_empty():
        return {
            "blocks": 0,
            "reinforced": 0,
            "at_cap": 0,
            "boosted": 0,
            "penalized": 0,
            "verdict_positive": 0,
            "verdict_negative": 0,
            "multiplier_p50": 1.0,
            "multiplier_p90": 1.0,
            "multiplier_max": 1.0,
            "multiplier_histogram": {},
        }
    m = weights["access_multiplier"]
    labels, lower = {}, 0.0
    for upper in MULTIPLIER_BUCKETS:
        label = "1 (no recent recall)" if upper == 1.0 else f"{lower:g}–{upper:g}"
        count = (
            m.filter((m > lower) & (m <= upper)).len() if upper > 1.0 else m.filter(m <= 1.0).len()
        )
        labels[label] = int(count)
        lower = upper
    return {
        "blocks": weights.height,
        "reinforced": int((m > 1.0).sum()),
        "at_cap": int((m >= MULTIPLIER_CAP).sum()),
        "boosted": int((weights["feedback_boost"] > 0).sum()),
        "penalized": int((weights["feedback_boost"] < 0).sum()),
        "verdict_positive": int((weights["verdict_score"] > 0).sum()),
        "verdict_negative": int((weights["verdict_score"] < 0).sum()),
        "multiplier_p50": round(float(m.quantile(0.5) or 1.0), 3),
        "multiplier_p90": round(float(m.quantile(0.9) or 1.0), 3),
        "multiplier_max": round(float(m.max() or 1.0), 3),  # type: ignore[arg-type]
        "multiplier_histogram": labels,
    }


@dataclass(frozen=True)
class WeightsReport:
    """The weights' summary as a stage reports it (:func:`weights_summary`)."""

    summary: Mapping[str, Any]

    def metadata(self) -> dict[str, Any]:
        """The summary's figures, its histogram as the multiplier's distribution."""
        figures = dict(self.summary)
        histogram = figures.pop("multiplier_histogram")
        return {
            **figures,
            "multiplier_distribution": [
                {"access multiplier": bucket, "blocks": n} for bucket, n in histogram.items()
            ],
        }
