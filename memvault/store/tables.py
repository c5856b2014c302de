"""Facts about the tables that code needs beyond the DDL: which columns hold JSON, which are audited."""

from __future__ import annotations

#: Columns that hold JSON text (lists or objects) and are decoded on the way out.
JSON_COLUMNS: dict[str, tuple[str, ...]] = {
    "sessions": ("metadata",),
    "blocks": ("tags",),
    "triples": ("lineage",),
    "entities": ("aliases",),
    "attitudes": ("evidence",),
    "skills": ("evidence",),
    "recall_log": ("entities", "result_ids", "scores"),
    "prefetch_cache": ("result_ids", "scores"),
    "review_queue": ("proposal",),
    "discovery_inbox": ("entity_ids", "detail"),
    "knowledge_gap": ("detail",),
    "profile_daily": (
        "top_intents",
        "top_entities",
        "delta_vs_yesterday",
        "windows",
        "activity",
        "attention",
        "mentioned",
        "facts_learned",
    ),
    "interest_window": ("attention", "rising", "cooling"),
    "diary": ("source",),
    "runs": ("params", "stats", "cursor"),
}

#: Memory tables: every change to them goes through the audited write path.
AUDITED_TABLES: tuple[str, ...] = (
    "sessions",
    "blocks",
    "block_originals",
    "entities",
    "mentions",
    "triples",
    "edges",
    "attitudes",
    "skill_uses",
    "skills",
    "recall_log",
    "feedback",
    "review_queue",
    "discovery_inbox",
    "knowledge_gap",
    "profile_daily",
    "interest_window",
    "diary",
    "artifacts",
    "conflict_verdicts",
    "prefetch_cache",
)

#: Tables shown by ``memvault status`` and the demo's before/after summary.
COUNTED_TABLES: tuple[str, ...] = (
    "sessions",
    "blocks",
    "entities",
    "mentions",
    "triples",
    "attitudes",
    "skills",
    "recall_log",
    "feedback",
    "embeddings",
    "audit_log",
)
