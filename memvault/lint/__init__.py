"""The knowledge lint: four layers, cheapest first.

* L1 structure (:mod:`memvault.lint.structure`) — rules and SQL only: orphans, cycles of
  predicates that must not loop, malformed facts, references to nothing.
* L2 grounding (:mod:`memvault.lint.grounding_layer`) — every fact against its predicate's
  definition, predicates declared stable that keep changing, entities left with only
  retired facts (proposed for archiving).
* L3 semantic (:mod:`memvault.lint.semantic`) — on a small, cheaply chosen set of fact
  pairs, the judge looks for what is well-formed but means something contradictory.
* L4 confirmation (:mod:`memvault.lint.confirm`) — a change that would follow from a
  finding is re-checked by a second, independent judgment and committed only when both
  agree and the review rules allow it; otherwise it waits in the review queue.

Findings are written to ``lint_findings`` (layer, rule, subject, evidence, severity); a
finding not seen again is marked resolved.
"""

from memvault.lint.findings import Finding, LintReport, record_findings

__all__ = ["Finding", "LintReport", "record_findings"]
