-- memvault schema, version 8: the topic of a preference.
-- A new statement replaces the current version of the same (category, topic); a NULL topic
-- means the category itself (one chain per category, as attitudes stored before had).
ALTER TABLE attitudes ADD COLUMN topic TEXT;
