-- fencing schema, version 3: least privilege. `@schema@` is replaced by
-- the quoted schema name.
--
-- Every operation runs in a function with its owner's rights (SECURITY
-- DEFINER, with a fixed search_path), so a role that runs the library needs
-- only USAGE on the schema and EXECUTE on the functions: it can take tokens,
-- leases and fenced writes through the rules, and cannot move a fence or
-- rewrite a counter with plain SQL. The helpers the operations call keep
-- the caller's rights: called directly, they touch no table.

CREATE FUNCTION @schema@.get(p_scope text, p_key text,
    OUT value bytea, OUT version bigint, OUT token bigint)
LANGUAGE sql STABLE AS $$
    SELECT e.value, e.version, e.token FROM @schema@.entries e
     WHERE e.scope = p_scope AND e.key = p_key
$$;

CREATE FUNCTION @schema@.list(p_scope text, p_after text, p_limit bigint) RETURNS SETOF text
LANGUAGE sql STABLE AS $$
    SELECT e.key FROM @schema@.entries e
     WHERE e.scope = p_scope AND e.key > p_after ORDER BY e.key LIMIT p_limit
$$;

-- Whether the schema runs on a manual clock (a test schema).
CREATE FUNCTION @schema@.clock_is_manual() RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT manual_now_ms IS NOT NULL FROM @schema@.meta
$$;

-- Stops the schema's clock (`?clock=manual`). It keeps the caller's
-- rights: only a role that may write the schema's tables can stop it.
CREATE FUNCTION @schema@.stop_clock() RETURNS void
LANGUAGE sql AS $$
    UPDATE @schema@.meta SET manual_now_ms = coalesce(manual_now_ms,
        floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)
$$;

-- Moves a stopped clock; false when the clock runs on the server's time.
CREATE FUNCTION @schema@.advance_clock(p_ms bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE @schema@.meta SET manual_now_ms = @schema@.later(manual_now_ms, p_ms)
     WHERE manual_now_ms IS NOT NULL;
    RETURN FOUND;
END
$$;

ALTER FUNCTION @schema@.next_token(text) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @schema@.advance_counter(text, bigint) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @schema@.acquire(text, text, bigint, boolean) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @schema@.renew(text, bigint, bigint) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @schema@.release(text, bigint) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @schema@.apply(text, bigint, bigint, boolean, text[], bytea[], bigint[])
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @schema@.claim(text, bigint, bigint) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @schema@.get(text, text) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @schema@.get_checked(text, text, bigint) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @schema@.list(text, text, bigint) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @schema@.status(text) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @schema@.retire(text) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @schema@.clock_is_manual() SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION @schema@.advance_clock(bigint) SECURITY DEFINER SET search_path = pg_catalog, pg_temp;

-- Any role may read which schema version it talks to (nothing else).
GRANT SELECT ON @schema@.migrations TO PUBLIC;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
