-- Schema version 10: the waiters' places (docs/semantics.md, "Waiting"):
-- one row per waiter that found its scope taken, numbered in the order
-- they came, kept until `until_ms` unless its waiter asks again. A release
-- announces itself (NOTIFY) only when a place is queued for its scope,
-- naming the earliest, since notifying commits are serialized across the
-- database. Unlogged: a place is a hint that lives a minute at most; after
-- a crash or on a promoted standby the table is empty, and each waiter
-- takes a new place at its next attempt (their order among themselves may
-- then change).
CREATE UNLOGGED TABLE @schema@.waiting (
    place    bigserial PRIMARY KEY,
    scope    text NOT NULL,
    until_ms bigint NOT NULL
);
CREATE INDEX waiting_scope ON @schema@.waiting (scope, place);
