-- memvault schema, version 7: the memory lifecycle (read path, feedback, tiering, prefetch,
-- preference decay, surprise discovery).

-- What a recall found and how: the normalized query signature (gaps and prefetch match on it),
-- the scores of the returned blocks, the prefetched entry it was served from, the gap hint
-- given to the caller, its latency, and when its verdict came.
ALTER TABLE recall_log ADD COLUMN signature TEXT;
ALTER TABLE recall_log ADD COLUMN scores TEXT DEFAULT '[]';
ALTER TABLE recall_log ADD COLUMN prefetch_id TEXT;
ALTER TABLE recall_log ADD COLUMN gap_hint TEXT;
ALTER TABLE recall_log ADD COLUMN latency_ms DOUBLE PRECISION;
ALTER TABLE recall_log ADD COLUMN verdict_at TIMESTAMP;

-- Tiering: which kind of digest now stands in for the text (llm, extractive, headline) and
-- when the tier last changed. The full text before a digest stays in the audit log.
ALTER TABLE blocks ADD COLUMN digest_kind TEXT;
ALTER TABLE blocks ADD COLUMN tiered_at TIMESTAMP;

-- Preference decay: the confidence as stated, when evidence last came, when decay last ran.
ALTER TABLE attitudes ADD COLUMN stated_confidence DOUBLE PRECISION;
ALTER TABLE attitudes ADD COLUMN evidence_at TIMESTAMP;
ALTER TABLE attitudes ADD COLUMN decayed_at TIMESTAMP;

-- Results searched ahead of time for queries the owner is likely to ask next.
CREATE TABLE IF NOT EXISTS prefetch_cache (
    id           TEXT PRIMARY KEY,
    signature    TEXT NOT NULL,
    query        TEXT NOT NULL,
    source       TEXT NOT NULL,
    result_ids   TEXT NOT NULL DEFAULT '[]',
    scores       TEXT NOT NULL DEFAULT '[]',
    run_id       TEXT,
    created_at   TIMESTAMP NOT NULL,
    expires_at   TIMESTAMP NOT NULL,
    hits         INTEGER NOT NULL DEFAULT 0,
    last_hit_at  TIMESTAMP
);

-- A discovery is found once: its signature (kind + entities) keeps a re-run from repeating it.
ALTER TABLE discovery_inbox ADD COLUMN signature TEXT;
ALTER TABLE discovery_inbox ADD COLUMN detail TEXT DEFAULT '{}';

CREATE INDEX IF NOT EXISTS recall_log_signature ON recall_log (signature);
CREATE INDEX IF NOT EXISTS prefetch_cache_signature ON prefetch_cache (signature);
