"""Ingest and export on both backends: round trip, idempotency, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import memvault
from memvault.errors import IngestError
from memvault.ingest import ingest_file
from memvault.normalize import MAX_TEXT_CHARS
from memvault.store import Store
from tests.helpers import FIXTURES, export_text

SMALL = FIXTURES / "small_history.jsonl"
SESSION = {"type": "session", "id": "s1", "started_at": "2026-02-01T10:00:00Z"}


def _write(path: Path, *records: dict | str | bytes) -> Path:
    with path.open("wb") as fh:
        for r in records:
            if isinstance(r, dict):
                r = json.dumps(r)
            fh.write(r if isinstance(r, bytes) else r.encode())
            fh.write(b"\n")
    return path


def _block(text: str, **extra: object) -> dict:
    return {
        "type": "block",
        "session_id": "s1",
        "text": text,
        "created_at": "2026-02-01T10:05:00Z",
        **extra,
    }


def test_export_ingest_export_round_trips(store: Store, tmp_path: Path, store_url: str) -> None:
    ingest_file(store, SMALL)
    first = export_text(store)
    assert len(first.splitlines()) == 10
    exported = tmp_path / "export.jsonl"
    exported.write_text(first)
    other_url = f"duckdb://{tmp_path / 'other.duckdb'}"
    with memvault.open(other_url) as other:
        ingest_file(other, exported)
        assert export_text(other) == first


def test_ingesting_twice_adds_nothing(store: Store) -> None:
    first = ingest_file(store, SMALL)
    counts = store.counts()
    assert sum(first.inserted.values()) == 10
    skipped = ingest_file(store, SMALL)
    assert skipped.already_ingested
    forced = ingest_file(store, SMALL, force=True)
    assert sum(forced.inserted.values()) == 0
    assert sum(forced.existing.values()) == 10
    assert store.counts() | {"audit_log": 0} == counts | {"audit_log": 0}


def test_names_resolve_to_entities_of_earlier_files(store: Store, tmp_path: Path) -> None:
    ingest_file(store, SMALL)
    later = _write(
        tmp_path / "later.jsonl",
        {
            "type": "triple",
            "subject": "ada lovelace",
            "predicate": "lives in",
            "object": "London",
            "created_at": "2026-02-01T10:00:00Z",
        },
    )
    ingest_file(store, later)
    rows = store.fetch("SELECT subject_id, predicate FROM triples WHERE predicate = 'lives_in'")
    ada = store.fetch("SELECT id FROM entities WHERE canonical_name = 'ada lovelace'")[0][0]
    assert rows == [(ada, "lives_in")]


def _expect_error(store: Store, path: Path, pattern: str) -> IngestError:
    before = store.counts()
    with pytest.raises(IngestError, match=pattern) as info:
        ingest_file(store, path)
    assert store.counts() == before, "nothing of a rejected file may be written"
    assert "nothing from this input was written" in str(info.value)
    return info.value


def test_malformed_line_names_file_and_line(store: Store, tmp_path: Path) -> None:
    path = _write(tmp_path / "bad.jsonl", SESSION, _block("fine"), '{"type": "block", "text": ')
    err = _expect_error(store, path, r"bad\.jsonl:3: not valid JSON")
    assert err.problems[0].line == 3


def test_all_problems_are_listed_not_just_the_first(store: Store, tmp_path: Path) -> None:
    path = _write(
        tmp_path / "bad.jsonl", SESSION, "{oops", _block("ok"), '{"type":"blok"}', _block("")
    )
    err = _expect_error(store, path, r":2:")
    assert [p.line for p in err.problems] == [2, 4, 5]
    assert "unknown record type 'blok'" in err.problems[1].message
    assert "text is empty" in err.problems[2].message


def test_invalid_utf8_is_rejected_with_its_position(store: Store, tmp_path: Path) -> None:
    path = _write(
        tmp_path / "bad.jsonl",
        SESSION,
        b'{"type":"block","session_id":"s1","text":"caf\xe9","created_at":"2026-02-01T10:00:00Z"}',
    )
    _expect_error(store, path, r":2: invalid UTF-8 at byte 45")


def test_nul_and_control_characters_are_dropped(store: Store, tmp_path: Path) -> None:
    path = _write(tmp_path / "nul.jsonl", SESSION, _block("a\u0000b\u0007c\r\nd", id="b-nul"))
    ingest_file(store, path)
    assert store.get_row("blocks", "b-nul")["text"] == "abc\nd"


def test_a_one_megabyte_text_is_split_into_parts_without_loss(store: Store, tmp_path: Path) -> None:
    paragraph = "The agent kept a very long transcript of the incident review. " * 40
    text = "\n\n".join([paragraph] * 420)[:1_000_000].strip()
    path = _write(tmp_path / "big.jsonl", SESSION, _block(text, id="big"))
    report = ingest_file(store, path)
    assert report.split_blocks == 1
    parts = store.fetch_df("SELECT id, text, parent_id FROM blocks ORDER BY created_at, id")
    assert (
        parts.height == -(-len(text) // MAX_TEXT_CHARS)
        or parts.height > len(text) // MAX_TEXT_CHARS
    )
    assert all(len(t) <= MAX_TEXT_CHARS for t in parts["text"])
    assert parts.filter(parts["id"] == "big")["parent_id"][0] is None
    assert set(parts["parent_id"].drop_nulls()) == {"big"}
    ordered = sorted(
        parts.to_dicts(), key=lambda r: int(r["id"].split("~p")[1]) if "~p" in r["id"] else 1
    )
    assert "".join(r["text"] for r in ordered).replace(" ", "").replace("\n", "") == text.replace(
        " ", ""
    ).replace("\n", "")


def test_unknown_record_type(store: Store, tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", {"type": "memory", "text": "x"})
    _expect_error(store, path, r"unknown record type 'memory'; expected one of: session, entity")


def test_unknown_field_is_named(store: Store, tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", SESSION, _block("x", txt="typo"))
    _expect_error(store, path, r":2: unknown field 'txt'")


def test_triple_naming_an_unknown_entity(store: Store, tmp_path: Path) -> None:
    path = _write(
        tmp_path / "t.jsonl",
        {
            "type": "triple",
            "subject": "Nobody",
            "predicate": "works_at",
            "object": "X",
            "created_at": "2026-01-01",
        },
    )
    _expect_error(store, path, r":1: unknown entity 'Nobody'")


def test_ambiguous_entity_name_asks_for_the_id(store: Store, tmp_path: Path) -> None:
    path = _write(
        tmp_path / "t.jsonl",
        {"type": "entity", "id": "sam-1", "name": "Sam Lee", "entity_type": "person"},
        {"type": "entity", "id": "sam-2", "name": "Sam Lee", "entity_type": "person"},
        {
            "type": "triple",
            "subject": "Sam Lee",
            "predicate": "lives_in",
            "object": "Oslo",
            "created_at": "2026-01-01",
        },
    )
    _expect_error(
        store, path, r":3: entity name 'Sam Lee' is ambiguous \(sam-1, sam-2\); use the id"
    )


def test_block_of_an_unknown_session(store: Store, tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", _block("orphan"))
    _expect_error(store, path, r":1: unknown session 's1'")


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        ("yesterday-ish", r"created_at: Input should be a valid datetime"),
        ("3026-01-01T00:00:00Z", r"created_at 3026-01-01T00:00:00 lies in the future"),
        ("1066-10-14", r"created_at 1066-10-14T00:00:00 is before 1900"),
    ],
)
def test_bad_dates(store: Store, tmp_path: Path, value: str, pattern: str) -> None:
    path = _write(tmp_path / "t.jsonl", SESSION, _block("x", created_at=value))
    _expect_error(store, path, pattern)


def test_valid_time_may_lie_ahead_but_not_far(store: Store, tmp_path: Path) -> None:
    base = {"type": "entity", "id": "ada", "name": "Ada"}
    soon = {
        "type": "triple",
        "subject": "ada",
        "predicate": "works_at",
        "object": "Next Co",
        "valid_at": "2027-06-01",
        "created_at": "2026-01-01",
    }
    ingest_file(store, _write(tmp_path / "ok.jsonl", base, soon))
    far = dict(soon, valid_at="2999-01-01")
    _expect_error(
        store,
        _write(tmp_path / "far.jsonl", base, far),
        r"valid_at 2999-01-01T00:00:00 lies in the future",
    )


def test_same_id_with_different_content_in_one_file(store: Store, tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", SESSION, _block("one", id="b"), _block("two", id="b"))
    _expect_error(store, path, r":3: id 'b' also on line 2 with different content")


def test_timezones_are_stored_as_utc(store: Store, tmp_path: Path) -> None:
    path = _write(
        tmp_path / "t.jsonl", SESSION, _block("x", id="tz", created_at="2026-02-01T12:00:00+02:00")
    )
    ingest_file(store, path)
    assert store.get_row("blocks", "tz")["created_at"].isoformat() == "2026-02-01T10:00:00"


def test_missing_file_is_a_clear_error(store: Store, tmp_path: Path) -> None:
    with pytest.raises(memvault.errors.MemvaultError, match="no such file"):
        ingest_file(store, tmp_path / "absent.jsonl")


def test_a_session_that_went_on_is_extended_not_duplicated(store: Store, tmp_path: Path) -> None:
    first = _write(
        tmp_path / "a.jsonl", dict(SESSION, ended_at="2026-02-01T10:30:00Z"), _block("one", id="b1")
    )
    ingest_file(store, first)
    grown = _write(
        tmp_path / "b.jsonl",
        dict(SESSION, ended_at="2026-02-01T11:45:00Z"),
        _block("one", id="b1"),
        _block("two", id="b2", created_at="2026-02-01T11:40:00Z"),
    )
    report = ingest_file(store, grown)
    assert report.inserted["block"] == 1 and report.inserted["session"] == 0
    assert report.sessions_extended == 1
    assert store.get_row("sessions", "s1")["ended_at"].isoformat() == "2026-02-01T11:45:00"
    assert store.fetch("SELECT action FROM audit_log WHERE target_id = 's1' ORDER BY id") == [
        ("ingest",),
        ("extend",),
    ]
    again = ingest_file(store, grown, force=True)
    assert again.sessions_extended == 0 and sum(again.inserted.values()) == 0
