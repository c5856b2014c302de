-- Active entities nothing refers to (no mention, no fact as subject or object, no connected
-- edge), created before :cutoff: the orphans the dream archives (memvault.orphans).
SELECT e.id, e.name, e.entity_type
FROM entities e
WHERE e.status = 'active'
  AND (e.created_at IS NULL OR e.created_at < :cutoff)
  AND NOT EXISTS (SELECT 1 FROM mentions m WHERE m.entity_id = e.id)
  AND NOT EXISTS (SELECT 1 FROM triples t WHERE t.subject_id = e.id AND t.status <> 'merged')
  AND NOT EXISTS (SELECT 1 FROM triples t WHERE t.object_id = e.id AND t.status <> 'merged')
  AND NOT EXISTS (
      SELECT 1 FROM edges g
      WHERE g.status = 'connected' AND (g.source_id = e.id OR g.target_id = e.id))
ORDER BY e.id
