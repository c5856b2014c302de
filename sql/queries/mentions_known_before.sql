-- Every mention with the time the store knew it: its memory's creation (else when it was said),
-- known before :cut (the profile's snapshots read the store as it stood at a day's end).
SELECT m.entity_id, m.block_id, COALESCE(m.session_id, b.session_id) AS session_id,
       COALESCE(b.created_at, m.mentioned_at) AS known_at
FROM mentions m LEFT JOIN blocks b ON b.id = m.block_id
WHERE COALESCE(b.created_at, m.mentioned_at) < :cut
