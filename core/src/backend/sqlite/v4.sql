-- fencing's SQLite schema, version 4: the operator's record
-- (docs/operations.md). Who last wrote each scope through the library, and
-- a ring of the newest 256 recorded rejections (`slot` = id % 256). Never
-- any values. Checks through the `fencing_check` view record nothing: they
-- run in the caller's transaction, which a rejection rolls back.
ALTER TABLE fencing_scopes ADD COLUMN last_holder TEXT;
ALTER TABLE fencing_scopes ADD COLUMN last_token INTEGER;
ALTER TABLE fencing_scopes ADD COLUMN last_write_ms INTEGER;
CREATE TABLE fencing_rejections (
    slot       INTEGER PRIMARY KEY,
    id         INTEGER NOT NULL UNIQUE,
    scope      TEXT NOT NULL,
    key        TEXT,
    code       TEXT NOT NULL,
    presented  INTEGER NOT NULL,
    current    INTEGER NOT NULL,
    seq        INTEGER,
    holder     TEXT,
    at_ms      INTEGER NOT NULL,
    suppressed INTEGER NOT NULL
);
CREATE INDEX fencing_rejections_scope ON fencing_rejections (scope, id);
