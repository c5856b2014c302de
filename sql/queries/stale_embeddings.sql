-- Which active items of one kind have no vector of this model, or one made from an older text?
-- {table} (a table, or a derived table with id and status) and {column} are filled in by
-- memvault.vectors (never user input).
SELECT t.id, t.{column} AS text, md5(t.{column}) AS text_hash
FROM {table} t
LEFT JOIN embeddings e
  ON e.target_kind = :kind AND e.target_id = t.id AND e.model = :model
WHERE t.status = 'active'
  AND (e.target_id IS NULL OR e.text_hash <> md5(t.{column}))
ORDER BY t.id
