-- Schema version 6: the store's ceiling (rules::ceiling_covering): one
-- number at or above every counter, fence and floor the store holds, raised
-- in the same transaction as any value it would no longer cover. The
-- failover step moves every counter, fence and floor above it.
CREATE TABLE fencing_ceiling (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    ceiling INTEGER NOT NULL,
    -- Where the latest failover step moved everything (0 before any): the
    -- jump limit follows it (rules::jump_limit).
    base    INTEGER NOT NULL DEFAULT 0,
    -- How far past the base a jump may go (rules::JUMP_ROOM; the maximum
    -- token once opened with jumps=unbounded).
    jump_room INTEGER NOT NULL DEFAULT @jump_room@
);
-- A store of an earlier version: the greatest value it holds, plus the
-- headroom (saturating at the maximum token); 0 for an empty store.
INSERT INTO fencing_ceiling (id, ceiling)
SELECT 1, CASE WHEN top = 0 THEN 0
               WHEN top > @max_token@ - @ceiling_headroom@ THEN @max_token@
               ELSE top + @ceiling_headroom@ END
  FROM (SELECT max(coalesce((SELECT max(max(counter, fence)) FROM fencing_scopes), 0),
                   coalesce((SELECT max(floor) FROM fencing_floors), 0)) AS top);
