-- fencing schema, version 1. `@schema@` is replaced by the quoted schema name.
-- Every rule of docs/semantics.md runs here, inside PostgreSQL: each function
-- is one atomic step, and every rejection is an exception with its own
-- SQLSTATE (class FN), so the statement, and the caller's transaction, rolls
-- back and nothing of a rejected operation stays behind.

CREATE TABLE @schema@.migrations (
    version    integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- One row: the retirement floor, and the test-only manual clock.
CREATE TABLE @schema@.meta (
    id            boolean PRIMARY KEY DEFAULT true CHECK (id),
    floor         bigint NOT NULL DEFAULT 0,
    manual_now_ms bigint
);
INSERT INTO @schema@.meta DEFAULT VALUES;

CREATE TABLE @schema@.scopes (
    scope            text COLLATE "C" PRIMARY KEY,
    counter          bigint NOT NULL,
    fence            bigint NOT NULL,
    sealed           boolean NOT NULL,
    last_seq         bigint,
    lease_holder     text,
    lease_token      bigint,
    lease_ttl_ms     bigint,
    lease_expires_ms bigint
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

-- Milliseconds since the epoch on the server's clock (or the manual clock).
CREATE FUNCTION @schema@.now_ms() RETURNS bigint
LANGUAGE sql VOLATILE AS $$
    SELECT coalesce(manual_now_ms, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)
      FROM @schema@.meta
$$;

-- now + ttl, saturating at the largest bigint (a manual clock can be far ahead).
CREATE FUNCTION @schema@.later(p_now bigint, p_ms bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT least(p_now::numeric + p_ms, 9223372036854775807)::bigint
$$;

-- Raises a rejection: SQLSTATE FNxxx, the code and its details as JSON.
CREATE FUNCTION @schema@.reject(p_state text, p_message text, p_detail jsonb) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = p_state, MESSAGE = p_message, DETAIL = p_detail::text;
END
$$;

-- Locks the scope's row, creating it from the retirement floor if missing
-- (a rejection rolls the creation back with everything else).
CREATE FUNCTION @schema@.lock_scope(p_scope text) RETURNS @schema@.scopes
LANGUAGE plpgsql AS $$
DECLARE
    r @schema@.scopes;
BEGIN
    LOOP
        SELECT * INTO r FROM @schema@.scopes WHERE scope = p_scope FOR UPDATE;
        IF FOUND THEN
            RETURN r;
        END IF;
        INSERT INTO @schema@.scopes (scope, counter, fence, sealed)
        SELECT p_scope, m.floor, m.floor, m.floor > 0 FROM @schema@.meta m
        ON CONFLICT (scope) DO NOTHING;
    END LOOP;
END
$$;

-- The scope as it stands, without a lock (fresh from the floor if missing).
CREATE FUNCTION @schema@.peek_scope(p_scope text) RETURNS @schema@.scopes
LANGUAGE plpgsql AS $$
DECLARE
    r @schema@.scopes;
BEGIN
    SELECT * INTO r FROM @schema@.scopes WHERE scope = p_scope;
    IF NOT FOUND THEN
        SELECT p_scope, m.floor, m.floor, m.floor > 0 INTO r FROM @schema@.meta m;
    END IF;
    RETURN r;
END
$$;

-- Check 2 (token against fence, sealed fences reject equal) and, when
-- p_check_seq, check 3 (seq after the last accepted seq of this token).
CREATE FUNCTION @schema@.check_fence(r @schema@.scopes, p_token bigint, p_seq bigint, p_check_seq boolean)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF p_token < r.fence OR (p_token = r.fence AND r.sealed) THEN
        PERFORM @schema@.reject('FN001',
            format('stale token for scope %s: presented %s, fence is at %s', to_json(r.scope), p_token, r.fence),
            jsonb_build_object('code', 'STALE_TOKEN', 'scope', r.scope, 'presented', p_token::text, 'current', r.fence::text));
    END IF;
    IF p_check_seq AND p_seq IS NOT NULL AND p_token = r.fence AND r.last_seq IS NOT NULL AND p_seq <= r.last_seq THEN
        PERFORM @schema@.reject('FN002',
            format('sequence out of order: presented %s, last accepted %s', p_seq, r.last_seq),
            jsonb_build_object('code', 'SEQUENCE_OUT_OF_ORDER', 'presented', p_seq::text, 'last', r.last_seq::text));
    END IF;
END
$$;

CREATE FUNCTION @schema@.reject_invalid(p_message text) RETURNS void
LANGUAGE sql AS $$
    SELECT @schema@.reject('FN008', 'invalid argument: ' || p_message,
        jsonb_build_object('code', 'INVALID_ARGUMENT', 'message', p_message))
$$;

-- The token after the greater of counter and fence, or TOKEN_EXHAUSTED.
CREATE FUNCTION @schema@.following(r @schema@.scopes) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    IF r.counter < 9223372036854775807 AND r.fence < 9223372036854775807 THEN
        RETURN greatest(r.counter, r.fence) + 1;
    END IF;
    PERFORM @schema@.reject('FN007', 'token counter exhausted: the maximum token has been issued',
        jsonb_build_object('code', 'TOKEN_EXHAUSTED', 'scope', r.scope));
    RETURN NULL;
END
$$;

CREATE FUNCTION @schema@.next_token(p_scope text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    r     @schema@.scopes := @schema@.lock_scope(p_scope);
    token bigint := @schema@.following(r);
BEGIN
    UPDATE @schema@.scopes SET counter = token WHERE scope = p_scope;
    RETURN token;
END
$$;

CREATE FUNCTION @schema@.advance_counter(p_scope text, p_floor bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    r @schema@.scopes := @schema@.lock_scope(p_scope);
BEGIN
    IF p_floor > r.counter THEN
        UPDATE @schema@.scopes SET counter = p_floor WHERE scope = p_scope;
        RETURN p_floor;
    END IF;
    RETURN r.counter;
END
$$;

-- Details of the live lease for LEASE_HELD.
CREATE FUNCTION @schema@.reject_held(r @schema@.scopes, p_now bigint) RETURNS void
LANGUAGE sql AS $$
    SELECT @schema@.reject('FN005',
        format('lease on %s is held by %s with token %s, %s ms left',
               to_json(r.scope), to_json(r.lease_holder), r.lease_token, r.lease_expires_ms - p_now),
        jsonb_build_object('code', 'LEASE_HELD', 'scope', r.scope, 'holder', r.lease_holder,
                           'token', r.lease_token::text, 'remaining_ms', r.lease_expires_ms - p_now))
$$;

CREATE FUNCTION @schema@.acquire(p_scope text, p_holder text, p_ttl_ms bigint, p_eager boolean,
    OUT holder text, OUT token bigint, OUT ttl_ms bigint, OUT expires_ms bigint, OUT now_ms bigint)
LANGUAGE plpgsql AS $$
DECLARE
    r @schema@.scopes;
BEGIN
    holder := p_holder;
    ttl_ms := p_ttl_ms;
    FOR attempt IN 1..2 LOOP
        now_ms := @schema@.now_ms();
        -- One statement when the scope exists, its lease has ended and its
        -- counter has room. (SET sees the row as it was.) Eager fencing: the
        -- new token is above the fence, so it always raises it.
        UPDATE @schema@.scopes s
           SET counter = greatest(s.counter, s.fence) + 1,
               lease_holder = p_holder, lease_token = greatest(s.counter, s.fence) + 1,
               lease_ttl_ms = p_ttl_ms, lease_expires_ms = @schema@.later(now_ms, p_ttl_ms),
               fence = CASE WHEN p_eager THEN greatest(s.counter, s.fence) + 1 ELSE s.fence END,
               sealed = CASE WHEN p_eager THEN false ELSE s.sealed END,
               last_seq = CASE WHEN p_eager THEN NULL ELSE s.last_seq END
         WHERE s.scope = p_scope
           AND (s.lease_token IS NULL OR s.lease_expires_ms <= now_ms)
           AND s.counter < 9223372036854775807 AND s.fence < 9223372036854775807
        RETURNING s.lease_token, s.lease_expires_ms INTO token, expires_ms;
        IF FOUND THEN
            RETURN;
        END IF;
        EXIT WHEN attempt = 2;
        -- Otherwise create the scope and hold its row, or say why not; then
        -- the same UPDATE takes the lease.
        r := @schema@.lock_scope(p_scope);
        now_ms := @schema@.now_ms();
        IF r.lease_token IS NOT NULL AND now_ms < r.lease_expires_ms THEN
            PERFORM @schema@.reject_held(r, now_ms);
        END IF;
        PERFORM @schema@.following(r); -- TOKEN_EXHAUSTED at the maximum
    END LOOP;
    RAISE EXCEPTION 'fencing: acquire found the scope free but could not take it';
END
$$;

CREATE FUNCTION @schema@.renew(p_scope text, p_token bigint, p_ttl_ms bigint,
    OUT holder text, OUT token bigint, OUT ttl_ms bigint, OUT expires_ms bigint, OUT now_ms bigint)
LANGUAGE plpgsql AS $$
DECLARE
    r    @schema@.scopes;
    live boolean;
BEGIN
    SELECT * INTO r FROM @schema@.scopes WHERE scope = p_scope FOR UPDATE;
    now_ms := @schema@.now_ms();
    live := FOUND AND r.lease_token IS NOT NULL AND now_ms < r.lease_expires_ms;
    IF NOT live OR r.lease_token <> p_token THEN
        PERFORM @schema@.reject('FN006',
            format('lease lost on %s', to_json(p_scope)),
            jsonb_build_object('code', 'LEASE_LOST', 'scope', p_scope,
                'current_token', CASE WHEN live THEN r.lease_token::text END,
                'current_holder', CASE WHEN live THEN r.lease_holder END));
    END IF;
    holder := r.lease_holder;
    token := r.lease_token;
    ttl_ms := p_ttl_ms;
    expires_ms := @schema@.later(now_ms, p_ttl_ms);
    UPDATE @schema@.scopes SET lease_ttl_ms = p_ttl_ms, lease_expires_ms = expires_ms
     WHERE scope = p_scope;
END
$$;

CREATE FUNCTION @schema@.release(p_scope text, p_token bigint) RETURNS boolean
LANGUAGE sql AS $$
    WITH ended AS (
        UPDATE @schema@.scopes
           SET lease_holder = NULL, lease_token = NULL, lease_ttl_ms = NULL, lease_expires_ms = NULL
         WHERE scope = p_scope AND lease_token = p_token AND lease_expires_ms > @schema@.now_ms()
        RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM ended)
$$;

-- Check 4 for one operation against the entry's current version (0 when
-- missing); returns the receipt's version (0 for a delete).
CREATE FUNCTION @schema@.check_op(p_scope text, p_key text, p_is_put boolean, p_expected bigint, p_actual bigint)
RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    IF p_expected IS NOT NULL AND p_expected <> p_actual THEN
        PERFORM @schema@.reject('FN003',
            format('version mismatch: expected %s, actual %s', p_expected, p_actual),
            jsonb_build_object('code', 'VERSION_MISMATCH', 'expected', p_expected::text, 'actual', p_actual::text));
    END IF;
    IF p_is_put THEN
        RETURN p_actual + 1;
    END IF;
    IF p_actual = 0 THEN
        PERFORM @schema@.reject('FN004',
            format('no entry %s in scope %s', to_json(p_key), to_json(p_scope)),
            jsonb_build_object('code', 'NOT_FOUND', 'scope', p_scope, 'key', p_key));
    END IF;
    RETURN 0;
END
$$;

-- put and delete under one check, all or nothing: a NULL value is a delete.
-- Returns each operation's receipt version, in order.
CREATE FUNCTION @schema@.apply(p_scope text, p_token bigint, p_seq bigint, p_strict boolean,
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

-- Raises the fence without writing; a raise does not spend the token.
CREATE FUNCTION @schema@.claim(p_scope text, p_token bigint, p_seq bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    r @schema@.scopes := @schema@.lock_scope(p_scope);
BEGIN
    PERFORM @schema@.check_fence(r, p_token, p_seq, true);
    IF p_token > r.fence THEN
        UPDATE @schema@.scopes SET fence = p_token, sealed = false, last_seq = p_seq WHERE scope = p_scope;
    ELSE
        UPDATE @schema@.scopes SET last_seq = p_seq WHERE scope = p_scope;
    END IF;
END
$$;

-- A read that presents a token: check 2 only, nothing raised or created.
CREATE FUNCTION @schema@.get_checked(p_scope text, p_key text, p_token bigint,
    OUT value bytea, OUT version bigint, OUT token bigint)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM @schema@.check_fence(@schema@.peek_scope(p_scope), p_token, NULL, false);
    SELECT e.value, e.version, e.token INTO value, version, token
      FROM @schema@.entries e WHERE e.scope = p_scope AND e.key = p_key;
END
$$;

CREATE FUNCTION @schema@.status(p_scope text,
    OUT counter bigint, OUT fence bigint, OUT holder text, OUT token bigint,
    OUT ttl_ms bigint, OUT expires_ms bigint, OUT now_ms bigint, OUT entries bigint)
LANGUAGE plpgsql AS $$
DECLARE
    r @schema@.scopes := @schema@.peek_scope(p_scope);
BEGIN
    now_ms := @schema@.now_ms();
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

CREATE FUNCTION @schema@.retire(p_scope text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    r       @schema@.scopes;
    now_ms  bigint;
    entries bigint;
BEGIN
    SELECT * INTO r FROM @schema@.scopes WHERE scope = p_scope FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    now_ms := @schema@.now_ms();
    IF r.lease_token IS NOT NULL AND now_ms < r.lease_expires_ms THEN
        PERFORM @schema@.reject_held(r, now_ms);
    END IF;
    SELECT count(*) INTO entries FROM @schema@.entries e WHERE e.scope = p_scope;
    IF entries > 0 THEN
        PERFORM @schema@.reject_invalid(format(
            'scope %s still has %s entries: delete them before retiring it', to_json(p_scope), entries));
    END IF;
    DELETE FROM @schema@.scopes WHERE scope = p_scope;
    UPDATE @schema@.meta SET floor = greatest(floor, r.counter, r.fence);
    RETURN true;
END
$$;

-- Fences the caller's own tables inside the caller's own transaction:
--   BEGIN; SELECT fencing.check('report:7', 42); UPDATE report ...; COMMIT;
-- Applies checks 2 and 3, then raises the fence to the token, holding the
-- scope's row lock until the transaction ends. A stale token raises
-- SQLSTATE FN001 (FN002 for a seq out of order), so the whole transaction
-- rolls back. SECURITY DEFINER: a worker role needs only USAGE on the schema
-- and EXECUTE on these two functions.
CREATE FUNCTION @schema@.check(p_scope text, p_token bigint, p_seq bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r @schema@.scopes;
BEGIN
    IF p_scope IS NULL OR p_scope = '' OR octet_length(p_scope) > 256 THEN
        PERFORM @schema@.reject_invalid('scope must be 1..=256 bytes of UTF-8');
    END IF;
    IF p_token IS NULL OR p_token < 1 THEN
        PERFORM @schema@.reject_invalid(format('token must be 1..=9223372036854775807, got %s', coalesce(p_token::text, 'NULL')));
    END IF;
    IF p_seq < 0 THEN
        PERFORM @schema@.reject_invalid(format('seq must be 0..=9223372036854775807, got %s', p_seq));
    END IF;
    r := @schema@.lock_scope(p_scope);
    PERFORM @schema@.check_fence(r, p_token, p_seq, true);
    UPDATE @schema@.scopes SET fence = p_token, last_seq = p_seq, sealed = false WHERE scope = p_scope;
END
$$;

CREATE FUNCTION @schema@.check(p_scope text, p_token bigint) RETURNS void
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT @schema@.check(p_scope, p_token, NULL)
$$;

-- Functions are not for everyone: the check functions run as their owner.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
