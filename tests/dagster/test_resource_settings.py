"""The launchpad's settings are the core's: a resource left at its defaults runs with the core's
defaults, and refuses what the core refuses."""

from __future__ import annotations

import dataclasses

import pydantic
import pytest

from memvault.dream.config import DreamConfig
from memvault.gardener.state import GardenConfig
from memvault.lifecycle.tiering import TierConfig
from memvault.review.policy import ReviewPolicy
from memvault.temporal import ConflictConfig
from resources import DreamResource, GardenerResource, LifecycleResource, ReviewResource


def test_a_resource_at_its_defaults_runs_with_the_cores_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MEMVAULT_DREAM_GATE_HOURS", raising=False)
    monkeypatch.delenv("MEMVAULT_DREAM_GATE_SESSIONS", raising=False)
    dream = DreamResource()
    assert dream.config() == DreamConfig()
    assert dream.conflict_config() == ConflictConfig()
    assert ReviewResource().policy() == ReviewPolicy()
    garden = dataclasses.asdict(GardenerResource().config())
    assert {k: garden[k] for k in ("mode", "max_mutations", "max_judgments")} == {
        k: getattr(GardenConfig(), k) for k in ("mode", "max_mutations", "max_judgments")
    }
    tiers, core = LifecycleResource().config(), TierConfig()
    assert (tiers.batch_size, tiers.blocks_per_call) == (core.batch_size, core.blocks_per_call)


def test_the_dream_gate_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_DREAM_GATE_HOURS", "2")
    monkeypatch.setenv("MEMVAULT_DREAM_GATE_SESSIONS", "3")
    assert (DreamResource().gate_hours, DreamResource().gate_sessions) == (2.0, 3)


@pytest.mark.parametrize(
    "settings",
    [
        lambda: DreamResource(confidence_threshold=1.5),
        lambda: DreamResource(conflict_batch_size=0),
        lambda: ReviewResource(auto_confidence=-0.1),
        lambda: LifecycleResource(batch_size=0),
        lambda: GardenerResource(max_mutations=-1),
    ],
)
def test_a_setting_out_of_the_cores_bounds_is_refused_at_launch(settings: object) -> None:
    with pytest.raises(pydantic.ValidationError):
        settings()  # type: ignore[operator]
