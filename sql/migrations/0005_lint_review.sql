-- memvault schema, version 5: the knowledge lint's findings and the review queue's decisions.

-- What each lint layer found: one row per finding (kept; a finding that is gone is resolved).
CREATE TABLE IF NOT EXISTS lint_findings (
    id           TEXT PRIMARY KEY,
    layer        TEXT NOT NULL,
    rule         TEXT NOT NULL,
    subject      TEXT,
    evidence     TEXT NOT NULL DEFAULT '{}',
    severity     TEXT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'open',
    run_id       TEXT,
    found_at     TIMESTAMP NOT NULL,
    resolved_at  TIMESTAMP
);
CREATE INDEX IF NOT EXISTS lint_findings_layer ON lint_findings (layer, status);

-- Who decided a review item (human, auto, deadline), why, and what the impact score rests on.
ALTER TABLE review_queue ADD COLUMN decided_by TEXT;
ALTER TABLE review_queue ADD COLUMN note TEXT;
ALTER TABLE review_queue ADD COLUMN impact_inputs TEXT;
