-- Connected edges whose two ends are active and in the same Leiden community (the knowledge
-- gaps' neighbour-visit rule, memvault.profile.gaps).
SELECT g.source_id, g.target_id, g.composite_weight AS weight, a.community
FROM edges g
JOIN communities a ON a.entity_id = g.source_id
JOIN communities b ON b.entity_id = g.target_id AND b.community = a.community
JOIN entities s ON s.id = g.source_id AND s.status = 'active'
JOIN entities t ON t.id = g.target_id AND t.status = 'active'
WHERE g.status = 'connected'
