"""How interchange records map to store rows and back.

Most record fields are columns of the same name; the exceptions live here:
entity references (``mention.entity`` → ``entity_id``, ``triple.subject`` →
``subject_id``), JSON-held lists and objects, and the derived ``skill_id``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from memvault.normalize import canonical_name, iso
from memvault.records import (
    AttitudeRecord,
    BlockRecord,
    EntityRecord,
    FeedbackRecord,
    MentionRecord,
    OriginalRecord,
    RecallRecord,
    Record,
    SessionRecord,
    SkillUseRecord,
    TripleRecord,
    stable_id,
)
from memvault.store.tables import JSON_COLUMNS


@dataclass(frozen=True)
class TypeMapping:
    """One record type: its model, its table, and field ↔ column renames."""

    record_type: str
    model: type[Record]
    table: str
    renames: tuple[tuple[str, str], ...] = ()  # (record field, column)

    @property
    def field_to_column(self) -> dict[str, str]:
        return dict(self.renames)

    @property
    def column_to_field(self) -> dict[str, str]:
        return {c: f for f, c in self.renames}


MAPPINGS: dict[str, TypeMapping] = {
    m.record_type: m
    for m in (
        TypeMapping("session", SessionRecord, "sessions"),
        TypeMapping("entity", EntityRecord, "entities"),
        TypeMapping("block", BlockRecord, "blocks"),
        TypeMapping("original", OriginalRecord, "block_originals"),
        TypeMapping("mention", MentionRecord, "mentions", (("entity", "entity_id"),)),
        TypeMapping("triple", TripleRecord, "triples", (("subject", "subject_id"),)),
        TypeMapping("recall", RecallRecord, "recall_log"),
        TypeMapping("feedback", FeedbackRecord, "feedback"),
        TypeMapping("attitude", AttitudeRecord, "attitudes"),
        TypeMapping("skill_use", SkillUseRecord, "skill_uses"),
    )
}


def skill_id(name: str) -> str:
    """Skills are identified by their canonical name."""
    return stable_id("skl", canonical_name(name))


def records_to_frame(type_name: str, records: Sequence[Record]) -> pl.DataFrame:
    """The rows of many (resolved) records of one type, built column by column (ingest's hot path)."""
    mapping = MAPPINGS[type_name]
    renames = mapping.field_to_column
    json_cols = JSON_COLUMNS.get(mapping.table, ())
    dicts = [r.__dict__ for r in records]
    columns: dict[str, list[Any]] = {}
    for name in mapping.model.model_fields:
        if name == "type":
            continue
        column = renames.get(name, name)
        values = [d[name] for d in dicts]
        if column in json_cols:
            values = [
                json.dumps(v, ensure_ascii=False) if v else _EMPTY_JSON[type(v)] for v in values
            ]
        columns[column] = values
    if type_name == "skill_use":
        columns["skill_id"] = [skill_id(name) for name in columns["skill"]]
    return pl.DataFrame(columns, strict=False)


_EMPTY_JSON: dict[type, str] = {list: "[]", dict: "{}"}


def rows_to_records(type_name: str, rows: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
    """Rows of a table as export records, fields in the model's order."""
    mapping = MAPPINGS[type_name]
    fields = [f for f in mapping.model.model_fields if f != "type"]
    renames = mapping.field_to_column
    json_cols = set(JSON_COLUMNS.get(mapping.table, ()))
    for row in rows:
        out: dict[str, Any] = {"type": type_name}
        for name in fields:
            column = renames.get(name, name)
            value = row[column]
            if column in json_cols:
                value = json.loads(value) if value is not None else None
            elif isinstance(value, dt.datetime):
                value = iso(value)
            out[name] = value
        yield out
