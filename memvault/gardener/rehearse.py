"""The gardener's idempotency, rehearsed: what a second run right after this one would act on.

The gardener has no dry-run mode, but every change and every proposal a phase makes asks the
budget first (``need_mutations``). A rehearsal is the run's own ceremony with a mutation
budget of zero: the survey and every phase read the stores, the ledger and the window exactly
as the next run would (from where this run ended), and the first change a phase wants stops
that phase with the item it stopped at, before anything is written. Ledger writes that need no
budget (settling a stale proposal) are refused and counted as acts too. The rehearsal's own
state is never saved, no snapshot is taken and nothing is begun in ``runs``.

The journal is left out: every run writes its journal entry, a quiet one too ("nothing new
since …"), and the entry records the run (outside the mutation budget, like the report)
rather than tends memory; a run right after a clean one acts on nothing but it. Judgments are allowed (up to the run's judgment budget), through the same
cached judge, so the questions the last run asked cost nothing; a rehearsal that runs out of
judgments says it could not tell.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memvault.gardener.adapter import GardenStore
from memvault.gardener.budget import Budget
from memvault.gardener.ledger import Ledger
from memvault.gardener.run import Gardener, _iso
from memvault.gardener.state import PHASES, GardenConfig, RunState
from memvault.judge import Judge
from memvault.normalize import utcnow

#: Phases that record the run rather than act on memories.
NOT_ACTIONS = frozenset({"journal"})


class WouldWrite(RuntimeError):
    """A ledger write the rehearsal refused (it would have been a write of a real run)."""


class _ReadOnlyLedger:
    """The ledger for reading; a write raises :class:`WouldWrite`; the state is not saved."""

    _READS = frozenset(
        {"store", "run_for_dagster", "load_state", "previous", "audit_rows", "fixed_before",
         "proposals", "executable"}
    )  # fmt: skip

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger

    def save_state(self, *args: Any, **kwargs: Any) -> None:
        """The rehearsal's state lives in memory only."""

    def __getattr__(self, name: str) -> Any:
        if name in self._READS:
            return getattr(self._ledger, name)

        def refuse(*args: Any, **kwargs: Any) -> None:
            raise WouldWrite(f"the ledger's {name.replace('_', ' ')}")

        return refuse


@dataclass
class Rehearsal:
    """What a second run would do: an act per store and phase, or nothing."""

    #: One line per store and phase that would act: where, and on what.
    acts: list[str] = field(default_factory=list)
    #: Phases that could not finish looking (the judgment budget ran out).
    undecided: list[str] = field(default_factory=list)
    phases: int = 0

    @property
    def idle(self) -> bool:
        return not self.acts and not self.undecided

    def metadata(self) -> dict[str, Any]:
        """What an orchestrator shows for the check."""
        return {
            "phases_rehearsed": self.phases,
            "would_act": len(self.acts),
            "undecided": len(self.undecided),
            "acts": [{"what": a} for a in self.acts[:20]],
            "undecided_phases": [{"phase": u} for u in self.undecided[:20]],
        }


def rehearse(
    ledger: Ledger, stores: Sequence[GardenStore], judge: Judge, config: GardenConfig
) -> Rehearsal:
    """Run every acting phase with no mutation budget; see what the first write of each is."""
    settings = GardenConfig.from_dict(config.as_dict() | {"backup": False})
    state = RunState(
        run_id=f"garden-rehearsal-{secrets.token_hex(4)}",
        mode=settings.mode,
        started_at=_iso(utcnow()),
        config=settings.as_dict(),
        budget=Budget(0, settings.max_judgments).as_dict(),
        judge={"kind": judge.kind},
    )
    gardener = Gardener(_ReadOnlyLedger(ledger), stores, judge, state)  # type: ignore[arg-type]
    gardener._survey_all()
    found = Rehearsal()
    for phase in PHASES:
        if phase in NOT_ACTIONS:
            continue
        found.phases += 1
        gardener.run_phase(phase)
        for name, srun in state.stores.items():
            stop, pending = srun.stop, srun.pending
            label = f"{phase} on {name}"
            if stop is not None and stop.get("reason") == "judgment budget spent":
                found.undecided.append(label)
            elif stop is not None:
                at = ", ".join(f"{k}={v}" for k, v in (stop.get("cursor") or {}).items())
                found.acts.append(f"{label}: {stop.get('reason')}" + (f" (at {at})" if at else ""))
            elif pending is not None:
                found.acts.append(f"{label}: {pending.get('reason')}")
            srun.stop = srun.pending = None  # the next phase looks on its own
    return found
