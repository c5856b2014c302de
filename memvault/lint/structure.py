"""L1 structure: what is broken in the shape of the graph, found by rules and SQL only.

* ``orphan`` — an active entity nothing refers to (the dream archives it after its grace
  period; the lint reports it meanwhile);
* ``cycle`` — a loop through a predicate declared ``acyclic`` (a reports_to b reports_to a);
* ``malformed`` — a fact with an empty object, a predicate that is not snake_case, an end
  before its start, or an unknown status;
* ``dangling_reference`` — a reference to a row that does not exist
  (:mod:`memvault.references` says which references must resolve).

After a first lint, each rule reads only what changed since (:mod:`memvault.lint.scope`).
"""

from __future__ import annotations

import datetime as dt

import igraph as ig

from memvault.lint.findings import Finding, LintReport
from memvault.lint.scope import Changed
from memvault.orphans import find_orphans
from memvault.references import dangling_references
from memvault.store import Store
from memvault.store.queries.triples import active_facts_of_predicates, malformed_triples
from memvault.temporal.grounding import Grounding

RULES = ("orphan", "cycle", "malformed", "dangling_reference")
STATUSES = ("active", "superseded", "merged", "invalidated", "archived", "held")


def cycles(
    store: Store, grounding: Grounding, predicates: frozenset[str] | None = None
) -> list[Finding]:
    """Strongly connected groups of two or more entities (or a self-loop) per acyclic predicate
    (of ``predicates`` only, when given)."""
    acyclic = sorted(
        p.name
        for p in grounding.predicates.values()
        if p.acyclic and (predicates is None or p.name in predicates)
    )
    if not acyclic:
        return []
    edges = active_facts_of_predicates(store, acyclic)
    found: list[Finding] = []
    for (predicate,), part in edges.partition_by("predicate", as_dict=True).items():
        graph = ig.Graph.TupleList(
            part.select("subject_id", "object_id").iter_rows(), directed=True
        )
        names = graph.vs["name"]
        for members in graph.connected_components(mode="strong"):
            loops = len(members) == 1 and graph.are_adjacent(members[0], members[0])
            if len(members) < 2 and not loops:
                continue
            ids = sorted(names[v] for v in members)
            found.append(
                Finding(
                    layer="L1",
                    rule="cycle",
                    subject=ids[0],
                    evidence={"predicate": predicate, "entities": ids},
                    severity="error",
                )
            )
    return found


def lint_structure(
    store: Store,
    grounding: Grounding | None = None,
    now: dt.datetime | None = None,
    changed: Changed | None = None,
) -> LintReport:
    """Every rule on the whole store, or (``changed``) on what changed since the last lint."""
    grounding = grounding or Grounding.load()
    report = LintReport("L1")
    if changed is not None:
        report.checked = {
            "orphan": changed.entities,
            "cycle": changed.predicates,
            "malformed": changed.triples,
            "dangling_reference": changed.references,
        }
    entities = None if changed is None else sorted(changed.entities)
    orphans = find_orphans(store, now or dt.datetime.max, entities)
    report.findings += [
        Finding(layer="L1", rule="orphan", subject=r["id"],
                evidence={"name": r["name"], "entity_type": r["entity_type"]}, severity="info")
        for r in orphans.iter_rows(named=True)
    ]  # fmt: skip
    report.findings += cycles(store, grounding, None if changed is None else changed.predicates)
    malformed = malformed_triples(store, None if changed is None else sorted(changed.triples))
    report.findings += [
        Finding(layer="L1", rule="malformed", subject=r["id"],
                evidence={"problem": r["problem"], "predicate": r["predicate"]}, severity="error")
        for r in malformed.iter_rows(named=True)
        if r["problem"]
    ]  # fmt: skip
    dangling = dangling_references(
        store, rows=None if changed is None else sorted(changed.references)
    )
    report.findings += [
        Finding(layer="L1", rule="dangling_reference", subject=r["row_id"],
                evidence={"reference": r["reference"], "points_at": r["points_at"]},
                severity="error")
        for r in dangling.iter_rows(named=True)
    ]  # fmt: skip
    return report
