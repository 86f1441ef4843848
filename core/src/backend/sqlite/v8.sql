-- Schema version 8: the waiters' places (docs/semantics.md, "Waiting"):
-- one row per waiter that found its scope taken, numbered in the order
-- they came (AUTOINCREMENT: a number is never given twice, even after the
-- last row is deleted), kept until `until_ms` unless its waiter asks again.
CREATE TABLE fencing_waiters (
    place    INTEGER PRIMARY KEY AUTOINCREMENT,
    scope    TEXT NOT NULL,
    until_ms INTEGER NOT NULL
);
CREATE INDEX fencing_waiters_scope ON fencing_waiters (scope, place);
