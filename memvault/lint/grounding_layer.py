"""L2 grounding: every fact against its predicate's definition, and what the data says the
definitions got wrong.

* ``grounding`` — a fact breaks its definition (unknown predicate, subject or object of a
  type outside the domain or range, a literal of the wrong type or not among the allowed);
* ``volatile_predicate`` — a predicate declared stable whose value changes for many of its
  subjects (the definition should say volatile, or the data is wrong);
* ``stale_entity`` — an active entity whose facts are all retired and that nothing
  mentions: proposed for archiving (the dream archives only entities with no fact at all);
* ``attention_divergence`` — a stated preference naming something the owner has not
  attended to for 30 days (the latest profiled day; :mod:`memvault.profile.stated`).
"""

from __future__ import annotations

import polars as pl

from memvault.lint.findings import Finding, LintReport
from memvault.lint.scope import Changed
from memvault.profile.stated import WINDOW, divergences
from memvault.store import Store
from memvault.store.queries.entities import entities_with_only_retired_facts
from memvault.store.queries.profile import latest_profile_day
from memvault.store.queries.triples import values_per_subject
from memvault.temporal.grounding import Grounding, grounding_violations

RULES = ("grounding", "volatile_predicate", "stale_entity", "attention_divergence")
#: A stable predicate whose subjects change their value this often is reported.
CHANGE_RATE = 0.3
MIN_SUBJECTS = 3


def stale_entities(store: Store, ids: list[str] | None = None) -> pl.DataFrame:
    """Active entities whose facts are all retired and that nothing mentions: id, name (of
    ``ids`` only, when given)."""
    return entities_with_only_retired_facts(store, ids)


def volatile_predicates(
    store: Store, grounding: Grounding, predicates: frozenset[str] | None = None
) -> list[Finding]:
    """Stable predicates whose value changes for many subjects (of ``predicates`` only, when
    given)."""
    stable = sorted(
        p.name
        for p in grounding.predicates.values()
        if p.is_functional and not p.is_volatile and (predicates is None or p.name in predicates)
    )
    if not stable:
        return []
    rows = values_per_subject(store, stable)
    if rows.is_empty():
        return []
    rates = rows.group_by("predicate").agg(
        pl.len().alias("subjects"), (pl.col("objects") > 1).sum().alias("changed")
    )
    return [
        Finding(
            layer="L2",
            rule="volatile_predicate",
            subject=r["predicate"],
            evidence={
                "subjects": r["subjects"],
                "changed": r["changed"],
                "rate": round(r["changed"] / r["subjects"], 3),
            },
            severity="warning",
        )
        for r in rates.iter_rows(named=True)
        if r["subjects"] >= MIN_SUBJECTS and r["changed"] / r["subjects"] >= CHANGE_RATE
    ]


def lint_grounding(
    store: Store, grounding: Grounding | None = None, changed: Changed | None = None
) -> LintReport:
    """Every rule on the whole store, or (``changed``) on what changed since the last lint."""
    grounding = grounding or Grounding.load()
    report = LintReport("L2")
    if changed is not None:
        report.checked = {
            "grounding": changed.triples,
            "volatile_predicate": changed.predicates,
            "stale_entity": changed.entities,
            "attention_divergence": None,  # read again whole every time
        }
    violations = grounding_violations(
        store, grounding, None if changed is None else sorted(changed.triples)
    )
    report.findings += [
        Finding(layer="L2", rule="grounding", subject=r["triple_id"],
                evidence={"predicate": r["predicate"], "problem": r["problem"]}, severity="error")
        for r in violations.iter_rows(named=True)
    ]  # fmt: skip
    report.findings += volatile_predicates(
        store, grounding, None if changed is None else changed.predicates
    )
    stale = stale_entities(store, None if changed is None else sorted(changed.entities))
    report.findings += [
        Finding(layer="L2", rule="stale_entity", subject=r["id"],
                evidence={"name": r["name"], "proposal": "archive"}, severity="info")
        for r in stale.iter_rows(named=True)
    ]  # fmt: skip
    report.findings += attention_divergences(store)
    return report


def attention_divergences(store: Store) -> list[Finding]:
    """The latest profiled day's attitudes that name something the owner has not attended to
    for a whole window (see :mod:`memvault.profile.stated`)."""
    day = latest_profile_day(store)
    if day is None:
        return []
    return [
        Finding(layer="L2", rule="attention_divergence", subject=d.attitude_id,
                evidence={"statement": d.statement, "entity": d.entity_name,
                          "day": d.day.isoformat(), "window_days": WINDOW},
                severity="info")
        for d in divergences(store, [day])[day]
    ]  # fmt: skip
