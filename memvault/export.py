"""Export: the store as JSONL interchange records, in a stable order.

Records come out type by type (referenced things first, as ``ingest`` wants
them) and by id within a type, so export → ingest into an empty store →
export reproduces the file byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import IO, Any

from memvault.interchange import MAPPINGS, rows_to_records
from memvault.records import RECORD_TYPES
from memvault.store import Store
from memvault.store.queries.interchange import rows_after

BATCH_ROWS = 50_000


def export_records(store: Store, types: Sequence[str] = RECORD_TYPES) -> Iterator[dict[str, Any]]:
    """Every record of the given types, streamed in batches so memory stays flat."""
    for type_name in types:
        table = MAPPINGS[type_name].table
        last = ""
        while True:
            batch = rows_after(store, table, last, BATCH_ROWS)
            if batch.is_empty():
                break
            yield from rows_to_records(type_name, batch.iter_rows(named=True))
            last = batch["id"][-1]


def dump_line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def write_export(store: Store, out: IO[str], types: Sequence[str] = RECORD_TYPES) -> int:
    """Write the export to a text stream; returns the number of records."""
    count = 0
    for record in export_records(store, types):
        out.write(dump_line(record))
        out.write("\n")
        count += 1
    return count
