"""The stage contract's adapter on its own: what ``materialize`` makes of a stage's report,
and what a stage that raises ``StageFailed`` shows when it fails the step."""

from __future__ import annotations

import datetime as dt

import dagster as dg
import pytest

from assets.stage_adapter import materialize
from memvault.stage import Figures, Markdown, Stage, StageFailed

AT = dt.datetime(2025, 3, 1, 12, 0)


def _figures() -> Figures:
    return Figures(
        {
            "written": 3,
            "per_level": {"L1": 2, "L2": 1},
            "rows": [{"id": "a", "why": "new"}],
            "aged_to": AT,
            "page": Markdown("# done"),
        }
    )


def test_a_stage_materializes_its_figures_in_the_uis_terms_with_its_time() -> None:
    result = materialize(Stage("skill_levels", _figures), run_id="r-1")
    meta = result.metadata
    assert result.asset_key is None, "a single asset's result names no key"
    assert meta is not None and meta["written"] == 3 and meta["run_id"] == "r-1"
    per_level, rows = meta["per_level"], meta["rows"]
    assert isinstance(per_level, dg.MarkdownMetadataValue)
    assert isinstance(rows, dg.MarkdownMetadataValue)
    assert "| L1 | 2 |" in (per_level.md_str or "") and "| a | new |" in (rows.md_str or "")
    assert meta["aged_to"] == dg.MetadataValue.timestamp(AT.replace(tzinfo=dt.UTC))
    assert meta["page"] == dg.MetadataValue.md("# done")
    assert isinstance(meta["duration_s"], float) and 0 <= meta["duration_s"] < 5


def test_a_stage_of_a_multi_asset_names_its_asset() -> None:
    result = materialize(Stage("lint_structure", _figures), keyed=True)
    assert result.asset_key == dg.AssetKey("lint_structure")


def test_a_stage_that_failed_after_saving_fails_the_step_with_its_figures_so_far() -> None:
    def stops() -> Figures:
        raise StageFailed("3 of 10 batches written; the rest on retry", {"batches_done": 3})

    with pytest.raises(dg.Failure) as failed:
        materialize(Stage("dream_consolidate", stops))
    assert failed.value.description == "3 of 10 batches written; the rest on retry"
    assert failed.value.metadata["batches_done"] == dg.MetadataValue.int(3)
    assert "duration_s" in failed.value.metadata
    assert isinstance(failed.value.__cause__, StageFailed)


def test_any_other_error_of_a_stage_is_its_own() -> None:
    def breaks() -> Figures:
        raise ValueError("bad row")

    with pytest.raises(ValueError, match="bad row"):
        materialize(Stage("usage_weights", breaks))


def test_stage_failed_keeps_a_copy_of_its_figures() -> None:
    figures = {"done": 2}
    failed = StageFailed("layer 3 failed", figures)
    figures["done"] = 5
    assert str(failed) == "layer 3 failed" and failed.figures == {"done": 2}
    assert StageFailed("no figures").figures == {}


def test_a_step_whose_stage_failed_shows_its_figures_on_the_failure() -> None:
    @dg.asset
    def halfway() -> dg.MaterializeResult:
        def stops() -> Figures:
            raise StageFailed("stopped at batch 4", {"batches_done": 4})

        return materialize(Stage("halfway", stops))

    result = dg.materialize([halfway], raise_on_error=False)
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    info = failure.step_failure_data
    assert info.user_failure_data is not None
    assert info.user_failure_data.description == "stopped at batch 4"
    assert info.user_failure_data.metadata["batches_done"] == dg.MetadataValue.int(4)
    assert not result.asset_materializations_for_node("halfway")
