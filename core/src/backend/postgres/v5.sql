-- fencing schema, version 5: the operator's record (docs/operations.md).
-- `@schema@` is replaced by the quoted schema name.
--
-- 1. Who last wrote each scope through the library: holder label, token and
--    time of the last accepted write (`apply` takes the holder now). Writes
--    by the same token and holder move the time at most once a second, so
--    that they keep leaving the scope's row alone.
-- 2. A ring of the newest 256 recorded rejections (`slot` = id % 256). A
--    rejection raises and rolls back everything of its transaction, so the
--    library records it afterwards, best effort and rate-limited, with
--    `record_rejection`: that function refuses to record a token the fence
--    would not reject, reads the current fence itself, bounds every text,
--    and merges a record of a scope recorded less than a second ago into
--    that row (its `suppressed` count), so a flood of stale writes from
--    many processes adds at most one row per scope per second. Rejections
--    of `check` (the caller's own transaction) are not recorded: the
--    caller's rollback would take the record with it.
-- Never any values. Every function runs as its owner (SECURITY DEFINER).

ALTER TABLE @schema@.scopes ADD COLUMN last_holder text,
    ADD COLUMN last_token bigint, ADD COLUMN last_write_ms bigint;

CREATE TABLE @schema@.rejections (
    slot       integer PRIMARY KEY CHECK (slot BETWEEN 0 AND 255),
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

DROP FUNCTION @schema@.apply(text, bigint, bigint, boolean, text[], bytea[], bigint[]);
CREATE FUNCTION @schema@.apply(p_scope text, p_token bigint, p_seq bigint, p_strict boolean,
    p_keys text[], p_values bytea[], p_expected bigint[], p_holder text) RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
    r        @schema@.scopes;
    n        integer := cardinality(p_keys);
    versions bigint[];
    actual   bigint;
    bad      record;
    has_deletes boolean;
    clock    bigint;
BEGIN
    PERFORM @schema@.durable();
    SELECT * INTO r FROM @schema@.scopes WHERE scope = p_scope FOR UPDATE;
    IF NOT FOUND THEN
        r := @schema@.lock_scope(p_scope);
    END IF;
    IF p_token <= r.fence THEN
        -- A newer token always passes; an equal or older one needs the checks.
        PERFORM @schema@.check_fence(r, p_token, p_seq, true);
    END IF;
    IF n = 1 OR (SELECT count(DISTINCT k) FROM unnest(p_keys) k) < n THEN
        -- In order, each operation seeing the ones before it.
        versions := '{}';
        FOR i IN 1..n LOOP
            SELECT version INTO actual FROM @schema@.entries WHERE scope = p_scope AND key = p_keys[i];
            IF p_expected[i] IS NOT NULL OR p_values[i] IS NULL THEN
                versions[i] := @schema@.check_op(p_scope, p_keys[i], p_values[i] IS NOT NULL,
                                                 p_expected[i], coalesce(actual, 0));
            ELSE
                versions[i] := coalesce(actual, 0) + 1;
            END IF;
            IF p_values[i] IS NULL THEN
                DELETE FROM @schema@.entries WHERE scope = p_scope AND key = p_keys[i];
            ELSIF actual IS NULL THEN
                INSERT INTO @schema@.entries (scope, key, value, version, token)
                VALUES (p_scope, p_keys[i], p_values[i], versions[i], p_token);
            ELSE
                UPDATE @schema@.entries SET value = p_values[i], version = versions[i], token = p_token
                 WHERE scope = p_scope AND key = p_keys[i];
            END IF;
        END LOOP;
    ELSE
        -- Distinct keys cannot see each other: check all, then write all,
        -- set-wise. Plain puts have nothing to check and nothing to delete.
        has_deletes := array_position(p_values, NULL) IS NOT NULL;
        IF has_deletes OR cardinality(array_remove(p_expected, NULL)) > 0 THEN
            SELECT o.i, o.k, o.v IS NOT NULL AS is_put, o.e, coalesce(en.version, 0) AS actual INTO bad
              FROM unnest(p_keys, p_values, p_expected) WITH ORDINALITY AS o(k, v, e, i)
              LEFT JOIN @schema@.entries en ON en.scope = p_scope AND en.key = o.k
             WHERE (o.e IS NOT NULL AND o.e <> coalesce(en.version, 0)) OR (o.v IS NULL AND en.version IS NULL)
             ORDER BY o.i LIMIT 1;
            IF FOUND THEN
                PERFORM @schema@.check_op(p_scope, bad.k, bad.is_put, bad.e, bad.actual);
            END IF;
        END IF;
        IF has_deletes THEN
            DELETE FROM @schema@.entries en
             USING unnest(p_keys, p_values) AS o(k, v)
             WHERE o.v IS NULL AND en.scope = p_scope AND en.key = o.k;
        END IF;
        -- Update what exists, insert the rest: cheaper than ON CONFLICT, and
        -- safe, since every writer of the scope's entries holds its row lock.
        WITH updated AS (
            UPDATE @schema@.entries e SET value = o.v, version = e.version + 1, token = p_token
              FROM unnest(p_keys, p_values) AS o(k, v)
             WHERE o.v IS NOT NULL AND e.scope = p_scope AND e.key = o.k
            RETURNING e.key, e.version),
        inserted AS (
            INSERT INTO @schema@.entries (scope, key, value, version, token)
            SELECT p_scope, o.k, o.v, 1, p_token FROM unnest(p_keys, p_values) AS o(k, v)
             WHERE o.v IS NOT NULL AND NOT EXISTS (
                   SELECT 1 FROM @schema@.entries e WHERE e.scope = p_scope AND e.key = o.k)
            RETURNING key, version)
        SELECT array_agg(coalesce(w.version, 0) ORDER BY o.i) INTO versions
          FROM unnest(p_keys) WITH ORDINALITY AS o(k, i)
          LEFT JOIN (SELECT * FROM updated UNION ALL SELECT * FROM inserted) w ON w.key = o.k;
    END IF;
    -- The same holder writing again leaves the scope's row as it was, but
    -- for the time of its last write, moved at most once a second.
    clock := greatest(@schema@.now_ms(), r.seen_ms);
    IF r.fence <> p_token OR r.last_seq IS DISTINCT FROM p_seq OR r.sealed <> p_strict
       OR r.last_token IS DISTINCT FROM p_token OR r.last_holder IS DISTINCT FROM p_holder
       OR r.last_write_ms IS NULL OR clock - r.last_write_ms >= 1000 THEN
        UPDATE @schema@.scopes SET fence = p_token, last_seq = p_seq, sealed = p_strict,
               last_holder = p_holder, last_token = p_token, last_write_ms = clock
         WHERE scope = p_scope;
    END IF;
    RETURN versions;
END
$$;


-- Records a rejection the library just got (see 2. above); returns whether
-- a row was added or merged.
CREATE FUNCTION @schema@.record_rejection(p_scope text, p_key text, p_code text, p_presented bigint,
    p_seq bigint, p_holder text, p_suppressed bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    r     @schema@.scopes;
    clock bigint;
    v_id  bigint;
BEGIN
    -- Best effort: never worth waiting for a flush.
    PERFORM set_config('synchronous_commit', 'off', true);
    IF p_scope IS NULL OR octet_length(p_scope) NOT BETWEEN 1 AND 256
       OR octet_length(p_key) > 1024 OR octet_length(p_holder) > 256
       OR p_code IS NULL OR p_code NOT IN ('STALE_TOKEN', 'SEQUENCE_OUT_OF_ORDER')
       OR p_presented IS NULL OR p_presented < 1 OR p_seq < 0
       OR p_suppressed IS NULL OR p_suppressed < 0 THEN
        RETURN false;
    END IF;
    r := @schema@.peek_scope(p_scope);
    IF p_presented > r.fence THEN
        RETURN false; -- a token the fence would accept was not rejected
    END IF;
    clock := greatest(@schema@.now_ms(), r.seen_ms);
    UPDATE @schema@.rejections SET suppressed = least(suppressed::numeric + p_suppressed + 1,
                                                      9223372036854775807)::bigint
     WHERE id = (SELECT max(x.id) FROM @schema@.rejections x
                  WHERE x.scope = p_scope AND x.at_ms > clock - 1000);
    IF FOUND THEN
        RETURN true;
    END IF;
    v_id := nextval('@schema@.rejection_ids');
    INSERT INTO @schema@.rejections AS x (slot, id, scope, key, code, presented, current, seq, holder, at_ms, suppressed)
    VALUES (v_id % 256, v_id, p_scope, p_key, p_code, p_presented, r.fence, p_seq, p_holder, clock, p_suppressed)
    ON CONFLICT (slot) DO UPDATE SET id = excluded.id, scope = excluded.scope, key = excluded.key,
        code = excluded.code, presented = excluded.presented, current = excluded.current,
        seq = excluded.seq, holder = excluded.holder, at_ms = excluded.at_ms,
        suppressed = excluded.suppressed
    WHERE x.id < excluded.id;
    RETURN true;
END
$$;

-- The newest recorded rejections, of one scope (or of all when NULL).
CREATE FUNCTION @schema@.rejections(p_scope text, p_limit bigint)
RETURNS SETOF @schema@.rejections
LANGUAGE sql STABLE AS $$
    SELECT * FROM @schema@.rejections x
     WHERE p_scope IS NULL OR x.scope = p_scope ORDER BY x.id DESC LIMIT p_limit
$$;

-- The newest last writes, of one scope (or of all when NULL).
CREATE FUNCTION @schema@.last_writes(p_scope text, p_limit bigint,
    OUT scope text, OUT holder text, OUT token bigint, OUT at_ms bigint)
RETURNS SETOF record
LANGUAGE sql STABLE AS $$
    SELECT s.scope, s.last_holder, s.last_token, s.last_write_ms FROM @schema@.scopes s
     WHERE p_scope IS NOT NULL AND s.scope = p_scope AND s.last_token IS NOT NULL
    UNION ALL
    (SELECT s.scope, s.last_holder, s.last_token, s.last_write_ms FROM @schema@.scopes s
      WHERE p_scope IS NULL AND s.last_token IS NOT NULL
      ORDER BY s.last_write_ms DESC, s.scope LIMIT p_limit)
$$;

ALTER FUNCTION @schema@.apply(text, bigint, bigint, boolean, text[], bytea[], bigint[], text)
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @schema@.record_rejection(text, text, text, bigint, bigint, text, bigint)
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @schema@.rejections(text, bigint) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @schema@.last_writes(text, bigint) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
