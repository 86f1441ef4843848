-- fencing schema, version 2. `@schema@` is replaced by the quoted schema name.
--
-- 1. Retirement floors per bucket of scope names (docs/semantics.md,
--    "Retiring scopes"): one retired scope raises the start of 1/4096 of
--    new names, not of all of them. The old store-wide floor becomes every
--    bucket's floor, so no promise made before the upgrade is lost.
-- 2. Creation and retirement of a scope serialize on its bucket's row,
--    locked first by both: a creation reads the floor with a locking read
--    (never a stale snapshot), and a retirement waits for a creation in
--    flight, so a re-created scope never starts below its retired life.
-- 3. Each scope's time never goes back (`seen_ms`): a clock stepped
--    backwards cannot revive an expired lease.
-- 4. Every function that changes state makes its transaction's commit
--    durable (synchronous_commit), whatever the session or server says.

CREATE TABLE @schema@.floors (
    bucket integer PRIMARY KEY CHECK (bucket BETWEEN 0 AND 4095),
    floor  bigint NOT NULL
);
INSERT INTO @schema@.floors (bucket, floor)
SELECT b, m.floor FROM generate_series(0, 4095) b, @schema@.meta m;
ALTER TABLE @schema@.meta DROP COLUMN floor;

ALTER TABLE @schema@.scopes ADD COLUMN seen_ms bigint NOT NULL DEFAULT 0;

-- The top 12 bits of the 32-bit FNV-1a hash of the name's UTF-8 bytes;
-- the Rust backends compute the same (`rules::floor_bucket`).
CREATE FUNCTION @schema@.floor_bucket(p_scope text) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    bytes bytea := convert_to(p_scope, 'UTF8');
    h     bigint := 2166136261;
