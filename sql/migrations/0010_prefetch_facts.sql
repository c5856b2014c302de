-- memvault schema, version 10: what a prefetched ranking rests on.
-- facts: a JSON object, triple id -> its state when the entry was searched ("current", or
-- "superseded:<date>"): the current facts of the question's entities that its intent asks for
-- and the facts the cached blocks state. A recall serves the entry only while every one of
-- them is unchanged and no new such fact was recorded; NULL (an entry written before) is
-- never served.
ALTER TABLE prefetch_cache ADD COLUMN facts TEXT;
