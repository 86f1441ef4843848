-- fencing schema, version 4: the failover step (docs/postgres.md,
-- "Replication and failover"). `@schema@` is replaced by the quoted schema
-- name.
--
-- Run on a new primary promoted from an asynchronous standby (or a restored
-- backup): it may lack the last commits of the old primary, so every scope's
-- counter and fence, and every floor, move up by p_step (2^40 by default)
-- above anything that lost history can have issued or accepted; every fence
-- is sealed and every lease ends. Tokens handed out before the failover are
-- stale afterwards, and none is issued again. It keeps the caller's rights:
-- only a role that may write the schema's tables (its owner) can run it.
CREATE FUNCTION @schema@.failover(p_step bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    moved bigint;
BEGIN
    PERFORM @schema@.durable();
    IF p_step IS NULL OR p_step < 1 THEN
        PERFORM @schema@.reject_invalid('failover step must be a positive number of tokens');
    END IF;
    -- The floors first, as creation and retirement lock them: a scope
    -- created from now on starts above the lost history too.
    UPDATE @schema@.floors
       SET floor = least(floor::numeric + p_step, 9223372036854775807)::bigint;
    UPDATE @schema@.scopes
       SET counter = least(greatest(counter, fence)::numeric + p_step, 9223372036854775807)::bigint,
           fence = least(greatest(counter, fence)::numeric + p_step, 9223372036854775807)::bigint,
           sealed = true, last_seq = NULL,
           lease_holder = NULL, lease_token = NULL, lease_ttl_ms = NULL, lease_expires_ms = NULL;
    GET DIAGNOSTICS moved = ROW_COUNT;
    RETURN moved;
END
$$;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
