-- fencing's SQLite tables, as schema version 4 left them (versions 1-4 of
-- the development builds, squashed: nothing before it was released).
-- Migrations hold tables and data moves only; the view and trigger for
-- fencing the caller's own tables live once, in check.sql, reinstalled
-- whenever they change.

-- One row per scope in use. `seen_ms`: the scope's time never goes back.
-- `last_*`: who last wrote it through the library (docs/operations.md).
CREATE TABLE fencing_scopes (
    scope          TEXT PRIMARY KEY,
    counter        INTEGER NOT NULL,
    fence          INTEGER NOT NULL,
    sealed         INTEGER NOT NULL,
    last_seq       INTEGER,
    lease_holder   TEXT,
    lease_token    INTEGER,
    lease_ttl_ms   INTEGER,
    lease_expires  INTEGER,
    seen_ms        INTEGER NOT NULL DEFAULT 0,
    last_holder    TEXT,
    last_token     INTEGER,
    last_write_ms  INTEGER
) WITHOUT ROWID;

CREATE TABLE fencing_entries (
    scope   TEXT NOT NULL,
    key     TEXT NOT NULL,
    value   BLOB NOT NULL,
    version INTEGER NOT NULL,
    token   INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
) WITHOUT ROWID;

-- Retirement floors per bucket of scope names (docs/semantics.md,
-- "Retiring scopes"); a bucket without a row has floor 0.
CREATE TABLE fencing_floors (
    bucket INTEGER PRIMARY KEY,
    floor  INTEGER NOT NULL
) WITHOUT ROWID;

-- A ring of the newest recorded rejections (`slot` = id % its size).
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
