"""Attention against stated preference: what the owner says matters, and has not looked at.

An attitude (a stated preference or principle) that names an entity, held since before a
30-day window, while the owner's daily snapshots show no mention of that entity in the
whole window, is a divergence: the owner says it matters, their attention says otherwise.
It is shown on the diary page of that day and reported by the lint (rule
``attention_divergence``). It is a finding for the owner to look at, never a change: the
attitude stays as it is.

An entity is named by an attitude when its name (three characters or more) appears in the
statement as whole words, case and punctuation aside. Days whose window is not fully
covered by snapshots (the start of the history) have no findings: absence of attention
before the history began is not evidence.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import polars as pl

from memvault.profile.interest import attention_frame
from memvault.store import Store
from memvault.store.queries.entities import active_entities
from memvault.store.queries.layers import attitude_spans, attitude_statements
from memvault.store.queries.profile import snapshot_cuts
from memvault.text_tokens import words

WINDOW = 30


def _words(text: str) -> str:
    """The text's words, one space around each (a name matches a statement as whole words)."""
    return f" {' '.join(words(text))} "


@dataclass(frozen=True)
class Divergence:
    day: dt.date
    attitude_id: str
    statement: str
    entity_id: str
    entity_name: str

    def describe(self) -> str:
        return (
            f'you said "{self.statement}", but {self.entity_name} got no attention in the '
            f"last {WINDOW} days"
        )


def named_entities(store: Store) -> dict[str, list[tuple[str, str]]]:
    """Attitude id → the active entities (id, name) its statement names.

    A name matches a run of consecutive words of the statement (whole words, as
    :func:`_words` spells them): each statement's runs are looked up among the names, so the
    cost is the entities once plus the statements' words, not entities times attitudes."""
    attitudes = attitude_statements(store)
    if not attitudes:
        return {}
    by_words: dict[str, list[tuple[int, str, str]]] = {}
    for rank, (eid, name) in enumerate(active_entities(store).select("id", "name").iter_rows()):
        key = _words(name).strip()
        if len(key) >= 3:
            by_words.setdefault(key, []).append((rank, eid, name))
    longest = max((key.count(" ") + 1 for key in by_words), default=0)
    out: dict[str, list[tuple[str, str]]] = {}
    for attitude_id, statement in attitudes:
        tokens = _words(statement).split()
        runs = {
            " ".join(tokens[i : i + n])
            for n in range(1, longest + 1)
            for i in range(len(tokens) - n + 1)
        }
        hits = sorted(hit for run in runs for hit in by_words.get(run, ()))
        if hits:
            out[attitude_id] = [(eid, name) for _, eid, name in hits]
    return out


def divergences(store: Store, days: list[dt.date]) -> dict[dt.date, list[Divergence]]:
    """For each day: the attitudes current at its end, held for the whole window before it,
    naming an entity nobody mentioned in that window."""
    found: dict[dt.date, list[Divergence]] = {day: [] for day in days}
    named = named_entities(store) if days else {}
    if not named:
        return found
    attitudes = attitude_spans(store, sorted(named))
    cuts = {
        (d if isinstance(d, dt.date) else dt.date.fromisoformat(str(d))): known
        for d, known in snapshot_cuts(store, min(days), max(days))
    }
    frame, covered = attention_frame(store, min(days) - dt.timedelta(days=WINDOW - 1), max(days))
    seen = frame.filter(pl.col("n") > 0)
    for day in days:
        start = day - dt.timedelta(days=WINDOW - 1)
        cut = cuts.get(day)
        if cut is None or sum(1 for d in covered if start <= d <= day) < WINDOW:
            continue
        attended = set(seen.filter(pl.col("day").is_between(start, day))["entity_id"].to_list())
        held_since = cut - dt.timedelta(days=WINDOW)
        for row in attitudes.iter_rows(named=True):
            current = row["superseded_at"] is None or row["superseded_at"] > cut
            if not current or row["created_at"] > held_since:
                continue
            found[day] += [
                Divergence(day, row["id"], row["statement"], eid, name)
                for eid, name in named[row["id"]]
                if eid not in attended
            ]
    return found
