-- fencing's PostgreSQL tables, as schema version 5 left them (versions 1-5
-- of the development builds, squashed: nothing before it was released).
-- Migrations hold tables and data moves only; every function lives once, in
-- functions.sql, reinstalled whenever it changes. `@schema@` is replaced by
-- the quoted schema name, the other `@...@` names by the constants of
-- mod.rs (`CONSTANTS`).

CREATE TABLE @schema@.migrations (
    version    integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
);
-- Any role may read which schema version it talks to (nothing else).
GRANT SELECT ON @schema@.migrations TO PUBLIC;

-- One row: the test-only manual clock (NULL on the server's clock).
CREATE TABLE @schema@.meta (
    id            boolean PRIMARY KEY DEFAULT true CHECK (id),
    manual_now_ms bigint
);
INSERT INTO @schema@.meta DEFAULT VALUES;

-- One row per scope in use. `seen_ms`: the scope's time never goes back.
-- `last_*`: who last wrote it through the library (docs/operations.md).
CREATE TABLE @schema@.scopes (
    scope            text COLLATE "C" PRIMARY KEY,
    counter          bigint NOT NULL,
    fence            bigint NOT NULL,
    sealed           boolean NOT NULL,
    last_seq         bigint,
    lease_holder     text,
    lease_token      bigint,
    lease_ttl_ms     bigint,
    lease_expires_ms bigint,
    seen_ms          bigint NOT NULL DEFAULT 0,
    last_holder      text,
    last_token       bigint,
    last_write_ms    bigint
);

-- COLLATE "C": keys list in byte order, as in every other backend.
CREATE TABLE @schema@.entries (
    scope   text COLLATE "C" NOT NULL,
    key     text COLLATE "C" NOT NULL,
    value   bytea NOT NULL,
    version bigint NOT NULL,
    token   bigint NOT NULL,
    PRIMARY KEY (scope, key)
);

-- Retirement floors per bucket of scope names (docs/semantics.md,
-- "Retiring scopes").
CREATE TABLE @schema@.floors (
    bucket integer PRIMARY KEY CHECK (bucket BETWEEN 0 AND @floor_buckets@ - 1),
    floor  bigint NOT NULL
);
INSERT INTO @schema@.floors (bucket, floor)
SELECT b, 0 FROM generate_series(0, @floor_buckets@ - 1) b;

-- A ring of the newest recorded rejections (`slot` = id % its size).
CREATE TABLE @schema@.rejections (
    slot       integer PRIMARY KEY CHECK (slot BETWEEN 0 AND @rejection_log@ - 1),
    id         bigint NOT NULL UNIQUE,
    scope      text COLLATE "C" NOT NULL,
    key        text COLLATE "C",
    code       text NOT NULL,
    presented  bigint NOT NULL,
    current    bigint NOT NULL,
    seq        bigint,
    holder     text,
    at_ms      bigint NOT NULL,
    suppressed bigint NOT NULL
);
CREATE INDEX rejections_scope ON @schema@.rejections (scope, id);
CREATE SEQUENCE @schema@.rejection_ids;
