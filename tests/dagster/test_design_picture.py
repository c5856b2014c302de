"""docs/design.md opens with the picture of the tracks and their assets that the code location
draws (``python -m pipelines.picture``): an asset added, renamed or moved to another track
without regenerating it fails here."""

from __future__ import annotations

import dagster as dg

from pipelines.definitions import single_owner_defs
from pipelines.picture import BEGIN, DESIGN, mermaid, picture, shown


def test_the_design_page_opens_with_the_picture_the_definitions_draw() -> None:
    text = DESIGN.read_text(encoding="utf-8")
    title, _, rest = text.partition("\n\n")
    assert title.startswith("# ") and rest.startswith(BEGIN), "the picture comes first"
    assert shown(text) == picture(single_owner_defs()), "run: python -m pipelines.picture"


def test_the_picture_names_every_asset_track_and_trigger() -> None:
    defs = single_owner_defs()
    chart = mermaid(defs)
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert f"[{node.group_name}]" in chart, node.group_name
        assert f"({key.to_user_string()})" in chart or f"[{key.to_user_string()}]" in chart, key
    assert "collected_sessions --> memory_embeddings" in chart
    assert "garden_report --> lint_structure" in chart
    assert "collector_daily -.-> collected_sessions" in chart
    assert "dream_gate_sensor -.-> dream_orient" in chart
    assert "daily_snapshot --> daily_snapshot" not in chart, "a day's own yesterday is left out"


def test_an_asset_added_without_regenerating_changes_the_picture() -> None:
    @dg.asset(group_name="dream", deps=["dream_prune"])
    def dream_summary() -> None:
        """A new asset of the dream."""

    grown = dg.Definitions.merge(single_owner_defs(), dg.Definitions(assets=[dream_summary]))
    drawn = picture(grown)
    assert "dream_prune --> dream_summary" in drawn
    assert shown(DESIGN.read_text(encoding="utf-8")) != drawn
