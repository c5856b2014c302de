"""Cadence (GD10): daily for an active store, weekly for a quiet one.

The nightly gardener follows the collector. On a store where little came in
since the last garden run, a run finds nothing to do, so the night's run is
*due* only when one of these holds for a store it tends:

* it was never gardened (the first run);
* the last run left work for the next one (a resume point), or approved
  proposals wait to be carried out;
* it is *active*: at least ``quiet_items`` memory items are new or changed
  since the last garden run (the gardener's own writes and summaries not
  counted) — the same items the next run's window would look at;
* it is *quiet*, but ``quiet_days`` (7) days passed since the last run: the
  weekly run (decay and the rest still need it).

:func:`decide` is the rule on plain numbers; :func:`garden_due` reads them from
the stores and the ledger. The orchestrator skips the night's phases when no
store is due and shows the reason; a run somebody asked for (``memvault
garden``, a run launched by hand) is always due and only says the store is
quiet. ``quiet_items`` 0 turns the rule off (every night is due).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from memvault.gardener.adapter import GARDEN_SUMMARY_TAG, Capability, GardenStore, ItemQuery
from memvault.gardener.capabilities import survey_and_bind
from memvault.gardener.ledger import Ledger
from memvault.gardener.state import GardenConfig

#: Items read per page when counting what changed.
_PAGE = 200


@dataclass(frozen=True)
class StoreCadence:
    """One store's verdict: is a run due tonight, and why (one plain sentence)."""

    store: str
    due: bool
    quiet: bool
    reason: str
    new_items: int | None = None
    last_run_id: str | None = None
    last_run_at: dt.datetime | None = None


@dataclass(frozen=True)
class Cadence:
    """The night's verdict over every tended store: due when any one of them is."""

    due: bool
    reason: str
    stores: tuple[StoreCadence, ...]

    @property
    def quiet(self) -> bool:
        """Every store is quiet (a run may still be due: the weekly one)."""
        return all(s.quiet for s in self.stores)

    def as_dict(self) -> dict[str, Any]:
        return {
            "due": self.due,
            "quiet": self.quiet,
            "reason": self.reason,
            "stores": [
                asdict(s) | {"last_run_at": s.last_run_at.isoformat() if s.last_run_at else None}
                for s in self.stores
            ],
        }

    def metadata(self) -> dict[str, Any]:
        """What an orchestrator shows: the verdict, the reason, a row per store (``new_items``
        only where it was counted: a first run counts nothing)."""
        counted = [s.new_items for s in self.stores if s.new_items is not None]
        return {
            "garden_due": self.due,
            "quiet": self.quiet,
            "cadence": self.reason,
            **({"new_items": sum(counted)} if counted else {}),
            "stores_cadence": [
                {
                    "store": s.store,
                    "due": "yes" if s.due else "no",
                    "quiet": "yes" if s.quiet else "no",
                    "new_items": "not counted" if s.new_items is None else s.new_items,
                    "last_run": _when(s.last_run_at) if s.last_run_at else "never",
                }
                for s in self.stores
            ],
        }


def _when(at: dt.datetime) -> str:
    return f"{at:%Y-%m-%d %H:%M} UTC"


def _days(delta: dt.timedelta) -> str:
    days = delta.total_seconds() / 86400
    return f"{days:.1f} day" + ("" if round(days, 1) == 1 else "s")


def decide(
    store: str,
    now: dt.datetime,
    *,
    last_run_at: dt.datetime | None,
    new_items: int | None,
    config: GardenConfig,
    left_over: str | None = None,
    approved: int = 0,
    last_run_id: str | None = None,
) -> StoreCadence:
    """The rule for one store on plain numbers (``new_items`` None: the store cannot tell)."""

    def verdict(due: bool, quiet: bool, reason: str) -> StoreCadence:
        return StoreCadence(store, due, quiet, reason, new_items, last_run_id, last_run_at)

    if last_run_at is None:
        return verdict(True, False, f"{store} was never gardened: the first run is due.")
    since = f"since the last garden run ({_when(last_run_at)})"
    if left_over:
        return verdict(True, False, f"{store}: the last garden run left work: {left_over}.")
    if approved:
        return verdict(
            True, False, f"{store}: {approved} approved proposal(s) wait to be carried out."
        )
    if config.quiet_items <= 0:
        return verdict(True, False, f"{store}: every night is due (quiet_items is 0).")
    if new_items is None:
        return verdict(
            True,
            False,
            f"{store} cannot list what changed in it, so every night is due.",
        )
    if new_items >= config.quiet_items:
        return verdict(
            True,
            False,
            f"{store} is active: at least {config.quiet_items} memory items are new or changed "
            f"{since}.",
        )
    counted = f"{new_items} new or changed memory item(s) {since}"
    ago = now - last_run_at
    weekly = dt.timedelta(days=config.quiet_days)
    if ago >= weekly:
        return verdict(
            True,
            True,
            f"{store} is quiet ({counted}, fewer than {config.quiet_items}), but that run was "
            f"{_days(ago)} ago: the run every {config.quiet_days} days is due.",
        )
    return verdict(
        False,
        True,
        f"{store} is quiet: {counted}, fewer than {config.quiet_items}; the next run is due "
        f"once {config.quiet_items} have come in, or at {_when(last_run_at + weekly)} at the latest.",
    )


