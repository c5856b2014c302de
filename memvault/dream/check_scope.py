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
from memvault.store.queries.audit import last_audit_id
from memvault.store.queries.runs import last_succeeded_cursor, succeeded_cursors_since
from memvault.store.queries.triples import triples_changed_between

#: The dream report's stage that records the checks' scope.
STAGE = "checks"


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
    audit_id = last_audit_id(store) or 0
    if full:
        return CheckScope(None, audit_id, None, "whole-store check requested")
    found, cursor = last_succeeded_cursor(store, "dream", run_id)
    last = _checks_of(cursor) if found else {}
    if "audit_id" not in last:
        return CheckScope(None, audit_id, None, "no earlier dream recorded what it checked")
    if full_every_days <= 0:
        return CheckScope(None, audit_id, None, "every dream checks the whole store")
    cut = (now or utcnow()) - dt.timedelta(days=full_every_days)
    recent = succeeded_cursors_since(store, "dream", run_id, cut)
    if not any(_checks_of(c).get("scope") == "full" for c in recent):
        return CheckScope(
            None, audit_id, None, f"no whole-store check in the last {full_every_days:g} days"
        )
    lo = int(last["audit_id"])
    ids = triples_changed_between(store, lo, audit_id)
    return CheckScope(ids, audit_id, lo, "facts changed since the last dream's checks")
