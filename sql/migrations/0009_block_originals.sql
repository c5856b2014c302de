-- memvault schema, version 9: the original text of every block whose text became a digest.
--
-- Tiers decide what is shown, never what can be found: a cold or frozen block shows its
-- digest, but recall searches (keywords and vectors) its original text, kept here. Tiering
-- writes the row in the same audited transaction as the digest (undoing the run removes it);
-- the first original wins, a later, shorter digest never overwrites it. `id` is the block's id.
CREATE TABLE IF NOT EXISTS block_originals (
    id           TEXT PRIMARY KEY,
    text         TEXT NOT NULL,
    digested_at  TIMESTAMP NOT NULL,
    run_id       TEXT
);

-- Stores tiered before this version: the original is the before-image of the tiering change
-- that first turned the block's full text into a digest (in a run that still stands).
INSERT INTO block_originals (id, text, digested_at, run_id)
SELECT a.target_id, CAST(a.before_image AS JSON) ->> 'text', a.created_at, a.run_id
FROM audit_log a
JOIN (
    SELECT x.target_id, min(x.id) AS first_id
    FROM audit_log x
    JOIN runs r ON r.id = x.run_id
    WHERE x.target_table = 'blocks' AND x.phase = 'tiering' AND r.status <> 'undone'
      AND x.before_image IS NOT NULL AND x.after_image IS NOT NULL
      AND CAST(x.before_image AS JSON) ->> 'digest_kind' IS NULL
      AND CAST(x.after_image AS JSON) ->> 'digest_kind' IS NOT NULL
    GROUP BY x.target_id
) f ON a.id = f.first_id
JOIN blocks b ON b.id = a.target_id AND b.digest_kind IS NOT NULL
WHERE CAST(a.before_image AS JSON) ->> 'text' IS NOT NULL;
