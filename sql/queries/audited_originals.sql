-- Each digested block's original according to the audit log: the before-image of the tiering
-- change that first turned its full text into a digest, in a run that still stands (the same
-- rule the migration that created block_originals filled it with). Of the blocks :ids only.
SELECT a.target_id AS id, CAST(a.before_image AS JSON) ->> 'text' AS text
FROM audit_log a
JOIN (
    SELECT x.target_id, min(x.id) AS first_id
    FROM audit_log x
    JOIN runs r ON r.id = x.run_id
    WHERE x.target_table = 'blocks' AND x.phase = 'tiering' AND r.status <> 'undone'
      AND x.target_id = ANY(:ids)
      AND x.before_image IS NOT NULL AND x.after_image IS NOT NULL
      AND CAST(x.before_image AS JSON) ->> 'digest_kind' IS NULL
      AND CAST(x.after_image AS JSON) ->> 'digest_kind' IS NOT NULL
    GROUP BY x.target_id
) f ON a.id = f.first_id
