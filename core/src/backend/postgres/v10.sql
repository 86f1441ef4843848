-- Schema version 10: the scopes someone waits on (docs/postgres.md,
-- "Waiting"). A release announces itself (NOTIFY) only while a waiter's
-- mark on its scope lasts, since notifying commits are serialized across
-- the database. Unlogged: a mark is a hint that lives a minute; one lost in
-- a crash or a failover is made again by the waiter's next attempt.
CREATE UNLOGGED TABLE @schema@.waiting (
    scope    text PRIMARY KEY,
    until_ms bigint NOT NULL
);
