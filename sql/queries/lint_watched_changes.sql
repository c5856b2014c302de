-- What the audit log names in an id range of the watched tables, with the images an incremental
-- lint's scope reads (an edge only when it appeared, went or changed status: the graph's nightly
-- refresh rewrites thousands of weights, which change no entity's standing; a block only when it
-- appeared, went, or changed status or what it refers to: tiering rewrites every block's tier and
-- text, which no rule reads).
SELECT target_table, target_id,
       CASE WHEN target_table IN ('triples', 'mentions', 'edges') THEN before_image END
           AS before_image
FROM audit_log
WHERE id > :lo AND id <= :hi AND target_table IN (SELECT unnest(CAST(:tables AS TEXT[])))
  AND (target_table <> 'edges' OR before_image IS NULL OR after_image IS NULL
       OR (CAST(before_image AS JSON) ->> 'status')
          IS DISTINCT FROM (CAST(after_image AS JSON) ->> 'status'))
  AND (target_table <> 'blocks' OR before_image IS NULL OR after_image IS NULL
       OR (CAST(before_image AS JSON) ->> 'status')
          IS DISTINCT FROM (CAST(after_image AS JSON) ->> 'status')
       OR (CAST(before_image AS JSON) ->> 'session_id')
          IS DISTINCT FROM (CAST(after_image AS JSON) ->> 'session_id')
       OR (CAST(before_image AS JSON) ->> 'parent_id')
          IS DISTINCT FROM (CAST(after_image AS JSON) ->> 'parent_id'))
