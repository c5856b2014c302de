"""How the search signals of every block become one score.

Three signals per block: vector similarity to the query (cosine), BM25 of its words, and how
many of the entities the query names it mentions. They live on different scales, and how they
are put on one decides what wins. Dividing BM25 by the best document's score (the old way)
gives a single shared word the full keyword weight: a turn that merely repeats the question
outranks the one that answers it. Here each signal becomes a standard score over the whole
store (how far above the usual a block stands, in standard deviations), so a match counts as
much as it stands out; the two are averaged. Reciprocal-rank fusion was measured too and lost:
a block found by one signal only (the paraphrased answer, found by its vector) falls behind
every block both lists hold (see docs/recall.md).

The entity bonus is small on top: naming a person lifts their memories by a quarter of a clear
match, so it decides between near matches and no more.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Weight of the vector and keyword standard scores (sums to 1). The vector leads a little
#: since it is made of what the query asks without the people it names (speakers.py): 0.6
#: against 0.5 was ahead on both labelled sets (docs/recall.md).
VECTOR_WEIGHT = 0.6
KEYWORD_WEIGHT = 0.4
#: Standard scores are divided by this, so a clear match scores about 1.
Z_SCALE = 4.0
#: The least spread of cosines and of BM25 scores a standard score is taken against (the usual
#: spread of MiniLM cosines; about one common word's BM25 weight).
DENSE_SPREAD = 0.1
KEYWORD_SPREAD = 1.0
#: Bonus per query entity a block mentions (or, for a person, says: see speakers.py). With
#: the people a query names out of its vector (speakers.py), this is what says *who*: 0.25
#: was ahead of 0.15 on both labelled sets (docs/recall.md).
ENTITY_BONUS = 0.25
#: Bonus for a block written on, or meaning, a day the query names ("on 22.01.2024").
DATE_BONUS = 0.15
#: A block needs a keyword match, or a cosine at least this, to be a candidate at all.
MIN_COSINE = 0.1


@dataclass
class Signals:
    """The raw signals of n blocks (aligned arrays)."""

    dense: np.ndarray
    keyword: np.ndarray
    entity: np.ndarray
    has_vector: np.ndarray
    #: 1 for a block written on, or meaning, a day the query names.
    on_day: np.ndarray


def standard(values: np.ndarray, over: np.ndarray | None, spread: float) -> np.ndarray:
    """Standard scores of ``values`` against the blocks where ``over`` (every block when None;
    0 elsewhere). The deviation is taken at least ``spread``: in a store of a few blocks, a
    hair's difference is no reason for a full standard deviation's lead."""
    if over is None or over.all():  # no copy of every block's value (one query, one pass less)
        if not values.shape[0]:
            return np.zeros(0, dtype=np.float64)
        out = values - values.mean()
        out /= float(np.hypot(values.std(), spread))
        return out
    out = np.zeros(values.shape[0], dtype=np.float64)
    if over.any():
        v = values[over]
        sd = float(np.hypot(v.std(), spread))
        out[over] = (v - v.mean()) / sd
    return out


def fuse(s: Signals) -> np.ndarray:
    """One score per block; ``-inf`` for a block with no evidence (no word, stray vector)."""
    base, bonus = fuse_parts(s)
    return base + bonus


def fuse_parts(s: Signals) -> tuple[np.ndarray, np.ndarray]:
    """(what the block says: vector and keyword standard scores, ``-inf`` without evidence;
    who and when it is about: the entity and date bonuses). Kept apart so that a reply lifted
    by its question (context.py) still gets its own speaker's bonus in full."""
    keyword_ok = s.keyword > 0
    evidence = (s.has_vector & (s.dense >= MIN_COSINE)) | keyword_ok
    base = VECTOR_WEIGHT * standard(s.dense, s.has_vector, DENSE_SPREAD)
    base += KEYWORD_WEIGHT * standard(s.keyword, None, KEYWORD_SPREAD)
    base /= Z_SCALE
    base[~evidence] = -np.inf
    bonus = ENTITY_BONUS * s.entity
    if s.on_day.any():
        bonus += DATE_BONUS * s.on_day
    return base, bonus
