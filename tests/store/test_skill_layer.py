"""Skills as the owner relies on them: levels rise with use and fade when unused."""

from __future__ import annotations

import datetime as dt

import pytest

from memvault.layers import skills
from memvault.layers.skills import LEVEL_LABELS, SkillError
from memvault.store import Store, undo_run

T0 = dt.datetime(2026, 1, 5, 10, 0)


def day(n: float) -> dt.datetime:
    return T0 + dt.timedelta(days=n)


def _skill(store: Store, name: str = "Rust") -> dict:
    frame = skills.skill_table(store)
    rows = frame.filter(frame["name"] == name)
    assert rows.height == 1
    return rows.row(0, named=True)


def _decay(store: Store, now: dt.datetime) -> tuple[skills.SkillDecayReport, str]:
    run_id = store.begin_run("skill_levels")
    report = skills.decay_skills(store, now, run_id, half_life=90.0)
    store.finish_run(run_id, "succeeded")
    return report, run_id


def test_levels_rise_with_uses_and_fall_with_time(store: Store) -> None:
    # A proficient use (1.0) is worth 1.5 points: L2 from 3 points, L3 from 10.
    levels = [
        skills.record_use(store, "Rust", 1.0, session_id=f"s{i}", now=day(i), half_life=90.0).level
        for i in range(7)
    ]
    assert levels[0] == "L1" and levels[2] == "L2" and levels[-1] == "L3"
    assert levels == sorted(levels), "never down while used"
    row = _skill(store)
    assert row["uses"] == 7 and row["label"] == "can teach" and row["last_used_at"] == day(6)

    # 90 days unused: the experience (~10.26) halves → L2; 270 days more → L1.
    report, _ = _decay(store, day(96))
    assert report.down == ["Rust"] and report.up == [] and report.per_level == {"L2": 1}
    assert _skill(store)["level"] == "L2"
    expected = sum(1.5 * 0.5 ** ((96 - i) / 90) for i in range(7))
    assert _skill(store)["xp"] == pytest.approx(expected, abs=1e-4) and 3 <= expected < 10
    report, _ = _decay(store, day(400))
    assert report.down == ["Rust"] and _skill(store)["level"] == "L1"
    assert _skill(store)["label"] == "heard of"

    # Used again: up again.
    for i in range(2):
        skills.record_use(store, "Rust", 1.0, now=day(401 + i), half_life=90.0)
    assert _skill(store)["level"] == "L2" and _skill(store)["label"] == "have done"


def test_experience_follows_the_half_life(store: Store) -> None:
    skills.record_use(store, "Scala", 0.5, now=T0, half_life=90.0)  # 1.0 point
    _decay(store, day(90))
    assert _skill(store, "Scala")["xp"] == pytest.approx(0.5, abs=1e-4)
    _decay(store, day(180))
    assert _skill(store, "Scala")["xp"] == pytest.approx(0.25, abs=1e-4)


def test_a_rerun_at_the_same_time_writes_nothing(store: Store) -> None:
    skills.record_use(store, "SQL", 0.8, now=T0, half_life=90.0)
    skills.record_use(store, "Python", 0.9, now=T0, half_life=90.0)
    first, _ = _decay(store, day(30))
    assert first.written == 2
    second, run_b = _decay(store, day(30))
    assert second.written == 0 and (second.up, second.down) == ([], [])
    assert store.fetch("SELECT count(*) FROM audit_log WHERE run_id = :r", {"r": run_b}) == [(0,)]


def test_record_use_is_audited_and_undoable(store: Store) -> None:
    used = skills.record_use(store, "Go", 0.6, "wrote a CLI", session_id="s1", now=T0)
    phases = store.fetch(
        "SELECT target_table, phase FROM audit_log WHERE run_id = :r ORDER BY target_table",
        {"r": used.run_id},
    )
    assert phases == [("skill_uses", "skills"), ("skills", "skills")]
    assert store.fetch("SELECT evidence FROM skill_uses WHERE id = :i", {"i": used.use_id}) == [
        ("wrote a CLI",)
    ]
    undo_run(store, used.run_id)
    assert store.fetch("SELECT count(*) FROM skill_uses") == [(0,)]
    assert store.fetch("SELECT count(*) FROM skills") == [(0,)]


def test_decay_is_undoable(store: Store) -> None:
    for i in range(3):
        skills.record_use(store, "Rust", 1.0, now=day(i), half_life=90.0)
    before = _skill(store)
    _, run_id = _decay(store, day(200))
    assert _skill(store)["level"] == "L1"
    undo_run(store, run_id)
    after = _skill(store)
    assert (after["level"], after["xp"]) == (before["level"], before["xp"])


def test_bad_uses_are_refused(store: Store) -> None:
    with pytest.raises(SkillError, match="between 0 and 1"):
        skills.record_use(store, "Rust", 1.5, now=T0)
    with pytest.raises(SkillError, match="name"):
        skills.record_use(store, "  ", 0.5, now=T0)
    skills.record_use(store, "Rust", 0.5, session_id="s1", now=T0)
    with pytest.raises(SkillError, match="is recorded"):
        skills.record_use(store, "rust", 0.5, session_id="s1", now=T0)
    assert store.fetch("SELECT count(*) FROM skill_uses") == [(1,)]
    assert set(LEVEL_LABELS.values()) == {"heard of", "have done", "can teach"}
