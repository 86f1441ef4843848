-- Fence your own tables with plain SQL (docs/sqlite.md). In your own
-- transaction, with any SQLite driver and nothing of fencing loaded:
--
--   BEGIN IMMEDIATE;
--   INSERT INTO fencing_check (scope, token) VALUES ('report:7', 42);
--   UPDATE report_state SET body = ? WHERE report_id = 7;
--   COMMIT;
--
-- The insert applies checks 2 and 3 of docs/semantics.md to the scope and
-- raises its fence, as `fencing.check` does on PostgreSQL (not sealing; seq
-- optional; a scope seen for the first time starts at its bucket's floor;
-- past the scope's greatest token only up to the jump limit), and raises the
-- store's ceiling over it.
-- A rejection aborts the statement with a message that starts with the
-- code; the caller rolls back. RAISE takes a literal message here: an
-- expression there needs SQLite 3.48, and a trigger using one would make
-- the file unreadable to every older SQLite library.
--
-- The one home of the view and its trigger: installed (after dropping the
-- view, which drops its trigger) whenever the hash of this text differs from
-- the one the file records (`fencing_installed`). The `@...@` names are
-- constants filled in from the Rust code (`backend/sql_text.rs`).

CREATE VIEW fencing_check (scope, token, seq) AS SELECT NULL, NULL, NULL WHERE 0;
CREATE TRIGGER fencing_check_insert INSTEAD OF INSERT ON fencing_check
BEGIN
    SELECT RAISE(ABORT, 'INVALID_ARGUMENT: scope must be text of 1 to @max_scope_bytes@ bytes of UTF-8, without NUL')
     WHERE typeof(NEW.scope) <> 'text'
        OR length(CAST(NEW.scope AS BLOB)) NOT BETWEEN 1 AND @max_scope_bytes@
        OR instr(NEW.scope, char(0)) > 0;
    SELECT RAISE(ABORT, 'INVALID_ARGUMENT: token must be bound as an integer (text, a real, a blob or NULL is refused)')
     WHERE typeof(NEW.token) <> 'integer';
    SELECT RAISE(ABORT, 'INVALID_ARGUMENT: token must be in 1..=@max_token@ (0 and negative numbers are never tokens)')
     WHERE NEW.token < 1;
    SELECT RAISE(ABORT, 'INVALID_ARGUMENT: seq must be NULL or an integer in 0..=@max_seq@')
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
                SELECT 1, @fnv32_offset@
                UNION ALL
                SELECT h.i + 2, (((h.v | ((instr('0123456789ABCDEF', substr(n.x, h.i, 1)) - 1) * 16
                    + instr('0123456789ABCDEF', substr(n.x, h.i + 1, 1)) - 1))
                               - (h.v & ((instr('0123456789ABCDEF', substr(n.x, h.i, 1)) - 1) * 16
                    + instr('0123456789ABCDEF', substr(n.x, h.i + 1, 1)) - 1))) * @fnv32_prime@) % @fnv32_modulus@
                  FROM h, n WHERE h.i < length(n.x))
            SELECT v >> @bucket_shift@ FROM h ORDER BY i DESC LIMIT 1)), 0) AS floor
             WHERE NOT EXISTS (SELECT 1 FROM fencing_scopes WHERE scope = NEW.scope)) AS f;

    SELECT RAISE(ABORT, 'STALE_TOKEN: the token is older than the scope''s fence (or equal to a sealed fence): a newer holder has taken over, stop')
      FROM fencing_scopes
     WHERE scope = NEW.scope AND (NEW.token < fence OR (NEW.token = fence AND sealed));
    SELECT RAISE(ABORT, 'SEQUENCE_OUT_OF_ORDER: seq is not after the last seq accepted for this token')
      FROM fencing_scopes
     WHERE scope = NEW.scope AND NEW.seq IS NOT NULL AND NEW.token = fence
       AND last_seq IS NOT NULL AND NEW.seq <= last_seq;

    -- Past the scope's greatest token only up to the jump limit
    -- (rules::check_jump): the latest failover step's base plus the room.
    SELECT RAISE(ABORT, 'INVALID_ARGUMENT: the token is above the store''s jump limit: a token the store did not issue moves a fence only up to it (docs/semantics.md, "Failover")')
      FROM fencing_scopes s, fencing_ceiling c
     WHERE s.scope = NEW.scope AND NEW.token > max(s.counter, s.fence)
       AND NEW.token > CASE WHEN c.base > @max_token@ - c.jump_room THEN @max_token@
                            ELSE c.base + c.jump_room END;

    UPDATE fencing_scopes SET fence = NEW.token, last_seq = NEW.seq, sealed = 0
     WHERE scope = NEW.scope;

    -- The store's ceiling covers the new fence (rules::ceiling_covering):
    -- unchanged while it or the jump limit does, else the token plus the
    -- headroom, saturating at the maximum token. (A new scope's floor is
    -- covered already.)
    UPDATE fencing_ceiling
       SET ceiling = CASE WHEN NEW.token > @max_token@ - @ceiling_headroom@ THEN @max_token@
                          ELSE NEW.token + @ceiling_headroom@ END
     WHERE ceiling < NEW.token
       AND NEW.token > CASE WHEN base > @max_token@ - jump_room THEN @max_token@
                            ELSE base + jump_room END;
END;
