-- memvault schema, version 2: what the dream loop and the gardener record.
-- (A migration runs once, in a transaction; the added columns are nullable because DuckDB cannot add NOT NULL ones.)
-- Same portability rules as 0001 (TEXT ids, naive UTC TIMESTAMP, JSON in TEXT, no FKs).

-- MERGE keeps lineage: the ids of the triples folded into this one, and the details they carried.
ALTER TABLE triples ADD COLUMN lineage TEXT DEFAULT '[]';
-- Why a triple stopped being active (the verdict's reason, shown as the dated annotation).
ALTER TABLE triples ADD COLUMN note TEXT;

-- Decay (GD2) sets an expiry where it would otherwise propose deletion.
ALTER TABLE blocks ADD COLUMN expires_at TIMESTAMP;

-- One row per judged pair of triples (ids sorted, "a|b"): a verdict is never asked twice.
-- COEXIST lives here only; MERGE and SUPERSEDE are also visible on the triples themselves.
CREATE TABLE IF NOT EXISTS conflict_verdicts (
    id           TEXT PRIMARY KEY,
    triple_a     TEXT NOT NULL,
    triple_b     TEXT NOT NULL,
    verdict      TEXT NOT NULL,
    confidence   DOUBLE PRECISION NOT NULL,
    decided_by   TEXT NOT NULL,
    reason       TEXT,
    status       TEXT NOT NULL DEFAULT 'applied',
    run_id       TEXT,
    decided_at   TIMESTAMP NOT NULL
);

-- Derived graph data (recomputed, not audited): Leiden communities and centrality per entity.
CREATE TABLE IF NOT EXISTS communities (
    entity_id   TEXT PRIMARY KEY,
    community   INTEGER NOT NULL,
    size        INTEGER NOT NULL,
    run_id      TEXT,
    updated_at  TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS centrality (
    entity_id   TEXT PRIMARY KEY,
    pagerank    DOUBLE PRECISION NOT NULL,
    ppr         DOUBLE PRECISION NOT NULL,
    degree      INTEGER NOT NULL,
    run_id      TEXT,
    updated_at  TIMESTAMP NOT NULL
);

CREATE INDEX IF NOT EXISTS triples_subject_predicate ON triples (subject_id, predicate);
CREATE INDEX IF NOT EXISTS mentions_entity ON mentions (entity_id);
CREATE INDEX IF NOT EXISTS review_queue_kind ON review_queue (kind, status);
