"""The preference and skill layers, aged once a day.

attitude_decay writes each current preference's confidence decayed to now and
says which still bind; skill_levels recomputes every skill's experience and
level, so an unused skill moves down (can teach → have done → heard of). Both
write only what changed, audited, and a second run at the same time writes
nothing.
"""

import datetime as dt

import dagster as dg
from pydantic import Field

from assets.common import OWNERS, STORE_POOL, after, kinds
from assets.stage_adapter import shown, step_run
from memvault.layers.attitudes import REVIEW_KIND, binding, decay_attitudes
from memvault.layers.skills import LEVEL_LABELS, decay_skills, skill_table
from memvault.normalize import to_utc_naive, utcnow
from memvault.review import list_items
from memvault.stage import Timer
from resources import LayersResource, StoreResource

LAYERS_GROUP = "layers"


class LayersConfig(dg.Config):
    """The time the layers are aged to (a re-run for the same time writes nothing)."""

    as_of: str | None = Field(
        default=None, description="ISO time to age the layers to (default: now, UTC)"
    )

    def now(self) -> dt.datetime:
        return to_utc_naive(dt.datetime.fromisoformat(self.as_of)) if self.as_of else utcnow()


@dg.asset(
    group_name=LAYERS_GROUP,
    deps=[dg.AssetKey("collected_sessions")],
    automation_condition=after("collected_sessions", why="after the collector"),
    kinds=kinds("polars"),
    owners=OWNERS,
    pool=STORE_POOL,
    description="The owner's preferences, aged: each current preference's confidence decays "
    "from the value it was stated with, exp(−λ · days since its last evidence), and it stops "
    "binding below the binding threshold (by default after about three months without "
    "evidence). Audited; a second run for the same time writes nothing.",
)
def attitude_decay(
    context: dg.AssetExecutionContext,
    config: LayersConfig,
    store: StoreResource,
    layers: LayersResource,
) -> dg.MaterializeResult:
    timer, now, settings = Timer(), config.now(), layers.decay()
    with store.open() as opened:
        with step_run(context, opened, "attitude_decay") as run:
            report = decay_attitudes(opened, now, run.id, settings)
            run.stats = report.as_dict()
        stopped = report.stopped_rows(binding(opened, now, settings))
        waiting = len(list_items(opened, kinds=[REVIEW_KIND]))
    return dg.MaterializeResult(
        metadata=shown(
            report,
            timer.seconds,
            waiting_for_review=waiting,
            decay_per_day=settings.decay_per_day,
            binding_threshold=settings.binding_threshold,
            aged_to=now,
            run_id=run.id,
            stopped_binding=stopped,
        )
    )


@dg.asset(
    group_name=LAYERS_GROUP,
    deps=[dg.AssetKey("collected_sessions")],
    automation_condition=after("collected_sessions", why="after the collector"),
    kinds=kinds("polars"),
    owners=OWNERS,
    pool=STORE_POOL,
    description="The owner's skills, aged: every skill's experience is recomputed with its "
    "half-life, so its level follows use (heard of, have done, can teach) and "
    "moves down when the skill goes unused. Writes only the skills that changed, audited.",
)
def skill_levels(
    context: dg.AssetExecutionContext,
    config: LayersConfig,
    store: StoreResource,
    layers: LayersResource,
) -> dg.MaterializeResult:
    timer, now = Timer(), config.now()
    with store.open() as opened:
        with step_run(context, opened, "skill_levels") as run:
            report = decay_skills(opened, now, run.id, layers.skill_half_life_days)
            run.stats = report.as_dict()
        table = skill_table(opened)
    skills = [
        {
            "skill": r["name"],
            "level": f"{r['level']} {LEVEL_LABELS[r['level']]}",
            "experience": f"{r['xp']:.2f}",
            "uses": r["uses"],
        }
        for r in table.head(30).iter_rows(named=True)
    ]
    return dg.MaterializeResult(
        metadata=shown(
            report,
            timer.seconds,
            half_life_days=layers.skill_half_life_days,
            aged_to=now,
            run_id=run.id,
            skills=skills,
        )
    )


layers_job = dg.define_asset_job(
    "layers_job",
    selection=dg.AssetSelection.groups(LAYERS_GROUP),
    description="Ages the preference and skill layers: decayed confidences, which preferences "
    "still bind, skill levels.",
)


defs = dg.Definitions(assets=[attitude_decay, skill_levels], jobs=[layers_job])
