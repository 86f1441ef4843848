-- Schema version 11: the watches of a scope's lease (docs/semantics.md,
-- "Watching a lease"): one row per watch, kept alive by its reads until
-- `until_ms`. An acquire or renewal announces itself (NOTIFY) only when a
-- live watch of its scope is here, as a release only when a waiter or a
-- watch is (notifying commits are serialized across the database).
-- Unlogged, as `waiting`: a lost row only makes its watch ask again after a
-- bounded interval until its next read registers it anew.
CREATE UNLOGGED TABLE @schema@.watching (
    id       bigserial PRIMARY KEY,
    scope    text NOT NULL,
    until_ms bigint NOT NULL
);
CREATE INDEX watching_scope ON @schema@.watching (scope, until_ms);
