-- The facts the audit log names between two of its ids (:lo exclusive, :hi inclusive): facts
-- written, the facts of entities written, and both facts of conflict verdicts written (what an
-- incremental night's checks read, memvault.dream.check_scope).
SELECT DISTINCT target_id AS id FROM audit_log
WHERE target_table = 'triples' AND id > :lo AND id <= :hi
UNION
SELECT t.id FROM triples t
WHERE t.subject_id IN (SELECT target_id FROM audit_log
                       WHERE target_table = 'entities' AND id > :lo AND id <= :hi)
   OR t.object_id IN (SELECT target_id FROM audit_log
                      WHERE target_table = 'entities' AND id > :lo AND id <= :hi)
UNION
SELECT v.triple_a FROM conflict_verdicts v
WHERE v.id IN (SELECT target_id FROM audit_log
               WHERE target_table = 'conflict_verdicts' AND id > :lo AND id <= :hi)
UNION
SELECT v.triple_b FROM conflict_verdicts v
WHERE v.id IN (SELECT target_id FROM audit_log
               WHERE target_table = 'conflict_verdicts' AND id > :lo AND id <= :hi)
