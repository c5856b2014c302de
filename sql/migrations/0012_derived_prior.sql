-- memvault schema, version 12: what a running dream replaced in the tables it rewrites whole.
-- Communities and centrality are recomputed by every dream and not audited row by row. Before a
-- dream rewrites one it keeps the rows it replaces here (a row with a NULL image marks the copy as
-- taken, so an empty table is kept too); a dream that fails puts them back, with the audit log's
-- before-images for everything else, and the copy is dropped when the dream ends.
CREATE TABLE IF NOT EXISTS derived_prior (
    run_id      TEXT NOT NULL,
    table_name  TEXT NOT NULL,
    image       TEXT,
    saved_at    TIMESTAMP NOT NULL
);

CREATE INDEX IF NOT EXISTS derived_prior_run ON derived_prior (run_id, table_name);
