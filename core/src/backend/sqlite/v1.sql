-- fencing's SQLite schema, version 1.
CREATE TABLE fencing_meta (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO fencing_meta (name, value) VALUES ('floor', 0);
CREATE TABLE fencing_scopes (
    scope          TEXT PRIMARY KEY,
    counter        INTEGER NOT NULL,
    fence          INTEGER NOT NULL,
    sealed         INTEGER NOT NULL,
    last_seq       INTEGER,
    lease_holder   TEXT,
    lease_token    INTEGER,
    lease_ttl_ms   INTEGER,
    lease_expires  INTEGER
) WITHOUT ROWID;
CREATE TABLE fencing_entries (
    scope   TEXT NOT NULL,
    key     TEXT NOT NULL,
    value   BLOB NOT NULL,
    version INTEGER NOT NULL,
    token   INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
) WITHOUT ROWID;
