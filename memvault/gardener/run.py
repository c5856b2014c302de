"""The ceremony: GD0 survey → GD1–GD6 within the budget → GD7 report, always.

:func:`run_garden` runs it all in-process (the CLI). The Dagster assets run
the same steps one asset per phase — :meth:`Gardener.begin`,
:meth:`Gardener.run_phase`, :meth:`Gardener.finish` — and pass the state
between them through the ``runs`` row of the garden run (``Gardener.load``).

Per store, a run covers a *window*: items changed since the previous clean
run (a first run: the ~200 most recent). A run that spends its budget stops
mid-phase and records the resume point; the next run continues the same
window from there, so nothing between two runs is skipped.
"""

from __future__ import annotations

import datetime as dt
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memvault.gardener.adapter import Capability, Change, GardenStore, WriteContext
from memvault.gardener.budget import Budget, BudgetSpent
from memvault.gardener.cadence import Cadence, garden_due
from memvault.gardener.capabilities import Survey, survey, survey_and_bind
from memvault.gardener.ledger import Ledger
from memvault.gardener.outcome import Outcome
from memvault.gardener.phases import APPROVED_ONLY, PHASE_FUNCTIONS, PhaseContext
from memvault.gardener.report import GardenReport, OpLine, StoreLine, parse_report
from memvault.gardener.state import PHASES, GardenConfig, RunState, StoreRun, phase_label
from memvault.judge import Judge
from memvault.normalize import utcnow
from memvault.testing_hooks import pause_point

REPORT_KIND = "garden-report"
#: Phases that record the run rather than tend memory: they run for a store that stopped
#: early too (its entry says where it stopped), and never replace its resume point.
RECORDS = frozenset({"journal"})


class PhaseFailed(RuntimeError):
    """A phase raised on at least one store; its state and resume point are saved."""


@dataclass
class GardenResult:
    run_id: str
    report: str
    outcome: Outcome
    state: RunState

    @property
    def succeeded(self) -> bool:
        return self.outcome.outcome == "succeeded"


def _iso(value: dt.datetime) -> str:
    return value.replace(microsecond=value.microsecond).isoformat()


