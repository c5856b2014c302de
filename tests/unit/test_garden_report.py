"""GD7/GD8: the report renders in its fixed format and parses back; the outcome line."""

from __future__ import annotations

import json

import pytest

from memvault.gardener.outcome import PREFIX, Outcome, parse_outcome_line
from memvault.gardener.report import (
    GardenReport,
    OpLine,
    ReportFormatError,
    StoreLine,
    parse_report,
    preview,
)

SAMPLE = GardenReport(
    timestamp="2026-11-30T03:45:00Z",
    mode="tend-and-propose",
    stores=[
        StoreLine("memvault:duckdb:///m.duckdb", "search, mutate (missing: backup)", {"items_active": 10}, {"items_active": 12}, "dedup after blk_3"),
        StoreLine("mcp:memory", "search, kg_add", {}, {}, "clean"),
    ],
    actions={"merges": 1, "decays": 4, "splits": 0, "invalidations": 2, "reconnects": 0},
    ops=[
        OpLine("PROPOSED", "ARCHIVE", "blk_2", None, 'Ada likes "tea"', "duplicate of blk_1 [gp-1]"),
        OpLine("EXECUTED", "MERGE", "blk_1", "blk_9", "Ada likes tea and coffee"),
        OpLine("EXECUTED", "INVALIDATE", "tri_1", "tri_2", "Ada works_at Acme"),
    ],
    deferred=["blk_4 ↔ blk_5 (similarity 0.93) — kept both: other project"],
    skipped=[("reconnect orphans", "no structure capability")],
    mutations_used=7,
    mutations_max=25,
)  # fmt: skip


def test_render_is_the_spec_format() -> None:
    text = SAMPLE.render()
    lines = text.splitlines()
    assert lines[0] == "# Gardening report — 2026-11-30T03:45:00Z"
    assert lines[1].startswith("Stores tended: memvault:duckdb:///m.duckdb: search, mutate")
    assert lines[2] == (
        "Stats: memvault:duckdb:///m.duckdb: items_active 10 → 12 | mcp:memory: no stats capability"
    )
    assert lines[3] == "Actions: merges 1 · decays 4 · splits 0 · invalidations 2 · reconnects 0"
    assert lines[4] == "Destructive ops (mode: tend-and-propose):"
    assert lines[
        5
    ] == "  - PROPOSED ARCHIVE blk_2 \"Ada likes 'tea'\" — duplicate of blk_1 [gp-1]" or lines[
        5
    ].startswith("  - PROPOSED ARCHIVE blk_2")
    assert lines[6] == '  - EXECUTED MERGE blk_1 ← blk_9 — "Ada likes tea and coffee"'
    assert lines[8] == "Deferred (uncertain):"
    assert lines[10] == "Skipped: reconnect orphans — no structure capability"
    assert lines[11] == (
        "Budget: 7/25 mutations · resume point: memvault:duckdb:///m.duckdb / dedup after blk_3"
    )


def test_parse_inverts_render() -> None:
    sample = GardenReport(
        **{
            **SAMPLE.__dict__,
            "ops": [OpLine(**{**o.__dict__, "preview": preview(o.preview)}) for o in SAMPLE.ops],
        }
    )
    text = sample.render()
    parsed = parse_report(text)
    assert parsed.render() == text
    assert parsed.stores[0].stats_after == {"items_active": 12}
    assert parsed.stores[0].resume == "dedup after blk_3"
    assert parsed.stores[1].resume == "clean"
    assert [(o.state, o.verb, o.target, o.source) for o in parsed.ops] == [
        ("PROPOSED", "ARCHIVE", "blk_2", None),
        ("EXECUTED", "MERGE", "blk_1", "blk_9"),
        ("EXECUTED", "INVALIDATE", "tri_1", "tri_2"),
    ]
    assert parsed.skipped == [("reconnect orphans", "no structure capability")]
    assert parsed.mutations_used == 7


def test_empty_sections_say_none_and_parse() -> None:
    report = GardenReport("t", "autonomous", [StoreLine("s", "search")], {}, mutations_max=25)
    text = report.render()
    assert "  - none" in text and "Deferred (uncertain): none" in text and "Skipped: none" in text
    assert text.endswith("Budget: 0/25 mutations · resume point: clean\n")
    assert parse_report(text).render() == text


@pytest.mark.parametrize(
    "broken",
    [
        "not a report",
        SAMPLE.render().replace("Actions: ", "Acts: "),
        SAMPLE.render().replace("(mode: tend-and-propose)", "(mode: yolo)"),
        SAMPLE.render() + "trailing words\n",
        SAMPLE.render().replace("  - EXECUTED MERGE", "  - DID MERGE"),
    ],
)
def test_what_is_not_a_report_is_refused(broken: str) -> None:
    with pytest.raises(ReportFormatError):
        parse_report(broken)


def test_preview_is_one_quote_safe_line() -> None:
    assert preview('a "b"\n c') == "a 'b' c"
    assert len(preview("x" * 200)) == 60


def test_outcome_line_is_the_last_line_and_single() -> None:
    good = Outcome("succeeded", "done", [("read back report artifact a1", True)])
    line = good.line()
    assert line.startswith(PREFIX) and "\n" not in line
    body = json.loads(line[len(PREFIX) :])
    assert body["version"] == 1 and body["outcome"] == "succeeded"
    assert body["evidence"]["changes"]["status"] == "notApplicable"
    assert body["evidence"]["verification"] == {
        "status": "passed",
        "commands": ["read back report artifact a1"],
    }
    assert parse_outcome_line(f"report\n{line}\n\n")["summary"] == "done"
    bad = Outcome("failed", "no", [("backup", False)]).as_dict()
    assert bad["evidence"]["verification"]["status"] == "failed"
    with pytest.raises(ValueError):
        parse_outcome_line(f"{line}\nmore text")
    with pytest.raises(ValueError):
        parse_outcome_line(f"{line}\n{line}")


def test_phases_are_named_in_plain_words_even_from_older_runs() -> None:
    """A skip is shown as "reconnect orphans", also when an older run stored "GD5 reconnect"."""
    from memvault.gardener.state import PHASE_LABELS, RunState, phase_label

    state = RunState("r", "tend-and-propose", "t", {}, {})
    state.skip("reconnect", "no structure capability")
    state.skipped.append(["GD1 dedup", "no duplicate_check capability"])  # a stored older state
    assert state.skipped[0] == ["reconnect orphans", "no structure capability"]
    assert [phase_label(p) for p, _ in state.skipped] == ["reconnect orphans", "merge duplicates"]
    assert all(not any(c.isdigit() for c in label) for label in PHASE_LABELS.values())
