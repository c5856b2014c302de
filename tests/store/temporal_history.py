"""Small hand-written histories for the temporal tests: sessions, entities, dated triples."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from memvault.ingest import ingest_file
from memvault.store import Store

#: The store time the tests' plans stamp on retired rows, so two runs can be compared.
NOW = dt.datetime(2026, 6, 1, 12, 0)


def when(value: str) -> dt.datetime:
    """``"2025-03-01"`` or ``"2025-03-01T10:00"`` as a naive UTC datetime."""
    return dt.datetime.fromisoformat(value)


def _iso(value: str | dt.datetime) -> str:
    return (when(value) if isinstance(value, str) else value).isoformat() + "Z"


class History:
    """Interchange records built up fact by fact, then ingested through the real path."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self._sessions: set[str] = set()
        self._files = 0

    def entity(
        self,
        entity_id: str,
        name: str,
        entity_type: str = "person",
        aliases: list[str] | None = None,
    ) -> str:
        record = {"type": "entity", "id": entity_id, "name": name, "entity_type": entity_type}
        self.records.append(record | ({"aliases": aliases} if aliases else {}))
        return entity_id

    def session(self, session_id: str, started: str) -> str:
        if session_id not in self._sessions:
            self._sessions.add(session_id)
            self.records.append({"type": "session", "id": session_id, "started_at": _iso(started)})
        return session_id

    def fact(
        self,
        triple_id: str,
        subject: str,
        predicate: str,
        obj: str,
        *,
        created: str,
        valid: str | None = None,
        object_id: str | None = None,
        text: str | None = None,
        confidence: float = 0.9,
        invalid: str | None = None,
    ) -> str:
        """A triple said in a session on ``created`` (one session per day), with its block."""
        session = self.session(f"ses_{created[:10]}", created[:10])
        record: dict[str, Any] = {
            "type": "triple",
            "id": triple_id,
            "subject": subject,
            "predicate": predicate,
            "object": obj,
            "object_id": object_id,
            "valid_at": _iso(valid) if valid else None,
            "invalid_at": _iso(invalid) if invalid else None,
            "created_at": _iso(created),
            "source_session": session,
            "confidence": confidence,
        }
        if text is not None:
            block = f"blk_{triple_id}"
            self.records.append(
                {"type": "block", "id": block, "session_id": session, "text": text,
                 "created_at": _iso(created)}
            )  # fmt: skip
            record["source_block"] = block
        self.records.append(record)
        return triple_id

    def attitude(
        self, attitude_id: str, category: str, statement: str, *, created: str,
        previous: str | None = None, superseded: str | None = None,
    ) -> str:  # fmt: skip
        self.records.append(
            {
                "type": "attitude",
                "id": attitude_id,
                "category": category,
                "statement": statement,
                "created_at": _iso(created),
                "evidence": [f"ses_{created[:10]}"],
                "previous_id": previous,
                "superseded_at": _iso(superseded) if superseded else None,
            }
        )
        return attitude_id

    def ingest(self, store: Store, folder: Path) -> None:
        """Ingest the records added since the last call (as one file)."""
        self._files += 1
        path = folder / f"history_{self._files}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in self.records), encoding="utf-8")
        self.records = []
        ingest_file(store, path)


def _agree(request: object) -> dict[str, object]:
    return {"agree": True, "confidence": 0.95, "reason": "the dates and texts show it"}


#: A scripted second judgment that agrees with every proposed change.
CONFIRM: dict[str, object] = {"confirm_change": _agree}
