-- memvault schema, version 6: the daily interest profile, the diary and knowledge gaps.
-- (Version 5 is the knowledge lint's; the added columns are nullable because DuckDB cannot add
-- NOT NULL ones.) Same portability rules as 0001.

-- A daily snapshot keeps the numbers it was computed from, so every later reader (the interest
-- windows, the diary, `memvault profile`) reads the same day the same way.
ALTER TABLE profile_daily ADD COLUMN known_at TIMESTAMP;          -- the store-time cut: end of the day
ALTER TABLE profile_daily ADD COLUMN timezone TEXT;               -- whose day it is
ALTER TABLE profile_daily ADD COLUMN activity TEXT DEFAULT '{}';  -- sessions, blocks, recalls, facts that day
ALTER TABLE profile_daily ADD COLUMN attention TEXT DEFAULT '{}'; -- entity id -> mentions that day
ALTER TABLE profile_daily ADD COLUMN mentioned TEXT DEFAULT '[]'; -- people and things mentioned, most first
ALTER TABLE profile_daily ADD COLUMN facts_learned TEXT DEFAULT '[]'; -- facts the store learned that day
ALTER TABLE profile_daily ADD COLUMN run_id TEXT;
ALTER TABLE profile_daily ADD COLUMN updated_at TIMESTAMP;

-- Attention over a trailing window (7, 30, 90 days) and what rose and cooled against the window
-- before it; one row per window and day, read from the daily snapshots it covers.
CREATE TABLE IF NOT EXISTS interest_window (
    id            TEXT PRIMARY KEY,
    day           DATE NOT NULL,
    window_days   INTEGER NOT NULL,
    days_covered  INTEGER NOT NULL,
    attention     TEXT NOT NULL DEFAULT '[]',
    rising        TEXT NOT NULL DEFAULT '[]',
    cooling       TEXT NOT NULL DEFAULT '[]',
    run_id        TEXT,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP
);

-- Who wrote a diary page (llm, template, empty) and from which numbers.
ALTER TABLE diary ADD COLUMN kind TEXT;
ALTER TABLE diary ADD COLUMN model TEXT;
ALTER TABLE diary ADD COLUMN source TEXT DEFAULT '{}';
ALTER TABLE diary ADD COLUMN updated_at TIMESTAMP;

-- A gap answered later stays recorded, with when and how it was answered.
ALTER TABLE knowledge_gap ADD COLUMN answered_at TIMESTAMP;

CREATE INDEX IF NOT EXISTS profile_daily_day ON profile_daily (day);
CREATE INDEX IF NOT EXISTS interest_window_day ON interest_window (window_days, day);
CREATE INDEX IF NOT EXISTS diary_day ON diary (day);
