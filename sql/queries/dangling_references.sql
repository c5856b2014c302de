-- How many references point at nothing? (blocks → sessions, mentions → entities/blocks, triples → entities)
SELECT 'block.session_id' AS reference, count(*) AS dangling
FROM blocks b WHERE b.session_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = b.session_id)
UNION ALL
SELECT 'mention.entity_id', count(*)
FROM mentions m WHERE NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = m.entity_id)
UNION ALL
SELECT 'mention.block_id', count(*)
FROM mentions m WHERE m.block_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.id = m.block_id)
UNION ALL
SELECT 'triple.subject_id', count(*)
FROM triples t WHERE NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = t.subject_id)
UNION ALL
SELECT 'triple.object_id', count(*)
FROM triples t WHERE t.object_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM entities e WHERE e.id = t.object_id)
