-- A SQLite store as fencing 0.1's development builds wrote it (schema version 4,
-- PRAGMA user_version = 4), dumped with sqlite3 .dump: core/tests/upgrade.rs
-- opens it with today's code.
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE fencing_meta (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
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
, seen_ms INTEGER NOT NULL DEFAULT 0, last_holder TEXT, last_token INTEGER, last_write_ms INTEGER) WITHOUT ROWID;
CREATE TABLE fencing_entries (
    scope   TEXT NOT NULL,
    key     TEXT NOT NULL,
    value   BLOB NOT NULL,
    version INTEGER NOT NULL,
    token   INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
) WITHOUT ROWID;
CREATE TABLE fencing_floors (
    bucket INTEGER PRIMARY KEY,
    floor  INTEGER NOT NULL
) WITHOUT ROWID;
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
CREATE VIEW fencing_check (scope, token, seq) AS SELECT NULL, NULL, NULL WHERE 0;
CREATE TRIGGER fencing_check_insert INSTEAD OF INSERT ON fencing_check
BEGIN
    SELECT RAISE(ABORT, 'INVALID_ARGUMENT: scope must be text of 1 to 256 bytes of UTF-8, without NUL')
     WHERE typeof(NEW.scope) <> 'text'
        OR length(CAST(NEW.scope AS BLOB)) NOT BETWEEN 1 AND 256
        OR instr(NEW.scope, char(0)) > 0;
    SELECT RAISE(ABORT, 'INVALID_ARGUMENT: token must be an integer in 1..=9223372036854775807 (bind it as an integer, not text)')
     WHERE typeof(NEW.token) <> 'integer' OR NEW.token < 1;
    SELECT RAISE(ABORT, 'INVALID_ARGUMENT: seq must be NULL or an integer in 0..=9223372036854775807')
     WHERE NEW.seq IS NOT NULL AND (typeof(NEW.seq) <> 'integer' OR NEW.seq < 0);

    -- A scope seen for the first time starts at its bucket's floor, sealed
    -- when above 0. The bucket is the top 12 bits of the 32-bit FNV-1a hash
    -- of the name's UTF-8 bytes, as the library computes it; a XOR b is
    -- (a | b) - (a & b), since SQLite has no XOR.
    -- (The floor is looked up only when the scope is new: hashing the name
    -- on every check costs older SQLite libraries hundreds of microseconds.)
    INSERT INTO fencing_scopes (scope, counter, fence, sealed)
    SELECT NEW.scope, f.floor, f.floor, f.floor > 0
      FROM (SELECT coalesce((SELECT floor FROM fencing_floors WHERE bucket = (
            WITH RECURSIVE
              n(x) AS (SELECT hex(CAST(NEW.scope AS BLOB))),
              h(i, v) AS (
                SELECT 1, 2166136261
                UNION ALL
                SELECT h.i + 2, (((h.v | ((instr('0123456789ABCDEF', substr(n.x, h.i, 1)) - 1) * 16
                    + instr('0123456789ABCDEF', substr(n.x, h.i + 1, 1)) - 1))
                               - (h.v & ((instr('0123456789ABCDEF', substr(n.x, h.i, 1)) - 1) * 16
                    + instr('0123456789ABCDEF', substr(n.x, h.i + 1, 1)) - 1))) * 16777619) % 4294967296
                  FROM h, n WHERE h.i < length(n.x))
            SELECT v >> 20 FROM h ORDER BY i DESC LIMIT 1)), 0) AS floor
             WHERE NOT EXISTS (SELECT 1 FROM fencing_scopes WHERE scope = NEW.scope)) AS f;

    SELECT RAISE(ABORT, 'STALE_TOKEN: the token is older than the scope''s fence (or equal to a sealed fence): a newer holder has taken over, stop')
      FROM fencing_scopes
     WHERE scope = NEW.scope AND (NEW.token < fence OR (NEW.token = fence AND sealed));
    SELECT RAISE(ABORT, 'SEQUENCE_OUT_OF_ORDER: seq is not after the last seq accepted for this token')
      FROM fencing_scopes
     WHERE scope = NEW.scope AND NEW.seq IS NOT NULL AND NEW.token = fence
       AND last_seq IS NOT NULL AND NEW.seq <= last_seq;

    UPDATE fencing_scopes SET fence = NEW.token, last_seq = NEW.seq, sealed = 0
     WHERE scope = NEW.scope;
END
;
CREATE INDEX fencing_rejections_scope ON fencing_rejections (scope, id);
COMMIT;
PRAGMA user_version = 4;
