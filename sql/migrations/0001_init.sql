-- memvault schema, version 1: every table of design.md, portable between DuckDB and PostgreSQL.
--
-- Portability rules kept here: TEXT/BIGINT/INTEGER/DOUBLE PRECISION/BOOLEAN/TIMESTAMP/DATE/BYTEA
-- only; times are naive UTC; lists and objects are JSON held in TEXT; ids are TEXT; sequences
-- instead of SERIAL. No foreign keys: DuckDB implements an UPDATE of a referenced row as
-- delete + insert and rejects it, so referential integrity is checked by ingest and the lint.

CREATE SEQUENCE IF NOT EXISTS audit_log_seq START 1;

CREATE TABLE IF NOT EXISTS schema_version (
    version     INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    applied_at  TIMESTAMP NOT NULL
);

-- One row per agent session (a Claude Code transcript, a codex run, a JSONL batch ...).
CREATE TABLE IF NOT EXISTS sessions (
    id          TEXT PRIMARY KEY,
    source      TEXT NOT NULL,
    started_at  TIMESTAMP NOT NULL,
    ended_at    TIMESTAMP,
    title       TEXT,
    project     TEXT,
    metadata    TEXT NOT NULL DEFAULT '{}'
);

-- Memory items: transcript turns, agent-written memories, summaries, insights.
CREATE TABLE IF NOT EXISTS blocks (
    id                TEXT PRIMARY KEY,
    session_id        TEXT,
    kind              TEXT NOT NULL,
    role              TEXT,
    text              TEXT NOT NULL,
    importance        DOUBLE PRECISION NOT NULL DEFAULT 0.5,
    pinned            BOOLEAN NOT NULL DEFAULT FALSE,
    tier              TEXT NOT NULL DEFAULT 'hot',
    summary           TEXT,
    status            TEXT NOT NULL DEFAULT 'active',
    parent_id         TEXT,
    tags              TEXT NOT NULL DEFAULT '[]',
    created_at        TIMESTAMP NOT NULL,
    updated_at        TIMESTAMP NOT NULL,
    last_accessed_at  TIMESTAMP,
    access_count      INTEGER NOT NULL DEFAULT 0,
    feedback_score    DOUBLE PRECISION NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS entities (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    canonical_name  TEXT NOT NULL,
    entity_type     TEXT NOT NULL,
    aliases         TEXT NOT NULL DEFAULT '[]',
    status          TEXT NOT NULL DEFAULT 'active',
    created_at      TIMESTAMP
);

-- Which block / session mentions which entity, and when.
CREATE TABLE IF NOT EXISTS mentions (
    id            TEXT PRIMARY KEY,
    entity_id     TEXT NOT NULL,
    block_id      TEXT,
    session_id    TEXT,
    mentioned_at  TIMESTAMP NOT NULL
);

-- Bi-temporal facts: valid_at/invalid_at = world time; created_at/expired_at = store time.
CREATE TABLE IF NOT EXISTS triples (
    id              TEXT PRIMARY KEY,
    subject_id      TEXT NOT NULL,
    predicate       TEXT NOT NULL,
    object          TEXT NOT NULL,
    object_id       TEXT,
    valid_at        TIMESTAMP,
    invalid_at      TIMESTAMP,
    created_at      TIMESTAMP NOT NULL,
    expired_at      TIMESTAMP,
    source_session  TEXT,
    source_block    TEXT,
    confidence      DOUBLE PRECISION NOT NULL DEFAULT 1,
    status          TEXT NOT NULL DEFAULT 'active',
    superseded_by   TEXT
);

-- Entity-entity edges with the five signals of E1 and their composite (E2).
CREATE TABLE IF NOT EXISTS edges (
    id                   TEXT PRIMARY KEY,
    source_id            TEXT NOT NULL,
    target_id            TEXT NOT NULL,
    co_occurrence        DOUBLE PRECISION NOT NULL DEFAULT 0,
    session_overlap      DOUBLE PRECISION NOT NULL DEFAULT 0,
    adamic_adar          DOUBLE PRECISION NOT NULL DEFAULT 0,
    type_affinity        DOUBLE PRECISION NOT NULL DEFAULT 0,
    semantic_similarity  DOUBLE PRECISION NOT NULL DEFAULT 0,
    composite_weight     DOUBLE PRECISION NOT NULL DEFAULT 0,
    status               TEXT NOT NULL DEFAULT 'pending',
    updated_at           TIMESTAMP NOT NULL
);

-- Preferences, with a version chain (superseded_at, previous_id).
CREATE TABLE IF NOT EXISTS attitudes (
    id             TEXT PRIMARY KEY,
    category       TEXT NOT NULL,
    statement      TEXT NOT NULL,
    confidence     DOUBLE PRECISION NOT NULL,
    weight         DOUBLE PRECISION NOT NULL DEFAULT 1,
    evidence       TEXT NOT NULL DEFAULT '[]',
    created_at     TIMESTAMP NOT NULL,
    superseded_at  TIMESTAMP,
    previous_id    TEXT
);

-- Each use of a skill (the evidence); `skills` is derived from these.
CREATE TABLE IF NOT EXISTS skill_uses (
    id           TEXT PRIMARY KEY,
    skill_id     TEXT NOT NULL,
    skill        TEXT NOT NULL,
    proficiency  DOUBLE PRECISION NOT NULL,
    session_id   TEXT,
    evidence     TEXT,
    used_at      TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS skills (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    level           TEXT NOT NULL,
    xp              DOUBLE PRECISION NOT NULL,
    half_life_days  DOUBLE PRECISION NOT NULL,
    uses            INTEGER NOT NULL,
    last_used_at    TIMESTAMP,
    evidence        TEXT NOT NULL DEFAULT '[]',
    updated_at      TIMESTAMP NOT NULL
);

-- Every foreground recall with its CRAG-style verdict.
CREATE TABLE IF NOT EXISTS recall_log (
    id            TEXT PRIMARY KEY,
    query         TEXT NOT NULL,
    intent_label  TEXT,
    entities      TEXT NOT NULL DEFAULT '[]',
    result_ids    TEXT NOT NULL DEFAULT '[]',
    verdict       TEXT,
    session_id    TEXT,
    created_at    TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS feedback (
    id          TEXT PRIMARY KEY,
    target_id   TEXT NOT NULL,
    kind        TEXT NOT NULL,
    value       DOUBLE PRECISION NOT NULL,
    session_id  TEXT,
    note        TEXT,
    created_at  TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS review_queue (
    id            TEXT PRIMARY KEY,
    kind          TEXT NOT NULL,
    target_table  TEXT,
    target_id     TEXT,
    proposal      TEXT NOT NULL DEFAULT '{}',
    reason        TEXT,
    confidence    DOUBLE PRECISION,
    impact_score  DOUBLE PRECISION,
    status        TEXT NOT NULL DEFAULT 'pending',
    deadline      TIMESTAMP,
    run_id        TEXT,
    created_at    TIMESTAMP NOT NULL,
    decided_at    TIMESTAMP,
    decision      TEXT
);

CREATE TABLE IF NOT EXISTS discovery_inbox (
    id           TEXT PRIMARY KEY,
    kind         TEXT NOT NULL,
    entity_ids   TEXT NOT NULL DEFAULT '[]',
    score        DOUBLE PRECISION NOT NULL DEFAULT 0,
    explanation  TEXT,
    status       TEXT NOT NULL DEFAULT 'new',
    run_id       TEXT,
    created_at   TIMESTAMP NOT NULL,
    shown_at     TIMESTAMP
);

CREATE TABLE IF NOT EXISTS knowledge_gap (
    id               TEXT PRIMARY KEY,
    query_signature  TEXT NOT NULL,
    kind             TEXT NOT NULL,
    fail_count       INTEGER NOT NULL DEFAULT 0,
    first_fail_at    TIMESTAMP,
    last_fail_at     TIMESTAMP,
    status           TEXT NOT NULL DEFAULT 'open',
    detail           TEXT NOT NULL DEFAULT '{}'
);

CREATE TABLE IF NOT EXISTS profile_daily (
    id                  TEXT PRIMARY KEY,
    day                 DATE NOT NULL,
    top_intents         TEXT NOT NULL DEFAULT '[]',
    top_entities        TEXT NOT NULL DEFAULT '[]',
    delta_vs_yesterday  TEXT NOT NULL DEFAULT '{}',
    windows             TEXT NOT NULL DEFAULT '{}',
    created_at          TIMESTAMP NOT NULL
);

CREATE TABLE IF NOT EXISTS diary (
    id          TEXT PRIMARY KEY,
    day         DATE NOT NULL,
    text        TEXT NOT NULL,
    run_id      TEXT,
    created_at  TIMESTAMP NOT NULL
);

-- Stored reports and other artifacts (the gardener's report lands here).
CREATE TABLE IF NOT EXISTS artifacts (
    id          TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    name        TEXT NOT NULL,
    content     TEXT NOT NULL,
    run_id      TEXT,
    created_at  TIMESTAMP NOT NULL
);

-- Every mutation of a memory table, with before- and after-image (JSON), in the
-- same transaction as the change. `memvault undo RUN_ID` replays before-images.
CREATE TABLE IF NOT EXISTS audit_log (
    id            BIGINT PRIMARY KEY DEFAULT nextval('audit_log_seq'),
    run_id        TEXT NOT NULL,
    phase         TEXT NOT NULL,
    action        TEXT NOT NULL,
    target_table  TEXT NOT NULL,
    target_id     TEXT NOT NULL,
    before_image  TEXT,
    after_image   TEXT,
    reason        TEXT,
    created_at    TIMESTAMP NOT NULL
);

-- Runs of ingest, dream, gardener, undo: state, budgets used, resume cursors.
CREATE TABLE IF NOT EXISTS runs (
    id              TEXT PRIMARY KEY,
    kind            TEXT NOT NULL,
    status          TEXT NOT NULL,
    started_at      TIMESTAMP NOT NULL,
    finished_at     TIMESTAMP,
    params          TEXT NOT NULL DEFAULT '{}',
    stats           TEXT NOT NULL DEFAULT '{}',
    cursor          TEXT NOT NULL DEFAULT '{}',
    dagster_run_id  TEXT,
    error           TEXT
);

-- Input files and transcripts already ingested, by content hash (the collector skips them).
CREATE TABLE IF NOT EXISTS ingested_sources (
    id           TEXT PRIMARY KEY,
    location     TEXT NOT NULL,
    size_bytes   BIGINT NOT NULL,
    records      INTEGER NOT NULL,
    run_id       TEXT NOT NULL,
    ingested_at  TIMESTAMP NOT NULL
);

-- Derived data (not audited): vectors keyed by model, so a model change means re-embedding.
CREATE TABLE IF NOT EXISTS embeddings (
    target_kind  TEXT NOT NULL,
    target_id    TEXT NOT NULL,
    model        TEXT NOT NULL,
    dim          INTEGER NOT NULL,
    vector       BYTEA NOT NULL,
    text_hash    TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    PRIMARY KEY (target_kind, target_id, model)
);

-- LLM replies by prompt hash: a re-run of judged work costs no call.
CREATE TABLE IF NOT EXISTS judge_cache (
    key                TEXT PRIMARY KEY,
    task               TEXT NOT NULL,
    model              TEXT NOT NULL,
    reply              TEXT NOT NULL,
    prompt_tokens      INTEGER NOT NULL DEFAULT 0,
    completion_tokens  INTEGER NOT NULL DEFAULT 0,
    created_at         TIMESTAMP NOT NULL
);

CREATE INDEX IF NOT EXISTS audit_log_run ON audit_log (run_id);
CREATE INDEX IF NOT EXISTS audit_log_target ON audit_log (target_table, target_id);
