"""Which facts the dream's checks read: the ones that changed since the last dream checked the
store (an incremental night), or every fact (the first dream, on demand, and once a week).

A fact that no audited change touched since the last dream's checks passed cannot have started
failing them, so an incremental night checks the facts the audit log names since then: facts
written, facts of entities written (their types decide grounding), and the facts of conflict
verdicts written (a verdict decides whether two overlapping facts are allowed). What an
incremental pass cannot see (a row changed behind the store's back, a non-blocking check's
finding reported once) the whole-store pass sees: it runs when no dream checked the whole store
in the last ``full_every_days`` days, or when asked (``full``).

The scope is recorded on the dream's run (stage ``checks``): the audit log's high-water mark
the checks read up to, which the next dream starts from, and whether the pass was whole.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from memvault.normalize import utcnow
from memvault.store import Store

#: The dream report's stage that records the checks' scope.
STAGE = "checks"

_CHANGED_SQL = """
SELECT DISTINCT target_id AS id FROM audit_log
WHERE target_table = 'triples' AND id > :lo AND id <= :hi
UNION
SELECT t.id FROM triples t
WHERE t.subject_id IN (SELECT target_id FROM audit_log
                       WHERE target_table = 'entities' AND id > :lo AND id <= :hi)
   OR t.object_id IN (SELECT target_id FROM audit_log
                      WHERE target_table = 'entities' AND id > :lo AND id <= :hi)
UNION
SELECT v.triple_a FROM conflict_verdicts v
WHERE v.id IN (SELECT target_id FROM audit_log
               WHERE target_table = 'conflict_verdicts' AND id > :lo AND id <= :hi)
UNION
SELECT v.triple_b FROM conflict_verdicts v
WHERE v.id IN (SELECT target_id FROM audit_log
               WHERE target_table = 'conflict_verdicts' AND id > :lo AND id <= :hi)
"""


@dataclass(frozen=True)
class CheckScope:
    """The facts the checks read: ``triple_ids`` (None: every fact), up to ``audit_id``."""

    triple_ids: list[str] | None
    audit_id: int
    since_audit_id: int | None
    reason: str

    @property
    def full(self) -> bool:
        return self.triple_ids is None

    def figures(self) -> dict[str, Any]:
        """What the dream's run keeps (and the next dream reads)."""
        return {
            "scope": "full" if self.full else "changed",
            "reason": self.reason,
            "audit_id": self.audit_id,
            "since_audit_id": self.since_audit_id,
            "triples": None if self.triple_ids is None else len(self.triple_ids),
        }

    def metadata(self) -> dict[str, Any]:
        """What a check shows of its scope."""
        scope = "every fact" if self.full else "facts changed since the last dream's checks"
        return {
            "scope": scope,
            "scope_reason": self.reason,
            **({} if self.triple_ids is None else {"facts_in_scope": len(self.triple_ids)}),
        }


def _checks_of(cursor: Any) -> dict[str, Any]:
    data = json.loads(cursor or "{}") if isinstance(cursor, str) else dict(cursor or {})
    found = data.get("stages", {}).get(STAGE)
    return found if isinstance(found, dict) else {}


def check_scope(
    store: Store,
    run_id: str,
    *,
    full: bool = False,
    full_every_days: float = 7.0,
    now: dt.datetime | None = None,
) -> CheckScope:
    """The scope of this dream's checks (``run_id`` is the dream itself, never its own
    starting point)."""
    audit_id = int(store.fetch("SELECT COALESCE(max(id), 0) FROM audit_log")[0][0])
    if full:
        return CheckScope(None, audit_id, None, "whole-store check requested")
    rows = store.fetch(
        "SELECT started_at, cursor FROM runs WHERE kind = 'dream' AND status = 'succeeded' "
        "AND id <> :run ORDER BY started_at DESC, id DESC LIMIT 1",
        {"run": run_id},
    )
    last = _checks_of(rows[0][1]) if rows else {}
    if "audit_id" not in last:
        return CheckScope(None, audit_id, None, "no earlier dream recorded what it checked")
    if full_every_days <= 0:
        return CheckScope(None, audit_id, None, "every dream checks the whole store")
    cut = (now or utcnow()) - dt.timedelta(days=full_every_days)
    recent = store.fetch(
        "SELECT cursor FROM runs WHERE kind = 'dream' AND status = 'succeeded' "
        "AND id <> :run AND started_at >= :cut",
        {"run": run_id, "cut": cut},
    )
    if not any(_checks_of(c).get("scope") == "full" for (c,) in recent):
        return CheckScope(
            None, audit_id, None, f"no whole-store check in the last {full_every_days:g} days"
        )
    lo = int(last["audit_id"])
    ids = sorted(
        str(r[0]) for r in store.fetch(_CHANGED_SQL, {"lo": lo, "hi": audit_id}) if r[0] is not None
    )
    return CheckScope(ids, audit_id, lo, "facts changed since the last dream's checks")
