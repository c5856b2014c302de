"""Importers turn other tools' session logs into memvault's interchange records.

Each importer reads one source's files and yields sessions as lists of records
(session, blocks, entities, mentions); it never touches the store, so the
ingest path validates and writes them like any JSONL input.
"""

from __future__ import annotations

from memvault.importers.claude_code import ImportedSession, read_claude_code

__all__ = ["ImportedSession", "read_claude_code"]
