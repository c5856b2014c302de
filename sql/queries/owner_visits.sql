-- Distinct sessions in which the owner named each entity: their own turns, their recalls
-- (the knowledge gaps' neighbour-visit rule, memvault.profile.gaps).
SELECT entity_id, count(DISTINCT session_id) AS visits FROM (
    SELECT m.entity_id, COALESCE(m.session_id, b.session_id) AS session_id
    FROM mentions m JOIN blocks b ON b.id = m.block_id
    WHERE b.role = 'user'
) owner GROUP BY entity_id