def combine(stores: Sequence[StoreCadence]) -> Cadence:
    """Due when any store is; the reason names the stores that make it due, else all of them."""
    due = [s for s in stores if s.due]
    shown = due or list(stores)
    return Cadence(bool(due), " ".join(s.reason for s in shown), tuple(stores))


def count_changed(
    store: GardenStore, since: dt.datetime, *, leave_out: set[str], enough: int
) -> int:
    """Items of ``store`` new or changed since ``since`` (not ``leave_out``, not the gardener's
    summaries), counted up to ``enough`` (the rule only needs to know whether there are that
    many)."""
    count, after, seen = 0, None, set[str]()
    while count < enough:
        page = store.list_items(
            ItemQuery(changed_since=since, order="oldest", after=after, limit=_PAGE)
        )
        fresh = [i for i in page if i.id not in seen]
        if not fresh:  # an adapter that ignores the cursor repeats its page
            break
        for item in fresh:
            seen.add(item.id)
            if item.id not in leave_out and GARDEN_SUMMARY_TAG not in item.tags:
                count += 1
        if len(page) < _PAGE:
            break
        after = page[-1].id
    return min(count, enough)


def _written_by(ledger: Ledger, store: GardenStore, run_id: str) -> set[str]:
    """Ids the garden run itself wrote in ``store``: audited in the ledger (other stores) or in
    the store's own audit log (a memvault store)."""
    from memvault.gardener.adapters.memvault_store import MemvaultGardenStore

    ids = ledger.targets(run_id)
    if isinstance(store, MemvaultGardenStore) and store.store is not ledger.store:
        ids |= Ledger(store.store).targets(run_id)
    return ids


def _left_over(previous: Mapping[str, Any]) -> str | None:
    resume = previous.get("resume")
    if not isinstance(resume, Mapping):
        return None
    cursor = resume.get("cursor") or {}
    after = f" after {cursor['after']}" if cursor.get("after") else ""
    why = f" ({resume['reason']})" if resume.get("reason") else ""
    return f"it stopped in {resume.get('phase', '?')}{after}{why}"


def store_cadence(
    ledger: Ledger, store: GardenStore, now: dt.datetime, config: GardenConfig
) -> StoreCadence:
    """One store's verdict, from the ledger's last run on it and what changed in it since."""
    previous = ledger.previous(store.name)
    if previous is None:
        return decide(store.name, now, last_run_at=None, new_items=None, config=config)
    run_id = str(previous["run_id"])
    last_at = previous["started_at"]
    if isinstance(last_at, str):
        last_at = dt.datetime.fromisoformat(last_at)
    window = previous.get("window_start") or last_at
    since = dt.datetime.fromisoformat(window) if isinstance(window, str) else window
    approved = len(ledger.proposals(store.name, ("approved",)))
    new_items = None
    if config.quiet_items > 0 and survey_and_bind(store).has(Capability.SEARCH):
        new_items = count_changed(
            store,
            since,
            leave_out=_written_by(ledger, store, run_id),
            enough=config.quiet_items,
        )
    return decide(
        store.name,
        now,
        last_run_at=last_at,
        new_items=new_items,
        config=config,
        left_over=_left_over(previous),
        approved=approved,
        last_run_id=run_id,
    )


def garden_due(
    ledger: Ledger, stores: Sequence[GardenStore], now: dt.datetime, config: GardenConfig
) -> Cadence:
    """Whether tonight's garden run is due on ``stores``, and why."""
    return combine([store_cadence(ledger, store, now, config) for store in stores])
