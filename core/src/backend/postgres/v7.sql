-- Schema version 7: the store's failover steps (docs/semantics.md,
-- "Failover"). One row:
--   ceiling  at or above every counter, fence and floor of the store, in
--            every committed state (`rules::ceiling_covering`);
--   epoch    the failover steps taken; a scope row behind it is moved to
--   base     where the latest step put everything (0 before any), when it
--            is next touched. A counter or fence may jump past its scope's
--            next token only up to `rules::jump_limit(base, jump_room)`;
--   jump_room `rules::JUMP_ROOM`, the maximum token once a store was opened
--            with jumps=unbounded.
CREATE TABLE @schema@.history (
    id        boolean PRIMARY KEY DEFAULT true CHECK (id),
    ceiling   bigint NOT NULL,
    epoch     bigint NOT NULL DEFAULT 0,
    base      bigint NOT NULL DEFAULT 0,
    jump_room bigint NOT NULL DEFAULT @jump_room@
);
-- An existing store: the ceiling covers everything it holds.
INSERT INTO @schema@.history (ceiling)
SELECT CASE WHEN m = 0 THEN 0 ELSE least(m::numeric + @ceiling_headroom@, @max_token@)::bigint END
  FROM (SELECT greatest(coalesce((SELECT max(greatest(counter, fence)) FROM @schema@.scopes), 0),
                        coalesce((SELECT max(floor) FROM @schema@.floors), 0)) AS m) x;
ALTER TABLE @schema@.scopes ADD COLUMN epoch bigint NOT NULL DEFAULT 0;
-- Functions whose signature or return type changed (functions.sql has the
-- new ones): none may stay callable with the old rules.
DROP FUNCTION IF EXISTS @schema@.failover(bigint);
DROP FUNCTION IF EXISTS @schema@.durable();
DROP FUNCTION IF EXISTS @schema@.lock_scope(text);
DROP FUNCTION IF EXISTS @schema@.peek_scope(text);
