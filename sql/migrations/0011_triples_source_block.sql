-- memvault schema, version 11: the facts a block states, found by the block.
-- Recall reads, for each of the few dozen blocks it ranks, the facts they are the source of
-- (to say "superseded since ..."); without an index that is a scan of every fact.
CREATE INDEX IF NOT EXISTS triples_source_block ON triples (source_block);
