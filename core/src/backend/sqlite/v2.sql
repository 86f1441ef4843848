-- fencing's SQLite schema, version 2.
-- Floors per bucket of scope names (docs/semantics.md, "Retiring scopes"):
-- the old store-wide floor becomes every bucket's, so no promise made before
-- the upgrade is lost. And each scope's time, which never goes back.
CREATE TABLE fencing_floors (
    bucket INTEGER PRIMARY KEY,
    floor  INTEGER NOT NULL
) WITHOUT ROWID;
WITH RECURSIVE b(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM b WHERE n < 4095)
INSERT INTO fencing_floors (bucket, floor)
SELECT b.n, m.value FROM b, fencing_meta m WHERE m.name = 'floor' AND m.value > 0;
DELETE FROM fencing_meta WHERE name = 'floor';
ALTER TABLE fencing_scopes ADD COLUMN seen_ms INTEGER NOT NULL DEFAULT 0;