BEGIN
    FOR i IN 0..length(bytes) - 1 LOOP
        h := ((h # get_byte(bytes, i)) * 16777619) % 4294967296;
    END LOOP;
    RETURN h >> 20;
END
$$;

-- A token or a raised fence is handed out only once its commit is durable:
-- pinned for the rest of the transaction (kept when stronger).
CREATE FUNCTION @schema@.durable() RETURNS void
LANGUAGE sql VOLATILE AS $$
    SELECT set_config('synchronous_commit',
        CASE current_setting('synchronous_commit') WHEN 'remote_apply' THEN 'remote_apply' ELSE 'on' END,
        true)
$$;

-- Locks the scope's row, creating it from its bucket's floor if missing
-- (a rejection rolls the creation back with everything else).
CREATE OR REPLACE FUNCTION @schema@.lock_scope(p_scope text) RETURNS @schema@.scopes
LANGUAGE plpgsql AS $$
DECLARE
    r  @schema@.scopes;
    fl bigint;
BEGIN
    PERFORM @schema@.durable();
    LOOP
        SELECT * INTO r FROM @schema@.scopes WHERE scope = p_scope FOR UPDATE;
        IF FOUND THEN
            RETURN r;
        END IF;
        -- A locking read: the latest floor (under REPEATABLE READ, a floor
        -- raised since the snapshot fails the statement instead of being
        -- missed), and a retirement in this bucket waits for our commit.
        SELECT f.floor INTO fl FROM @schema@.floors f
         WHERE f.bucket = @schema@.floor_bucket(p_scope) FOR SHARE;
        INSERT INTO @schema@.scopes (scope, counter, fence, sealed)
        VALUES (p_scope, fl, fl, fl > 0)
        ON CONFLICT (scope) DO NOTHING;
    END LOOP;
END
$$;

-- The scope as it stands, without a lock (fresh from its floor if missing).
CREATE OR REPLACE FUNCTION @schema@.peek_scope(p_scope text) RETURNS @schema@.scopes
LANGUAGE plpgsql AS $$
DECLARE
    r @schema@.scopes;
BEGIN
    SELECT * INTO r FROM @schema@.scopes WHERE scope = p_scope;
    IF NOT FOUND THEN
        SELECT p_scope, f.floor, f.floor, f.floor > 0 INTO r FROM @schema@.floors f
         WHERE f.bucket = @schema@.floor_bucket(p_scope);
        r.seen_ms := 0;
    END IF;
    RETURN r;
END
$$;

CREATE OR REPLACE FUNCTION @schema@.acquire(p_scope text, p_holder text, p_ttl_ms bigint, p_eager boolean,
    OUT holder text, OUT token bigint, OUT ttl_ms bigint, OUT expires_ms bigint, OUT now_ms bigint)
LANGUAGE plpgsql AS $$
DECLARE
    r     @schema@.scopes;
    clock bigint;
BEGIN
    PERFORM @schema@.durable();
    holder := p_holder;
    ttl_ms := p_ttl_ms;
    FOR attempt IN 1..2 LOOP
        clock := @schema@.now_ms();
        -- One statement when the scope exists, its lease has ended and its
        -- counter has room. (SET sees the row as it was.) The scope's time
        -- is the greater of the clock and the time it has seen. Eager
        -- fencing: the new token is above the fence, so it always raises it.
        UPDATE @schema@.scopes s
           SET counter = greatest(s.counter, s.fence) + 1,
               lease_holder = p_holder, lease_token = greatest(s.counter, s.fence) + 1,
               lease_ttl_ms = p_ttl_ms,
               lease_expires_ms = @schema@.later(greatest(clock, s.seen_ms), p_ttl_ms),
               seen_ms = greatest(clock, s.seen_ms),
               fence = CASE WHEN p_eager THEN greatest(s.counter, s.fence) + 1 ELSE s.fence END,
               sealed = CASE WHEN p_eager THEN false ELSE s.sealed END,
               last_seq = CASE WHEN p_eager THEN NULL ELSE s.last_seq END
         WHERE s.scope = p_scope
           AND (s.lease_token IS NULL OR s.lease_expires_ms <= greatest(clock, s.seen_ms))
           AND s.counter < 9223372036854775807 AND s.fence < 9223372036854775807
        RETURNING s.lease_token, s.lease_expires_ms, s.seen_ms INTO token, expires_ms, now_ms;
        IF FOUND THEN
            RETURN;
        END IF;
        EXIT WHEN attempt = 2;
        -- Otherwise create the scope and hold its row, or say why not; then
        -- the same UPDATE takes the lease.
        r := @schema@.lock_scope(p_scope);
        now_ms := greatest(@schema@.now_ms(), r.seen_ms);
        IF r.lease_token IS NOT NULL AND now_ms < r.lease_expires_ms THEN
            PERFORM @schema@.reject_held(r, now_ms);
        END IF;
        PERFORM @schema@.following(r); -- TOKEN_EXHAUSTED at the maximum
    END LOOP;
    RAISE EXCEPTION 'fencing: acquire found the scope free but could not take it';
END
$$;

-- A refused renewal is not an exception: it returns no token (and the
-- current lease, if any), so that the time it saw is committed.
DROP FUNCTION @schema@.renew(text, bigint, bigint);
CREATE FUNCTION @schema@.renew(p_scope text, p_token bigint, p_ttl_ms bigint,
    OUT holder text, OUT token bigint, OUT ttl_ms bigint, OUT expires_ms bigint, OUT now_ms bigint,
    OUT current_token bigint, OUT current_holder text)
LANGUAGE plpgsql AS $$
DECLARE
    r    @schema@.scopes;
    live boolean;
BEGIN
    PERFORM @schema@.durable();
    SELECT * INTO r FROM @schema@.scopes WHERE scope = p_scope FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    now_ms := greatest(@schema@.now_ms(), r.seen_ms);
    live := r.lease_token IS NOT NULL AND now_ms < r.lease_expires_ms;
    IF NOT live OR r.lease_token <> p_token THEN
        UPDATE @schema@.scopes SET seen_ms = now_ms WHERE scope = p_scope AND seen_ms < now_ms;
        IF live THEN
            current_token := r.lease_token;
            current_holder := r.lease_holder;
        END IF;
        RETURN;
    END IF;
    holder := r.lease_holder;
    token := r.lease_token;
    ttl_ms := p_ttl_ms;
    expires_ms := @schema@.later(now_ms, p_ttl_ms);
    UPDATE @schema@.scopes SET lease_ttl_ms = p_ttl_ms, lease_expires_ms = expires_ms, seen_ms = now_ms
     WHERE scope = p_scope;
END
$$;

DROP FUNCTION @schema@.release(text, bigint);
CREATE FUNCTION @schema@.release(p_scope text, p_token bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    clock bigint := @schema@.now_ms();
BEGIN
    PERFORM @schema@.durable();
    UPDATE @schema@.scopes
       SET lease_holder = NULL, lease_token = NULL, lease_ttl_ms = NULL, lease_expires_ms = NULL,
           seen_ms = greatest(seen_ms, clock)
     WHERE scope = p_scope AND lease_token = p_token AND lease_expires_ms > greatest(seen_ms, clock);
    RETURN FOUND;
END
$$;

CREATE OR REPLACE FUNCTION @schema@.apply(p_scope text, p_token bigint, p_seq bigint, p_strict boolean,
    p_keys text[], p_values bytea[], p_expected bigint[]) RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
    r        @schema@.scopes;
    n        integer := cardinality(p_keys);
    versions bigint[];
    actual   bigint;
    bad      record;
    has_deletes boolean;
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
    -- The same holder writing again leaves the scope's row as it was.
    IF r.fence <> p_token OR r.last_seq IS DISTINCT FROM p_seq OR r.sealed <> p_strict THEN
        UPDATE @schema@.scopes SET fence = p_token, last_seq = p_seq, sealed = p_strict
         WHERE scope = p_scope;
    END IF;
    RETURN versions;
END
$$;

CREATE OR REPLACE FUNCTION @schema@.status(p_scope text,
    OUT counter bigint, OUT fence bigint, OUT holder text, OUT token bigint,
    OUT ttl_ms bigint, OUT expires_ms bigint, OUT now_ms bigint, OUT entries bigint)
LANGUAGE plpgsql AS $$
DECLARE
    r @schema@.scopes := @schema@.peek_scope(p_scope);
BEGIN
    now_ms := greatest(@schema@.now_ms(), r.seen_ms);
    counter := r.counter;
    fence := r.fence;
    IF r.lease_token IS NOT NULL AND now_ms < r.lease_expires_ms THEN
        holder := r.lease_holder;
        token := r.lease_token;
        ttl_ms := r.lease_ttl_ms;
        expires_ms := r.lease_expires_ms;
    END IF;
    SELECT count(*) INTO entries FROM @schema@.entries e WHERE e.scope = p_scope;
END
$$;

CREATE OR REPLACE FUNCTION @schema@.retire(p_scope text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_bucket integer := @schema@.floor_bucket(p_scope);
    r        @schema@.scopes;
    now_ms   bigint;
    entries  bigint;
BEGIN
    PERFORM @schema@.durable();
    -- The bucket first, as creation locks it: a creation in flight
    -- finishes before we look, and none starts until we commit.
    PERFORM 1 FROM @schema@.floors f WHERE f.bucket = v_bucket FOR UPDATE;
    SELECT * INTO r FROM @schema@.scopes WHERE scope = p_scope FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    now_ms := greatest(@schema@.now_ms(), r.seen_ms);
    IF r.lease_token IS NOT NULL AND now_ms < r.lease_expires_ms THEN
        PERFORM @schema@.reject_held(r, now_ms);
    END IF;
    SELECT count(*) INTO entries FROM @schema@.entries e WHERE e.scope = p_scope;
    IF entries > 0 THEN
        PERFORM @schema@.reject_invalid(format(
            'scope %s still has %s entries: delete them before retiring it', to_json(p_scope), entries));
    END IF;
    DELETE FROM @schema@.scopes WHERE scope = p_scope;
    UPDATE @schema@.floors f SET floor = greatest(f.floor, r.counter, r.fence) WHERE f.bucket = v_bucket;
    RETURN true;
END
$$;

-- Functions are not for everyone: the check functions run as their owner.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
