-- memvault schema, version 13: where an ingest stages its input before it becomes visible.
-- A large input is read chunk by chunk into staging tables of its own (ingest_stage_<id>_<table>,
-- made from the memory table they feed) and moved into the memory tables in one audited
-- transaction at the end. Each ingest in progress is registered here with its process, so the
-- staging of an ingest that died is recognised and dropped at the next start.
CREATE TABLE IF NOT EXISTS ingest_staging (
    id            TEXT PRIMARY KEY,
    source        TEXT,
    host          TEXT,
    pid           INTEGER,
    started_at    TIMESTAMP NOT NULL,
    heartbeat_at  TIMESTAMP NOT NULL
);
