"""The gardener's ceremony as a track: survey, the six phases, the report, and its two checks.

One garden run spans the stages of a step; it is found by the orchestrator's run id (the root
of a re-executed run), so a retried or re-executed run picks up where it stopped without
redoing committed work: a phase that raises fails its stage once its state and resume point
are saved. On a night when no tended store is due, a run the automation started gardens
nothing (:meth:`GardenTrack.not_due`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from memvault.gardener.adapter import GardenStore
from memvault.gardener.cadence import Cadence, garden_due
from memvault.gardener.figures import phase_figures, run_figures, survey_figures
from memvault.gardener.ledger import Ledger
from memvault.gardener.run import Gardener, PhaseFailed
from memvault.gardener.state import PHASES, GardenConfig
from memvault.judge import Judge
from memvault.stage import Figures, Markdown, Stage, StageFailed, Verdict

SURVEY, REPORT = "garden_survey", "garden_report"
#: The stages in order, by the names of their assets.
STAGES = (SURVEY, *(f"garden_{p}" for p in PHASES), REPORT)


class GardenTrack:
    """One garden run across the stages of a step, found by ``dagster_run_id``."""

    def __init__(
        self,
        ledger: Ledger,
        stores: Sequence[GardenStore],
        judge: Judge,
        settings: GardenConfig,
        dagster_run_id: str,
        log: Callable[[str], None] = print,
    ) -> None:
        self.ledger, self.stores, self.judge, self.settings = ledger, list(stores), judge, settings
        self.dagster_run_id, self.log = dagster_run_id, log
        self.run_id = ledger.run_for_dagster(dagster_run_id)
        self.garden: Gardener | None = None
        self.cadence: Cadence | None = None

    def not_due(self, now: dt.datetime, *, asked: bool) -> Cadence | None:
        """Before a new run's survey: whether gardening is due tonight (kept for the survey's
        figures); the cadence when it is not and nobody ``asked`` for the run (so nothing is
        gardened), else None. A re-executed run is never stopped here."""
        if self.run_id is not None:
            return None
        self.cadence = garden_due(self.ledger, self.stores, now, self.settings)
        return None if self.cadence.due or asked else self.cadence

    def stages(self) -> list[Stage]:
        """The survey, the phases and the report; what a phase changes in the tended stores
        is audited there, its state and resume point are kept on the run."""
        phases = [
            Stage(f"garden_{phase}", partial(self.phase, phase), ("runs",)) for phase in PHASES
        ]
        return [
            Stage(SURVEY, self.survey, ("runs",)),
            *phases,
            Stage(REPORT, self.report, ("runs",)),
        ]

    def checks(self) -> dict[str, Callable[[], Verdict]]:
        """The checks after the report, by name."""
        return {"garden_run_audited": self.audited, "garden_idempotent": self.idempotent}

    def load(self) -> Gardener:
        if self.garden is None:
            if self.run_id is None:
                raise StageFailed(
                    "no garden run for this Dagster run: materialize garden_survey "
                    "first, in the same run"
                )
            self.garden = Gardener.load(self.ledger, self.stores, self.judge, self.run_id)
        return self.garden

    def figures(self, **extra: Any) -> Figures:
        return Figures(run_figures(self.load()) | extra)

    def survey(self) -> Figures:
        # A run whose survey failed saved no state: a re-execution surveys again, on that run.
        if self.run_id is None or not self.ledger.load_state(self.run_id).get("run_id"):
            self.garden = Gardener.start(
                self.ledger,
                self.stores,
                self.judge,
                self.settings,
                run_id=self.run_id,
                dagster_run_id=self.dagster_run_id,
                cadence=self.cadence,
            )
            self.run_id = self.garden.state.run_id
        # A re-executed run: the survey (and its snapshot) happened already.
        cadence = self.cadence.metadata() if self.cadence is not None else {}
        return self.figures(**survey_figures(self.load()), **cadence)

    def phase(self, phase: str) -> Figures:
        garden = self.load()
        before = dict(garden.state.actions)
        try:
            garden.run_phase(phase, raise_on_error=True)
        except PhaseFailed as failed:
            raise StageFailed(
                f"garden phase {phase} failed; its resume point is saved, so a "
                f"retry or a re-execution continues from there: {failed}",
                self.figures(phase=phase).metadata(),
            ) from failed
        return self.figures(**phase_figures(garden, phase, before))

    def report(self) -> Figures:
        result = self.load().finish()
        self.log(result.report)
        figures = self.figures(
            outcome=result.outcome.outcome,
            outcome_summary=result.outcome.summary,
            report_id=str(result.state.report_id),
            report=Markdown(f"```\n{result.report}```"),
        )
        if not result.succeeded:
            raise StageFailed(result.outcome.summary, figures.metadata())
        return figures

    def audited(self) -> Verdict:
        """Every write of the run has its audit row, and the report was read back."""
        state = self.ledger.load_state(str(self.run_id))
        audited = self.ledger.audit_rows(str(self.run_id))
        expected = int(state.get("expected_audit", -1))
        read_back = bool(state.get("report_read_back"))
        return Verdict(
            audited == expected and read_back,
            {
                "garden_run_id": str(self.run_id),
                "audit_rows": audited,
                "writes_made": expected,
                "report_read_back": read_back,
            },
        )

    def idempotent(self) -> Verdict:
        """A second run right after a clean one acts on nothing (a run that stopped early is
        continued by the next one, and is not checked)."""
        from memvault.gardener.rehearse import rehearse

        state = self.load().state
        unfinished = "; ".join(
            f"{n}: {s.resume_text()}" for n, s in state.stores.items() if s.resume
        )
        shown: dict[str, Any] = {"garden_run_id": str(self.run_id)}
        if unfinished:
            return Verdict(True, shown | {"stopped_early": unfinished})
        found = rehearse(self.ledger, self.stores, self.judge, self.settings)
        return Verdict(found.idle, shown | dict(found.metadata()))