class Gardener:
    """One garden run over one or more stores, with its state kept in the ledger."""

    def __init__(
        self,
        ledger: Ledger,
        stores: Sequence[GardenStore],
        judge: Judge,
        state: RunState,
    ) -> None:
        if not stores:
            raise ValueError("the gardener needs at least one store to tend")
        names = [s.name for s in stores]
        if len(set(names)) != len(names):
            raise ValueError(f"the same store is listed twice: {names}")
        self.ledger = ledger
        self.stores = list(stores)
        self.judge = judge
        self.state = state
        self.config = GardenConfig.from_dict(state.config)
        self.budget = Budget.from_dict(state.budget)
        self.surveys: dict[str, Survey] = {}
        for store in self.stores:
            self.surveys[store.name] = survey_and_bind(store)

    # -- creation -------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        ledger: Ledger,
        stores: Sequence[GardenStore],
        judge: Judge,
        config: GardenConfig | None = None,
        *,
        run_id: str | None = None,
        dagster_run_id: str | None = None,
        cadence: Cadence | None = None,
    ) -> Gardener:
        """Create the run (``runs`` row of kind ``garden``) and do GD0 for every store.

        ``cadence`` is whether the run was due (checked before it began); a run that was
        asked for runs either way, and its outcome says when the stores were quiet."""
        config = config or GardenConfig()
        params = {
            "stores": [s.name for s in stores],
            "mode": config.mode,
            "max_mutations": config.max_mutations,
            "max_judgments": config.max_judgments,
            "judge": judge.kind,
        }
        # A survey that raises leaves the run failed, never open; the phases carry it on.
        with ledger.begin(params, run_id=run_id) as run:
            if dagster_run_id:
                ledger.tag_dagster(run.id, dagster_run_id)
            state = RunState(
                run_id=run.id,
                mode=config.mode,
                started_at=_iso(utcnow()),
                config=config.as_dict(),
                budget=Budget(config.max_mutations, config.max_judgments).as_dict(),
                judge={"kind": judge.kind},
                cadence=cadence.as_dict() if cadence is not None else None,
            )
            gardener = cls(ledger, stores, judge, state)
            gardener._survey_all()
            gardener.save()
        return gardener

    @classmethod
    def load(
        cls, ledger: Ledger, stores: Sequence[GardenStore], judge: Judge, run_id: str
    ) -> Gardener:
        """The gardener of a run begun earlier (the next phase asset picks it up here)."""
        data = ledger.load_state(run_id)
        if not data.get("run_id"):
            raise ValueError(f"garden run {run_id} has no saved state")
        return cls(ledger, stores, judge, RunState.from_json(data))

    # -- state ----------------------------------------------------------------------------

    def save(self) -> None:
        self.state.budget = self.budget.as_dict()
        carry = {"stores": {name: self._carry(srun) for name, srun in self.state.stores.items()}}
        self.ledger.save_state(self.state.run_id, self.state.to_json(), carry)

    def _carry(self, srun: StoreRun) -> dict[str, object]:
        """What the next run of this store starts from."""
        resume = srun.resume
        if resume is None:  # the window is closed: the next one starts where this one ended
            return {
                "resume": "clean",
                "window_start": srun.window_end,
                "settled": srun.settled,
                "proposing_only": srun.proposing_only,
            }
        return {
            "resume": resume,
            "window_start": srun.window_start,
            "window_end": srun.window_end,
            "first_run": srun.first_run,
            "judged": srun.judged,
            "settled": srun.settled,
            "proposing_only": srun.proposing_only,
        }

    # -- GD0 ------------------------------------------------------------------------------

    def _survey_all(self) -> None:
        now = utcnow()
        for store in self.stores:
            found = self.surveys[store.name]
            srun = StoreRun(name=store.name, capabilities=found.summary(), survey=found.as_dict())
            self.state.stores[store.name] = srun
            if found.has(Capability.STATS):
                srun.stats_before = store.stats()
            previous = self.ledger.previous(store.name, before_run=self.state.run_id)
            self._window(store, srun, previous, now)
            self._snapshot(store, srun, previous)

    def _window(
        self, store: GardenStore, srun: StoreRun, previous: dict | None, now: dt.datetime
    ) -> None:
        srun.window_end = _iso(now)
        if previous is None:
            report = None
            if self.surveys[store.name].has(Capability.ARTIFACT):
                report = store.last_artifact(REPORT_KIND)
            if report is not None:  # no ledger entry, but an earlier report: since then
                srun.first_run = False
                srun.window_start = _iso(report.created_at) if report.created_at else None
                srun.since_source = f"report {report.id}"
            return
        srun.settled = {k: list(v) for k, v in dict(previous.get("settled") or {}).items()}
        srun.proposing_only = list(previous.get("proposing_only") or [])
        resume = previous.get("resume")
        if isinstance(resume, dict):  # the previous run stopped early: continue its window
            srun.first_run = bool(previous.get("first_run", False))
            srun.window_start = previous.get("window_start")
            srun.window_end = str(previous.get("window_end") or srun.window_end)
            srun.judged = list(previous.get("judged") or [])
            srun.start_phase = str(resume.get("phase", PHASES[0]))
            srun.start_cursor = dict(resume.get("cursor") or {})
            srun.since_source = f"resumed from {previous['run_id']}"
        else:
            srun.first_run = False
            srun.window_start = previous.get("window_start")
            srun.since_source = f"run {previous['run_id']}"

    def _snapshot(self, store: GardenStore, srun: StoreRun, previous: dict | None) -> None:
        """GD-S4: before the first run of a store, and before every autonomous run."""
        autonomous = self.config.mode == "autonomous"
        if not self.config.backup or not (autonomous or previous is None):
            return
        if not self.surveys[store.name].has(Capability.BACKUP):
            self.state.skip(
                "survey", "snapshot before the run: no backup capability in " + store.name
            )
            return
        try:
            ref = store.backup(f"garden-{self.state.run_id}")
        except Exception as exc:  # a failed mandatory backup: no mutation at all
            srun.blocked = f"backup failed: {exc}"
            self.state.errors.append(f"{store.name}: mandatory backup failed: {exc}")
            self.state.skip("survey", f"every mutation of {store.name} — backup failed: {exc}")
            return
        srun.backup = ref.location

    # -- GD1–GD6 --------------------------------------------------------------------------

    def run_phase(self, phase: str, *, raise_on_error: bool = False) -> None:
        """Run one phase on every store that has not stopped; saves the state afterwards.

        A store whose phase raises gets its resume point (the phase and its cursor) and the
        error recorded; with ``raise_on_error`` the phase then fails (:class:`PhaseFailed`,
        after every store had its turn and the state was saved), so an orchestrator can
        retry it or re-execute from it; otherwise the run goes on and reports ``failed``.
        """
        if phase not in PHASE_FUNCTIONS:
            raise ValueError(f"unknown phase {phase!r}: one of {', '.join(PHASES)}")
        now = dt.datetime.fromisoformat(self.state.started_at)
        failures = [line for store in self.stores if (line := self._phase_on(store, phase, now))]
        if failures and raise_on_error:
            raise PhaseFailed("; ".join(failures))

    def _phase_on(self, store: GardenStore, phase: str, now: dt.datetime) -> str | None:
        """``phase`` on one store, unless it is done there, the store stopped early or the
        phase is not this run's to do; the failure's line when it raised."""
        srun = self.state.stores[store.name]
        self._retry_failed(srun, phase, store.name)
        if phase in srun.done or (srun.stop is not None and phase not in RECORDS):
            return None
        stopped = srun.stop  # where a store that stopped early resumes (kept as it is)
        step = self._step(store, srun, phase)
        if step is None:
            return None
        srun.cursor = dict(srun.start_cursor) if phase == srun.start_phase else {}
        if step is not PHASE_FUNCTIONS[phase]:
            srun.cursor = {}
        ctx = PhaseContext(
            phase=phase,
            store=store,
            survey=self.surveys[store.name],
            ledger=self.ledger,
            judge=self.judge,
            config=self.config,
            budget=self.budget,
            run=self.state,
            srun=srun,
            now=now,
        )
        return self._attempt(ctx, step, stopped)

    def _retry_failed(self, srun: StoreRun, phase: str, name: str) -> None:
        """A re-executed phase (Dagster "re-execute from failure") tries again from where it
        failed on the store; what it committed before is in the store and not redone."""
        stop = srun.stop or {}
        if stop.get("phase") == phase and str(stop.get("reason", "")).startswith("error"):
            srun.start_phase, srun.start_cursor, srun.stop = (
                phase,
                dict(stop.get("cursor") or {}),
                None,
            )
            self.state.errors = [e for e in self.state.errors if not _error_of(e, phase, name)]

    def _step(
        self, store: GardenStore, srun: StoreRun, phase: str
    ) -> Callable[[PhaseContext], None] | None:
        """What ``phase`` runs on the store: the phase, only its approved proposals (done
        by the run this one resumes), or nothing (another track's rule, a blocked store)."""
        owner_note = getattr(store, "delegated", {}).get(phase)
        if owner_note:  # a rule another track owns on this store: say so, leave it
            self.state.skip(phase, f"{owner_note} ({store.name})")
            if phase in getattr(store, "delegated_whole", ()):
                srun.done.append(phase)
                return None
        step = PHASE_FUNCTIONS[phase]
        if PHASES.index(phase) < PHASES.index(srun.start_phase):
            # Done by the run this one resumes; approved proposals still go first.
            if phase not in APPROVED_ONLY:
                return None
            step = APPROVED_ONLY[phase]
        if srun.blocked:
            if phase not in srun.done:
                srun.done.append(phase)
            return None
        return step

    def _attempt(
        self, ctx: PhaseContext, step: Callable[[PhaseContext], None], stopped: dict | None
    ) -> str | None:
        """Run the step, timed and its judge's work counted, then save the state: done, or
        stopped with its resume point (a budget spent, an error: its line is returned)."""
        phase, srun = ctx.phase, ctx.srun
        before = self.judge.stats.as_dict()
        clock = time.perf_counter()
        failure = None
        try:
            step(ctx)
            pause_point(f"garden-{phase}")
        except BudgetSpent as spent:
            srun.stop = stopped or {
                "phase": phase,
                "cursor": spent.cursor,
                "reason": f"{spent.kind} budget spent",
            }
        except Exception as exc:
            srun.stop = stopped or {
                "phase": phase,
                "cursor": dict(srun.cursor),
                "reason": f"error: {exc}",
            }
            failure = f"{phase_label(phase)} on {ctx.store.name}: {type(exc).__name__}: {exc}"
            self.state.errors.append(failure)
            self.state.notes.append(traceback.format_exc(limit=5))
        else:
            srun.done.append(phase)
            srun.cursor = {}
        finally:
            timing = self.state.phase_metrics.setdefault(phase, {})
            timing["seconds"] = round(timing.get("seconds", 0.0) + time.perf_counter() - clock, 4)
            self._count_judge(before)
            if phase == "dedup" and srun.stop is None:
                srun.judged = []  # the window's pairs are all judged
            self.save()
        return failure

    def _count_judge(self, before: dict[str, int]) -> None:
        after = self.judge.stats.as_dict()
        totals = self.state.judge
        totals["kind"] = self.judge.kind
        for name, value in after.items():
            totals[name] = int(totals.get(name, 0)) + value - before.get(name, 0)

    def run_all(self) -> None:
        for phase in PHASES:
            self.run_phase(phase)

    # -- GD7 ------------------------------------------------------------------------------

    def build_report(self) -> GardenReport:
        stores = []
        for store in self.stores:
            srun = self.state.stores[store.name]
            if self.surveys[store.name].has(Capability.STATS) and not srun.stats_after:
                srun.stats_after = store.stats()
            stores.append(
                StoreLine(
                    store.name,
                    srun.capabilities,
                    srun.stats_before,
                    srun.stats_after,
                    srun.resume_text(),
                )
            )
        return GardenReport(
            timestamp=self.state.started_at + "Z",
            mode=self.state.mode,
            stores=stores,
            actions=dict(self.state.actions),
            ops=[OpLine(**op) for op in self.state.ops],
            deferred=list(self.state.deferred),
            skipped=[(phase_label(p), w) for p, w in self.state.skipped],
            mutations_used=self.budget.mutations,
            mutations_max=self.budget.max_mutations,
        )

    def finish(self) -> GardenResult:
        """GD7: render the report, save it and read it back, judge the outcome, close the run."""
        report = self.build_report()
        text = report.render()
        self.state.report_text = text
        self._save_report(text)
        outcome = self._outcome(report)
        self.state.outcome = outcome.as_dict()
        self.state.finished = True
        self.save()
        self.ledger.finish(
            self.state.run_id,
            "succeeded" if outcome.outcome == "succeeded" else "failed",
            "; ".join(self.state.errors) or None,
        )
        return GardenResult(self.state.run_id, text, outcome, self.state)

    def _save_report(self, text: str) -> None:
        """Through the first tended store that can keep artifacts, else in the ledger."""
        holder = next(
            (s for s in self.stores if self.surveys[s.name].has(Capability.ARTIFACT)), None
        )
        ctx = WriteContext(self.state.run_id, "report", "gardening report", "report")
        name = f"gardening report {self.state.started_at}"
        try:
            if holder is not None:
                change: Change = holder.save_artifact(ctx, REPORT_KIND, name, text)
                if not change.audited:
                    self.ledger.audit_external(
                        self.state.run_id, "report", holder.name, change, "gardening report"
                    )
                self.state.expected_audit += 1
                back = holder.read_artifact(change.target_id)
            else:
                from memvault.gardener.adapters.memvault_store import MemvaultGardenStore

                keeper = MemvaultGardenStore(self.ledger.store)
                keeper.bind(survey(keeper.name, keeper.tools()).mapping)
                change = keeper.save_artifact(ctx, REPORT_KIND, name, text)
                self.state.expected_audit += 1
                back = keeper.read_artifact(change.target_id)
            self.state.report_id = change.target_id
            self.state.report_read_back = back is not None and back.content == text
            if back is not None and self.state.report_read_back:
                parse_report(back.content)  # what was stored is a report in its fixed format
        except Exception as exc:
            self.state.report_read_back = False
            self.state.errors.append(f"report save failed: {type(exc).__name__}: {exc}")

    def _outcome(self, report: GardenReport) -> Outcome:
        audited = self.ledger.audit_rows(self.state.run_id)
        checks = [
            (
                f"budget {self.budget.mutations}/{self.budget.max_mutations} mutations, "
                f"{self.budget.judgments}/{self.budget.max_judgments} judgments",
                self.budget.within,
            ),
            (
                f"count audit_log rows of run {self.state.run_id}: {audited} = "
                f"{self.state.expected_audit} writes made",
                audited == self.state.expected_audit,
            ),
            (
                f"read back report artifact {self.state.report_id}",
                bool(self.state.report_read_back),
            ),
            (
                "skipped phases listed: "
                + (", ".join(p for p, _ in report.skipped) if report.skipped else "none"),
                True,
            ),
        ]
        blocked = [s for s in self.state.stores.values() if s.blocked]
        if blocked:
            checks.append((f"mandatory backup of {blocked[0].name}", False))
        if self.state.errors:
            checks.append((f"phases without error ({len(self.state.errors)} failed)", False))
        ok = all(passed for _, passed in checks)
        acted = sum(self.state.actions.values())
        if ok:
            summary = (
                f"Completed memory gardening ({self.state.mode}) and persisted report "
                f"{self.state.report_id}: {acted} action(s), {self.state.proposals} proposal(s), "
                f"resume point {report.resume_point}"
            )
            cadence = self.state.cadence or {}
            if cadence.get("quiet"):
                asked = "" if cadence.get("due") else "Run on request although not due: "
                summary += f". {asked}{cadence.get('reason', '')}"
        else:
            failed = [c for c, passed in checks if not passed]
            summary = f"Memory gardening failed: {'; '.join(failed)}"
        return Outcome("succeeded" if ok else "failed", summary, checks)


def run_garden(
    ledger: Ledger,
    stores: Sequence[GardenStore],
    judge: Judge,
    config: GardenConfig | None = None,
    *,
    run_id: str | None = None,
) -> GardenResult:
    """The whole ceremony in-process: survey, phases within the budget, report. It was asked
    for, so it runs whether or not it is due (the state says which)."""
    config = config or GardenConfig()
    cadence = garden_due(ledger, stores, utcnow(), config)
    gardener = Gardener.start(ledger, stores, judge, config, run_id=run_id, cadence=cadence)
    gardener.run_all()
    return gardener.finish()


def _error_of(error: str, phase: str, store: str) -> bool:
    """Whether a recorded error line is this phase's on this store (older runs wrote "GD1 dedup")."""
    head, sep, _ = error.partition(f" on {store}:")
    return bool(sep) and phase_label(head) == phase_label(phase)
