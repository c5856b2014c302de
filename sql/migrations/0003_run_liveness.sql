-- memvault schema, version 3: who is running a run, so a run left "running" by a process that
-- died (killed, out of memory, a container stopped) is recognised and marked failed, and two
-- dreams never run on one store at once.
ALTER TABLE runs ADD COLUMN host TEXT;
ALTER TABLE runs ADD COLUMN pid INTEGER;
ALTER TABLE runs ADD COLUMN heartbeat_at TIMESTAMP;
