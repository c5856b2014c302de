-- Which facts are malformed, and how: an empty object, a predicate that is not snake_case, an
-- end before the start, an unknown status. The placeholder after FROM (nothing, or a WHERE on
-- the ids asked) is filled in by memvault.store.queries.triples.malformed_triples, which also
-- rewrites DuckDB's regexp_matches to PostgreSQL's operator there.
SELECT * FROM (
SELECT id, subject_id, predicate,
       CASE
         WHEN trim(object) = '' THEN 'empty object'
         WHEN NOT regexp_matches(predicate, '^[a-z][a-z0-9_]*$') THEN 'predicate is not snake_case'
         WHEN valid_at IS NOT NULL AND invalid_at IS NOT NULL AND invalid_at < valid_at
           THEN 'ends before it starts'
         WHEN status NOT IN ('active', 'superseded', 'merged', 'invalidated', 'archived', 'held')
           THEN 'unknown status ' || status
       END AS problem
FROM triples {only}
) t WHERE problem IS NOT NULL
