-- fencing's PostgreSQL functions: every rule of docs/semantics.md that runs
-- inside the database, each defined here once, with its security settings.
-- Installed with CREATE OR REPLACE under the migration lock whenever the hash
-- of this text (after the replacements below) differs from the one the
-- schema records (`installed_functions`): see `install_functions` in mod.rs.
-- `@schema@` is replaced by the quoted schema name, the other `@...@` names by
-- constants from the Rust code (`CONSTANTS` in mod.rs): both read one number.
--
-- Each operation is one atomic step, and every rejection is an exception
-- with its own SQLSTATE (class FN, `crate::sqlstate`), so the statement, and
-- the caller's transaction, rolls back and nothing of it stays behind.
--
-- The operations run with their owner's rights (SECURITY DEFINER, with a
-- fixed search_path), so a role that runs the library needs only USAGE on
-- the schema and EXECUTE on the functions: it can take tokens, leases and
-- fenced writes through the rules, and cannot move a fence or rewrite a
-- counter with plain SQL. The helpers keep the caller's rights: called
-- directly, they touch no table. Signatures never change in place: a new
-- signature is a new function (CREATE OR REPLACE keeps the grants an
-- operator gave on the old one).

-- ---------------------------------------------------------------- helpers

-- Milliseconds since the epoch on the server's clock. A schema on a manual
-- clock (a test schema) replaces this with `use_manual_clock` below, so a
-- store on the real clock never reads the manual one.
CREATE OR REPLACE FUNCTION @schema@.now_ms() RETURNS bigint
LANGUAGE sql VOLATILE AS $$
    SELECT floor(extract(epoch FROM clock_timestamp()) * 1e3)::bigint
$$;

-- now + ttl, saturating at the largest token (a manual clock can be far ahead).
CREATE OR REPLACE FUNCTION @schema@.later(p_now bigint, p_ms bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT least(p_now::numeric + p_ms, @max_token@)::bigint
$$;

-- The server history this database runs on (docs/semantics.md,
-- "Failover"): the cluster's system identifier (a restore into a new
-- cluster has another), the timeline its WAL is written on (a promotion
-- and every point-in-time recovery start a new one) and the OID of the
-- schema (a dump restored into the same cluster makes it anew). Nothing on
-- a standby, which writes nothing.
CREATE OR REPLACE FUNCTION @schema@.server_history(OUT system_id bigint, OUT timeline bigint,
    OUT schema_oid bigint)
LANGUAGE sql VOLATILE AS $$
    SELECT (pg_control_system()).system_identifier,
           ('x' || substr(pg_walfile_name(pg_current_wal_insert_lsn()), 1, 8))::bit(32)::bigint,
           '@schema@'::regnamespace::oid::bigint
     WHERE NOT pg_is_in_recovery()
$$;

-- Whether the store's history row h records the server history this
-- session runs on (a standby counts as such: it writes nothing). Asked by
-- every call, so written to be inlined, and cheap: the timeline and the
-- schema's OID are read each time (a promotion changes the one under open
-- sessions; the other is a catalog cache lookup), the system identifier
-- once a session (a server process never changes cluster; the
-- session's note of it, `fencing.system_id`, only spares reading the
-- control file).
CREATE OR REPLACE FUNCTION @schema@.on_recorded_server(h @schema@.history) RETURNS boolean
LANGUAGE sql VOLATILE AS $$
    SELECT pg_is_in_recovery()
        OR coalesce(h.timeline = ('x' || substr(pg_walfile_name(pg_current_wal_insert_lsn()), 1, 8))::bit(32)::bigint
                    AND h.schema_oid = '@schema@'::regnamespace::oid::bigint
                    AND (current_setting('fencing.system_id', true) = h.system_id::text
                         OR (h.system_id = (pg_control_system()).system_identifier
                             AND set_config('fencing.system_id', h.system_id::text, false) IS NOT NULL)),
                    false)
$$;

-- One failover step applied to the history row: everything moves to the
-- base (`rules::failover_base`), 2^40 above the ceiling and the jump limit.
CREATE OR REPLACE FUNCTION @schema@.step(h @schema@.history) RETURNS @schema@.history
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    h.base := least(greatest(h.ceiling::numeric, h.base::numeric + h.jump_room) + @failover_step@,
                    @max_token@)::bigint;
    h.ceiling := @schema@.covering(h.ceiling, h.base);
    h.epoch := h.epoch + 1;
    RETURN h;
END
$$;

-- The history row as this server must use it. On the server history it
-- records, as it is. On another one, the steps the store takes by itself,
-- one more than the steps the history it lacks may hold (docs/semantics.md,
-- "How many steps"): on a later timeline of the same cluster 3 per timeline
-- crossed, less one (`rules::STEPS_PER_TIMELINE`); on another cluster, an
-- earlier timeline or in a schema made anew (a dump restored), which cannot
-- be counted, `rules::MAX_AUTOMATIC_STEPS`, also the most ever taken. The
-- identity is recorded with them. A row with none recorded records this
-- server's without a step.
CREATE OR REPLACE FUNCTION @schema@.here(h @schema@.history) RETURNS @schema@.history
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    s record;
    n bigint := 0;
BEGIN
    IF @schema@.on_recorded_server(h) THEN
        RETURN h;
    END IF;
    s := @schema@.server_history();
    IF h.system_id IS NOT NULL THEN
        n := CASE WHEN h.system_id = s.system_id AND s.timeline > h.timeline
                       AND h.schema_oid = s.schema_oid
                  THEN least(@steps_per_timeline@ * (s.timeline - h.timeline) - 1, @max_automatic_steps@)
                  ELSE @max_automatic_steps@ END;
    END IF;
    FOR i IN 1..n LOOP
        h := @schema@.step(h);
    END LOOP;
    h.system_id := s.system_id;
    h.timeline := s.timeline;
    h.schema_oid := s.schema_oid;
    RETURN h;
END
$$;

-- Wakes the processes waiting for a lease or watching it (docs/postgres.md,
-- "Waiting"): one announcement on channel `fencing` when the transaction
-- commits, its payload the schema's name, the earliest place queued (0: no
-- waiter is next, only the scope's watches need to know) and the scope, or
-- the name alone when every lease of the store ended. Nothing is sent for a
-- rolled-back transaction.
CREATE OR REPLACE FUNCTION @schema@.announce(p_scope text, p_head bigint) RETURNS void
LANGUAGE sql VOLATILE AS $$
    SELECT pg_notify('fencing', btrim('@schema@', '"') || coalesce(' ' || p_head || ' ' || p_scope, ''));
$$;

-- A lease ended: announced to the earliest live place, if one is queued
-- (nobody else could take it from a waiter before it; the scope's watches
-- wake with it), else to the scope's watches (place 0), if any, else not at
-- all. An acquire or a renewal announces itself to the watches the same
-- way, written out in its own body. Statements, not calls: a function
-- called for the watches' lookup cost acquire and release pairs about 7%
-- (pgbench, 8 clients), and the place's lookup was an SQL function, which
-- is planned anew on every call; as statements of PL/pgSQL bodies, planned
-- once per session, the pairs run as fast as before watches existed.
CREATE OR REPLACE FUNCTION @schema@.announce_ended(p_scope text, p_now bigint) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM @schema@.announce(p_scope, a.head)
       FROM (SELECT coalesce((SELECT w.place FROM @schema@.waiting w
                               WHERE w.scope = p_scope AND w.until_ms > p_now ORDER BY w.place LIMIT 1),
                             (SELECT 0 FROM @schema@.watching w
                               WHERE w.scope = p_scope AND w.until_ms > p_now LIMIT 1)) AS head) a
      WHERE a.head IS NOT NULL;
END
$$;

-- A token or a raised fence is handed out only once its commit is durable:
-- pinned for the rest of the transaction (kept when stronger). A session
-- opened with sync_replication=required (`fencing.sync_replication`, pinned
-- by the library at connect) also needs a synchronous standby on this very
-- commit: a reload that emptied synchronous_standby_names since the
-- connection opened would make it local only. Run before a change by
-- `durable`, and again at commit by `durable_at_commit`, after whatever the
-- caller's own transaction set in between.
CREATE OR REPLACE FUNCTION @schema@.pin_durable() RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF current_setting('synchronous_commit') NOT IN ('on', 'remote_apply') THEN
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
    IF current_setting('fencing.sync_replication', true) = 'required'
       AND btrim(current_setting('synchronous_standby_names')) = '' THEN
        RAISE EXCEPTION USING ERRCODE = '55000',
            MESSAGE = 'sync_replication=required, but the server now has no synchronous standby '
                      '(synchronous_standby_names is empty, changed since the connection opened): '
                      'nothing was committed';
    END IF;
END
$$;

-- Whether `pin_durable` has nothing to do: the commit is already durable
-- (setting the value it has would change nothing, in this transaction or a
-- savepoint's rollback) and no synchronous standby is required. Inlined, so
-- that its callers skip the call to `pin_durable` on the common path.
CREATE OR REPLACE FUNCTION @schema@.durable_pinned() RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT current_setting('synchronous_commit') IN ('on', 'remote_apply')
           AND current_setting('fencing.sync_replication', true) IS DISTINCT FROM 'required'
$$;

-- Where every function that changes state starts: `pin_durable`, then the
-- store's history row for this server (`here`): on another server history
-- than the one it records, the steps are taken first, under the row's lock,
-- once whatever the number of callers racing (the ones that waited find
-- them recorded).
-- The caller that takes them is told with a WARNING of SQLSTATE FN100
-- (the server's log has it too; the library logs it, docs/operations.md).
CREATE OR REPLACE FUNCTION @schema@.durable() RETURNS @schema@.history
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    h @schema@.history;
    was bigint;
BEGIN
    IF NOT @schema@.durable_pinned() THEN
        PERFORM @schema@.pin_durable();
    END IF;
    SELECT * INTO h FROM @schema@.history;
    IF NOT @schema@.on_recorded_server(h) THEN
        SELECT * INTO h FROM @schema@.history FOR UPDATE;
        was := h.epoch;
        h := @schema@.here(h);
        UPDATE @schema@.history
           SET ceiling = h.ceiling, epoch = h.epoch, base = h.base,
               system_id = h.system_id, timeline = h.timeline, schema_oid = h.schema_oid;
        IF h.epoch > was THEN
            PERFORM @schema@.announce(NULL, NULL);
            RAISE WARNING USING ERRCODE = 'FN100',
                MESSAGE = format('fencing: schema %s runs on another server history (a promotion, '
                                 'a recovery or a restore): %s automatic failover steps taken, every '
                                 'token at or below %s is stale', btrim('@schema@', '"'), h.epoch - was, h.base),
                DETAIL = jsonb_build_object('schema', btrim('@schema@', '"'), 'steps', h.epoch - was,
                                            'base', h.base)::text;
        END IF;
    END IF;
    RETURN h;
END
$$;

-- The rule of `pin_durable` once more when the transaction commits: a
-- deferred constraint trigger (below) on the tables of counters, fences,
-- leases, floors and the history, so that a `SET LOCAL synchronous_commit
-- = off` of the caller's own transaction after `check` or `next_token` (or
-- `record_rejection`, which sets it off) cannot make that commit
-- asynchronous. Nothing is refused for it: the commit is made durable. Runs
-- as the owner, so that a worker role with EXECUTE on `check` alone commits
-- too. (A transaction that makes the constraint immediate runs it at that
-- statement instead: docs/postgres.md names what the caller must not do.)
CREATE OR REPLACE FUNCTION @schema@.durable_at_commit() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT @schema@.durable_pinned() THEN
        PERFORM @schema@.pin_durable();
    END IF;
    RETURN NULL;
END
$$;

-- The store's ceiling once p_value, above it and above the jump limit, is
-- issued or accepted (`rules::ceiling_covering`, with `cover`).
CREATE OR REPLACE FUNCTION @schema@.covering(p_ceiling bigint, p_value bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_value <= p_ceiling THEN p_ceiling
                ELSE least(p_value::numeric + @ceiling_headroom@, @max_token@)::bigint END
$$;

-- Whether the greater of the ceiling and the jump limit is at or above
-- p_value, a counter or fence just written (`rules::ceiling_covering`).
-- Inlined: its callers skip the call to `cover` when it holds.
CREATE OR REPLACE FUNCTION @schema@.covered(h @schema@.history, p_value bigint) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT p_value <= h.ceiling OR p_value <= least(h.base::numeric + h.jump_room, @max_token@)
$$;

-- Keeps the greater of the ceiling and the jump limit at or above p_value
-- (`covered`). A value within the jump limit never writes the row: only
-- issues counting past it do, once per 2^32 tokens, so the row stays cold
-- and no call waits for another's.
CREATE OR REPLACE FUNCTION @schema@.cover(h @schema@.history, p_value bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT @schema@.covered(h, p_value) THEN
        UPDATE @schema@.history SET ceiling = @schema@.covering(ceiling, p_value);
    END IF;
END
$$;

-- A value a caller presents may move a counter or fence to p_value when that
-- is at most the scope's greatest token or within the jump limit
-- (`rules::check_jump`): only the store's own issues count past the limit.
-- A failover step must stay above anything a lost history can have reached.
CREATE OR REPLACE FUNCTION @schema@.check_jump(r @schema@.scopes, h @schema@.history, p_value bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_limit bigint := least(h.base::numeric + h.jump_room, @max_token@)::bigint;
BEGIN
    IF p_value > greatest(r.counter, r.fence) AND p_value > v_limit THEN
        PERFORM @schema@.reject_invalid(format(
            'token %s for scope %s is above the store''s jump limit %s: a token the store did '
            'not issue moves a counter or fence only up to it (docs/semantics.md, "Failover")',
            p_value, to_json(r.scope), v_limit));
    END IF;
END
$$;

-- The scope as the store's failover steps left it: a row behind the
-- store's epoch moves to the latest step's base (`ScopeCore::fail_over`),
-- sealed, its lease ended.
CREATE OR REPLACE FUNCTION @schema@.stepped(r @schema@.scopes, h @schema@.history) RETURNS @schema@.scopes
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF r.epoch < h.epoch THEN
        r.counter := greatest(r.counter, r.fence, h.base);
        r.fence := r.counter;
        r.sealed := true;
        r.last_seq := NULL;
        r.lease_holder := NULL;
        r.lease_token := NULL;
        r.lease_ttl_ms := NULL;
        r.lease_expires_ms := NULL;
        r.epoch := h.epoch;
    END IF;
    RETURN r;
END
$$;

-- Raises a rejection: SQLSTATE FNxxx, the code and its details as JSON.
CREATE OR REPLACE FUNCTION @schema@.reject(p_state text, p_message text, p_detail jsonb) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = p_state, MESSAGE = p_message, DETAIL = p_detail::text;
END
$$;

CREATE OR REPLACE FUNCTION @schema@.reject_invalid(p_message text) RETURNS void
LANGUAGE sql AS $$
    SELECT @schema@.reject('FN008', 'invalid argument: ' || p_message,
        jsonb_build_object('code', 'INVALID_ARGUMENT', 'message', p_message))
$$;

-- Details of the live lease for LEASE_HELD.
CREATE OR REPLACE FUNCTION @schema@.reject_held(r @schema@.scopes, p_now bigint) RETURNS void
LANGUAGE sql AS $$
    SELECT @schema@.reject('FN005',
        format('lease on %s is held by %s with token %s, %s ms left',
               to_json(r.scope), to_json(r.lease_holder), r.lease_token, r.lease_expires_ms - p_now),
        jsonb_build_object('code', 'LEASE_HELD', 'scope', r.scope, 'holder', r.lease_holder,
                           'token', r.lease_token::text, 'remaining_ms', r.lease_expires_ms - p_now))
$$;

-- The floor bucket of a scope (`rules::floor_bucket`): the top bits of the
-- 32-bit FNV-1a hash of the name's UTF-8 bytes.
CREATE OR REPLACE FUNCTION @schema@.floor_bucket(p_scope text) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    bytes bytea := convert_to(p_scope, 'UTF8');
    h     bigint := @fnv32_offset@;
BEGIN
    FOR i IN 0..length(bytes) - 1 LOOP
        h := ((h # get_byte(bytes, i)) * @fnv32_prime@) % @fnv32_modulus@;
    END LOOP;
    RETURN h >> @bucket_shift@;
END
$$;

-- The floor a new scope starts at: its bucket's floor, or the latest
-- step's base if higher, read with a lock that the block's subtransaction
-- then rolls back, keeping the value. Held to the end of the transaction
-- (a caller's open transaction around `check`, say), the lock would make
-- every retirement in the bucket wait for it. `lock_scope` reads the floor
-- again once its insert of the name went through instead: by then every
-- retirement of an earlier life of the name has ended (the insert waits for
-- the one deleting it), so the second read sees its floor.
CREATE OR REPLACE FUNCTION @schema@.read_floor(p_scope text, h @schema@.history) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    fl bigint;
BEGIN
    BEGIN
        SELECT greatest(f.floor, h.base) INTO fl FROM @schema@.floors f
         WHERE f.bucket = @schema@.floor_bucket(p_scope) FOR SHARE;
        -- Not an error: the way out of the block that lets the lock go.
        RAISE EXCEPTION USING ERRCODE = 'FN900';
    EXCEPTION WHEN SQLSTATE 'FN900' THEN
        NULL;
    END;
    RETURN fl;
END
$$;

-- Locks the scope's row, moved by the failover steps it missed, creating it
-- from its bucket's floor if missing and p_create (else NULL). A rejection
-- rolls the creation back with everything else. A creation reads the floor
-- with a locking read (never a stale snapshot; under REPEATABLE READ a floor
-- raised since the snapshot fails the statement instead of being missed),
-- and lets the lock go at once (`read_floor`). A scope created after a step
-- starts at its base or above (the floors are not moved by the step).
CREATE OR REPLACE FUNCTION @schema@.lock_scope(p_scope text, h @schema@.history, p_create boolean DEFAULT true)
RETURNS @schema@.scopes LANGUAGE plpgsql AS $$
DECLARE
    r   @schema@.scopes;
    fl  bigint;
    fl2 bigint;
BEGIN
    LOOP
        SELECT * INTO r FROM @schema@.scopes WHERE scope = p_scope FOR UPDATE;
        IF FOUND THEN
            IF r.epoch < h.epoch THEN
                r := @schema@.stepped(r, h);
                UPDATE @schema@.scopes SET counter = r.counter, fence = r.fence, sealed = true, last_seq = NULL,
                       lease_holder = NULL, lease_token = NULL, lease_ttl_ms = NULL, lease_expires_ms = NULL,
                       epoch = r.epoch
                 WHERE scope = p_scope;
            END IF;
            RETURN r;
        END IF;
        IF NOT p_create THEN
            RETURN NULL;
        END IF;
        fl := @schema@.read_floor(p_scope, h);
        INSERT INTO @schema@.scopes (scope, counter, fence, sealed, epoch)
        VALUES (p_scope, fl, fl, fl > 0, h.epoch)
        ON CONFLICT (scope) DO NOTHING;
        IF FOUND THEN
            -- A retirement of the name may have committed between the
            -- first read and the insert (`read_floor`).
            fl2 := @schema@.read_floor(p_scope, h);
            IF fl2 > fl THEN
                UPDATE @schema@.scopes SET counter = fl2, fence = fl2, sealed = true WHERE scope = p_scope;
            END IF;
        END IF;
    END LOOP;
END
$$;

-- The scope as it stands, without a lock (fresh from its floor if missing).
CREATE OR REPLACE FUNCTION @schema@.peek_scope(p_scope text, h @schema@.history) RETURNS @schema@.scopes
LANGUAGE plpgsql AS $$
DECLARE
    r @schema@.scopes;
BEGIN
    SELECT * INTO r FROM @schema@.scopes WHERE scope = p_scope;
    IF NOT FOUND THEN
        SELECT p_scope, greatest(f.floor, h.base), greatest(f.floor, h.base), greatest(f.floor, h.base) > 0
          INTO r FROM @schema@.floors f
         WHERE f.bucket = @schema@.floor_bucket(p_scope);
        r.seen_ms := 0;
        r.epoch := h.epoch;
    END IF;
    RETURN @schema@.stepped(r, h);
END
$$;

-- The store's history row, for calls that only read.
CREATE OR REPLACE FUNCTION @schema@.history_now() RETURNS @schema@.history
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    h @schema@.history;
BEGIN
    SELECT * INTO h FROM @schema@.history;
    IF @schema@.on_recorded_server(h) THEN
        RETURN h;
    END IF;
    RETURN @schema@.here(h);
END
$$;

-- Who holds the rows an operation on p_scope (NULL: none, the failover
-- step) may wait for: the scope's row, its bucket's floor and the store's
-- history row, each with the backend pid and login role of the open
-- transaction that locked or changed it, from the row's xmax and the
-- server's lock table. The library asks after a lock wait that ended in
-- lock_timeout or statement_timeout, to say who it waited for. Takes no
-- lock, so it never waits itself. The transaction's state and age show
-- where the owner may see them (a superuser, or pg_read_all_stats), NULL
-- elsewhere. A scope that an open transaction is creating has no committed
-- row yet: nothing names its creator.
CREATE OR REPLACE FUNCTION @schema@.lock_holders(p_scope text)
RETURNS TABLE (what text, pid integer, role text, state text, xact_ms bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    problem text;
BEGIN
    IF p_scope IS NOT NULL THEN
        problem := @schema@.bad_scope(p_scope);
        IF problem IS NOT NULL THEN
            PERFORM @schema@.reject_invalid(problem);
        END IF;
    END IF;
    RETURN QUERY
    WITH held(what, holder) AS (
        SELECT 'the scope''s row', s.xmax FROM @schema@.scopes s WHERE s.scope = p_scope
        UNION ALL
        SELECT 'its bucket''s floor', f.xmax FROM @schema@.floors f
         WHERE f.bucket = @schema@.floor_bucket(p_scope)
        UNION ALL
        SELECT 'the store''s history row', x.xmax FROM @schema@.history x)
    SELECT h.what, l.pid, a.usename::text, a.state,
           (extract(epoch FROM clock_timestamp() - a.xact_start) * 1e3)::bigint
      FROM held h
      JOIN pg_locks l ON l.locktype = 'transactionid' AND l.transactionid = h.holder
                     AND l.mode = 'ExclusiveLock' AND l.granted
      LEFT JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE h.holder::text <> '0' AND l.pid <> pg_backend_pid()
     ORDER BY 1, 2;
END
$$;

-- Check 2 (token against fence, sealed fences reject equal) and, when
-- p_check_seq, check 3 (seq after the last accepted seq of this token).
CREATE OR REPLACE FUNCTION @schema@.check_fence(r @schema@.scopes, p_token bigint, p_seq bigint, p_check_seq boolean)
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

-- The token after the greater of counter and fence, or TOKEN_EXHAUSTED.
CREATE OR REPLACE FUNCTION @schema@.following(r @schema@.scopes) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    IF r.counter < @max_token@ AND r.fence < @max_token@ THEN
        RETURN greatest(r.counter, r.fence) + 1;
    END IF;
    PERFORM @schema@.reject('FN007', 'token counter exhausted: the maximum token has been issued',
        jsonb_build_object('code', 'TOKEN_EXHAUSTED', 'scope', r.scope));
    RETURN NULL;
END
$$;

-- Check 4 for one operation against the entry's current version (0 when
-- missing); returns the receipt's version (0 for a delete).
CREATE OR REPLACE FUNCTION @schema@.check_op(p_scope text, p_key text, p_is_put boolean, p_expected bigint, p_actual bigint)
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

-- ------------------------------------------------------------ arguments

-- Check 1 of docs/semantics.md, as the client applies it (`limits.rs`), for
-- callers that reach the functions without it: every entry point a library
-- or worker role can execute passes its arguments through these first. Each
-- `bad_*` names what is wrong with one kind of argument, or is NULL when it
-- keeps the rules; NULL is wrong wherever the client never sends one.
-- The first problem is raised as INVALID_ARGUMENT (`reject_invalid`), so the
-- call changes nothing. A PL/pgSQL entry point assigns it to `problem` and
-- raises it under an IF: both are simple expressions, which PL/pgSQL
-- evaluates without the executor; a PERFORM of `check_args` ran a query and
-- a function call on every call (about 10 us of a 50 us acquire). An SQL
-- entry point calls `check_args`. (A PostgreSQL text never holds NUL: no
-- check needed.)
CREATE OR REPLACE FUNCTION @schema@.check_args(p_problem text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF p_problem IS NOT NULL THEN
        PERFORM @schema@.reject_invalid(p_problem);
    END IF;
END
$$;

-- A name (scope, holder, key): 1..=p_max bytes of UTF-8.
CREATE OR REPLACE FUNCTION @schema@.bad_name(p_what text, p_text text, p_max bigint) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN p_text IS NULL THEN p_what || ' must not be NULL'
        WHEN p_text = '' THEN p_what || ' must not be empty'
        WHEN octet_length(convert_to(p_text, 'UTF8')) > p_max THEN
            format('%s is %s bytes, the limit is %s', p_what, octet_length(convert_to(p_text, 'UTF8')), p_max)
    END
$$;

-- A number in p_min..=p_max. STABLE, as format() is: a SQL function declared
-- more strictly than its body is never inlined, and this one would then be
-- planned again at every call of every entry point (so would bad_token,
-- bad_seq and bad_ttl, which call it).
CREATE OR REPLACE FUNCTION @schema@.bad_number(p_what text, p_value bigint, p_min bigint, p_max bigint)
RETURNS text LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN p_value IS NULL THEN p_what || ' must not be NULL'
        WHEN p_value < p_min OR p_value > p_max THEN
            format('%s %s is outside %s..=%s', p_what, p_value, p_min, p_max)
    END
$$;

-- A flag: true or false.
CREATE OR REPLACE FUNCTION @schema@.bad_flag(p_what text, p_value boolean) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN p_value IS NULL THEN p_what || ' must not be NULL' END
$$;

CREATE OR REPLACE FUNCTION @schema@.bad_scope(p_scope text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT @schema@.bad_name('scope', p_scope, @max_scope_bytes@)
$$;

CREATE OR REPLACE FUNCTION @schema@.bad_holder(p_holder text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT @schema@.bad_name('holder', p_holder, @max_holder_bytes@)
$$;

CREATE OR REPLACE FUNCTION @schema@.bad_key(p_key text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT @schema@.bad_name('key', p_key, @max_key_bytes@)
$$;

CREATE OR REPLACE FUNCTION @schema@.bad_token(p_token bigint) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT @schema@.bad_number('token', p_token, 1, @max_token@)
$$;

-- A seq is optional (NULL: none).
CREATE OR REPLACE FUNCTION @schema@.bad_seq(p_seq bigint) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN p_seq IS NOT NULL THEN @schema@.bad_number('seq', p_seq, 0, @max_seq@) END
$$;

CREATE OR REPLACE FUNCTION @schema@.bad_ttl(p_ttl_ms bigint) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT @schema@.bad_number('ttl_ms', p_ttl_ms, @min_ttl_ms@, @max_ttl_ms@)
$$;

-- One operation of a batch: its key a name, its value (NULL: a delete)
-- within its size, its expected version (NULL: none) in range.
CREATE OR REPLACE FUNCTION @schema@.bad_op(p_key text, p_value bytea, p_expected bigint) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT coalesce(
        @schema@.bad_key(p_key),
        CASE WHEN octet_length(p_value) > @max_value_bytes@ THEN
            format('value is %s bytes, the limit is %s', octet_length(p_value), @max_value_bytes@) END,
        CASE WHEN p_expected IS NOT NULL THEN
            @schema@.bad_number('expected_version', p_expected, 0, @max_seq@) END)
$$;

-- A batch for `apply`: 1..=@max_batch_ops@ operations, as three arrays of
-- equal length indexed from 1; each key a name, each value (NULL: a delete)
-- within its size, each expected version (NULL: none) in range. PL/pgSQL,
-- so that the scan's plan is cached (a SQL function with a subquery is
-- planned again at every call).
CREATE OR REPLACE FUNCTION @schema@.bad_batch(p_keys text[], p_values bytea[], p_expected bigint[])
RETURNS text LANGUAGE plpgsql STABLE AS $$
DECLARE
    n       integer := cardinality(p_keys);
    problem text;
BEGIN
    IF p_keys IS NULL OR p_values IS NULL OR p_expected IS NULL THEN
        RETURN 'a batch''s keys, values and expected versions must not be NULL';
    ELSIF n = 0 THEN
        RETURN 'a batch needs at least one operation (use claim to only raise the fence)';
    ELSIF n > @max_batch_ops@ THEN
        RETURN format('a batch of %s operations is over the limit of %s', n, @max_batch_ops@);
    ELSIF array_dims(p_keys) <> format('[1:%s]', n)
          OR array_dims(p_values) IS DISTINCT FROM array_dims(p_keys)
          OR array_dims(p_expected) IS DISTINCT FROM array_dims(p_keys) THEN
        RETURN format('a batch''s keys, values and expected versions must be arrays of %s elements '
                      'indexed from 1, got %s, %s and %s', n, array_dims(p_keys),
                      coalesce(array_dims(p_values), '[]'), coalesce(array_dims(p_expected), '[]'));
    END IF;
    IF n = 1 THEN -- no scan
        RETURN @schema@.bad_op(p_keys[1], p_values[1], p_expected[1]);
    END IF;
    SELECT x.problem INTO problem FROM (
        SELECT o.i, @schema@.bad_op(o.k, o.v, o.e) AS problem
          FROM unnest(p_keys, p_values, p_expected) WITH ORDINALITY AS o(k, v, e, i)) x
     WHERE x.problem IS NOT NULL ORDER BY x.i LIMIT 1;
    RETURN problem;
END
$$;

-- ------------------------------------------------------------- tokens

CREATE OR REPLACE FUNCTION @schema@.next_token(p_scope text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    h     @schema@.history;
    r     @schema@.scopes;
    token bigint;
    problem text;
BEGIN
    problem := @schema@.bad_scope(p_scope);
    IF problem IS NOT NULL THEN
        PERFORM @schema@.reject_invalid(problem);
    END IF;
    h := @schema@.durable();
    r := @schema@.lock_scope(p_scope, h);
    token := @schema@.following(r);
    UPDATE @schema@.scopes SET counter = token WHERE scope = p_scope;
    IF NOT @schema@.covered(h, token) THEN
        PERFORM @schema@.cover(h, token);
    END IF;
    RETURN token;
END
$$;

CREATE OR REPLACE FUNCTION @schema@.advance_counter(p_scope text, p_floor bigint) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    h @schema@.history;
    r @schema@.scopes;
    problem text;
BEGIN
    problem := coalesce(@schema@.bad_scope(p_scope),
                        @schema@.bad_number('floor', p_floor, 1, @max_token@));
    IF problem IS NOT NULL THEN
        PERFORM @schema@.reject_invalid(problem);
    END IF;
    h := @schema@.durable();
    r := @schema@.lock_scope(p_scope, h);
    IF p_floor > r.counter THEN
        PERFORM @schema@.check_jump(r, h, p_floor);
        UPDATE @schema@.scopes SET counter = p_floor WHERE scope = p_scope;
        IF NOT @schema@.covered(h, p_floor) THEN
            PERFORM @schema@.cover(h, p_floor);
        END IF;
        RETURN p_floor;
    END IF;
    RETURN r.counter;
END
$$;

-- ------------------------------------------------------------- leases

CREATE OR REPLACE FUNCTION @schema@.acquire(p_scope text, p_holder text, p_ttl_ms bigint, p_eager boolean,
    OUT holder text, OUT token bigint, OUT ttl_ms bigint, OUT expires_ms bigint, OUT now_ms bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    h     @schema@.history;
    r     @schema@.scopes;
    clock bigint;
    problem text;
BEGIN
    problem := coalesce(@schema@.bad_scope(p_scope), @schema@.bad_holder(p_holder),
                        @schema@.bad_ttl(p_ttl_ms), @schema@.bad_flag('eager', p_eager));
    IF problem IS NOT NULL THEN
        PERFORM @schema@.reject_invalid(problem);
    END IF;
    h := @schema@.durable();
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
           AND s.counter < @max_token@ AND s.fence < @max_token@ AND s.epoch = h.epoch
        RETURNING s.lease_token, s.lease_expires_ms, s.seen_ms INTO token, expires_ms, now_ms;
        IF FOUND THEN
            IF NOT @schema@.covered(h, token) THEN
                PERFORM @schema@.cover(h, token);
            END IF;
            -- To the scope's watches, if any (`announce_ended`).
            PERFORM @schema@.announce(p_scope, 0) FROM @schema@.watching w
             WHERE w.scope = p_scope AND w.until_ms > now_ms LIMIT 1;
            RETURN;
        END IF;
        EXIT WHEN attempt = 2;
        -- Otherwise create the scope and hold its row, or say why not; then
        -- the same UPDATE takes the lease.
        r := @schema@.lock_scope(p_scope, h);
        now_ms := greatest(@schema@.now_ms(), r.seen_ms);
        IF r.lease_token IS NOT NULL AND now_ms < r.lease_expires_ms THEN
            PERFORM @schema@.reject_held(r, now_ms);
        END IF;
        PERFORM @schema@.following(r); -- TOKEN_EXHAUSTED at the maximum
    END LOOP;
    RAISE EXCEPTION 'fencing: acquire found the scope free but could not take it';
END
$$;

-- A waiting caller's attempt (docs/semantics.md, "Waiting"; the rule of
-- `waiting.rs`): the lease, if it has ended and no live place earlier than
-- p_place is queued; else the caller's place, kept (its deadline moved on
-- past a quarter of its life, `refresh_due`) or new, and how long it may
-- sleep (`wait_ms`, at most half the place's life, `longest_sleep`) before
-- it asks again. Under the scope's row lock, as a release, so that a place
-- and a release are ordered: the release either sees the place or comes
-- before the attempt, which then finds the lease free.
CREATE OR REPLACE FUNCTION @schema@.acquire_waiting(p_scope text, p_holder text, p_ttl_ms bigint,
    p_eager boolean, p_place bigint,
    OUT holder text, OUT token bigint, OUT ttl_ms bigint, OUT expires_ms bigint, OUT now_ms bigint,
    OUT place bigint, OUT wait_ms bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    h     @schema@.history;
    r     @schema@.scopes;
    clock bigint;
    life  bigint;
    kept  bigint;
    problem text;
BEGIN
    problem := coalesce(@schema@.bad_scope(p_scope), @schema@.bad_holder(p_holder),
                        @schema@.bad_ttl(p_ttl_ms), @schema@.bad_flag('eager', p_eager),
                        CASE WHEN p_place IS NOT NULL
                             THEN @schema@.bad_number('place', p_place, 1, @max_token@) END);
    IF problem IS NOT NULL THEN
        PERFORM @schema@.reject_invalid(problem);
    END IF;
    h := @schema@.durable();
    r := @schema@.lock_scope(p_scope, h);
    clock := greatest(@schema@.now_ms(), r.seen_ms);
    life := least(greatest(p_ttl_ms, @place_life_min_ms@), @place_life_max_ms@);
    IF r.lease_token IS NOT NULL AND clock < r.lease_expires_ms THEN
        wait_ms := r.lease_expires_ms - clock;
    ELSE
        SELECT w.until_ms - clock INTO wait_ms FROM @schema@.waiting w
         WHERE w.scope = p_scope AND w.until_ms > clock AND (p_place IS NULL OR w.place < p_place)
         ORDER BY w.place LIMIT 1;
    END IF;
    IF wait_ms IS NULL THEN
        SELECT a.holder, a.token, a.ttl_ms, a.expires_ms, a.now_ms
          INTO holder, token, ttl_ms, expires_ms, now_ms
          FROM @schema@.acquire(p_scope, p_holder, p_ttl_ms, p_eager) a;
        DELETE FROM @schema@.waiting w WHERE w.place = p_place AND w.scope = p_scope;
        RETURN;
    END IF;
    SELECT w.until_ms INTO kept FROM @schema@.waiting w
     WHERE w.place = p_place AND w.scope = p_scope AND w.until_ms > clock;
    IF kept IS NULL THEN
        -- Places run out are gone for good: cleared here, so that killed
        -- waiters' do not pile up in front of every lookup.
        DELETE FROM @schema@.waiting w WHERE w.scope = p_scope AND w.until_ms <= clock;
        INSERT INTO @schema@.waiting AS w (scope, until_ms) VALUES (p_scope, @schema@.later(clock, life))
        RETURNING w.place INTO place;
    ELSE
        place := p_place;
        IF kept - clock < life / 4 * @refresh_quarters@ THEN
            UPDATE @schema@.waiting w SET until_ms = @schema@.later(clock, life) WHERE w.place = p_place;
        END IF;
    END IF;
    wait_ms := least(wait_ms, life / @sleep_parts@);
END
$$;

-- A waiter that gave up leaves its place at once; if it was next and the
-- lease is free, the one after it is told.
CREATE OR REPLACE FUNCTION @schema@.leave_queue(p_scope text, p_place bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    h     @schema@.history;
    r     @schema@.scopes;
    clock bigint;
    problem text;
BEGIN
    problem := coalesce(@schema@.bad_scope(p_scope),
                        @schema@.bad_number('place', p_place, 1, @max_token@));
    IF problem IS NOT NULL THEN
        PERFORM @schema@.reject_invalid(problem);
    END IF;
    h := @schema@.durable();
    r := @schema@.lock_scope(p_scope, h, false);
    DELETE FROM @schema@.waiting w WHERE w.place = p_place AND w.scope = p_scope;
    IF FOUND AND r.scope IS NOT NULL THEN
        clock := greatest(@schema@.now_ms(), r.seen_ms);
        IF r.lease_token IS NULL OR r.lease_expires_ms <= clock THEN
            PERFORM @schema@.announce_ended(p_scope, clock);
        END IF;
    END IF;
END
$$;

-- A refused renewal is not an exception: it returns no token (and the
-- current lease, if any), so that the time it saw is committed.
CREATE OR REPLACE FUNCTION @schema@.renew(p_scope text, p_token bigint, p_ttl_ms bigint,
    OUT holder text, OUT token bigint, OUT ttl_ms bigint, OUT expires_ms bigint, OUT now_ms bigint,
    OUT current_token bigint, OUT current_holder text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r    @schema@.scopes;
    live boolean;
    problem text;
BEGIN
    problem := coalesce(@schema@.bad_scope(p_scope), @schema@.bad_token(p_token),
                        @schema@.bad_ttl(p_ttl_ms));
    IF problem IS NOT NULL THEN
        PERFORM @schema@.reject_invalid(problem);
    END IF;
    r := @schema@.lock_scope(p_scope, @schema@.durable(), false);
    IF r.scope IS NULL THEN
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
    -- To the scope's watches, if any (`announce_ended`).
    PERFORM @schema@.announce(p_scope, 0) FROM @schema@.watching w
     WHERE w.scope = p_scope AND w.until_ms > now_ms LIMIT 1;
END
$$;

CREATE OR REPLACE FUNCTION @schema@.release(p_scope text, p_token bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    h     @schema@.history;
    clock bigint;
    problem text;
BEGIN
    problem := coalesce(@schema@.bad_scope(p_scope), @schema@.bad_token(p_token));
    IF problem IS NOT NULL THEN
        PERFORM @schema@.reject_invalid(problem);
    END IF;
    h := @schema@.durable();
    clock := @schema@.now_ms();
    -- A lease from before a failover step has ended: nothing to release.
    -- The waiters' places are judged by the scope's time, as the lease is.
    UPDATE @schema@.scopes
       SET lease_holder = NULL, lease_token = NULL, lease_ttl_ms = NULL, lease_expires_ms = NULL,
           seen_ms = greatest(seen_ms, clock)
     WHERE scope = p_scope AND lease_token = p_token AND lease_expires_ms > greatest(seen_ms, clock)
       AND epoch = h.epoch
    RETURNING seen_ms INTO clock;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM @schema@.announce_ended(p_scope, clock);
    RETURN true;
END
$$;

-- ------------------------------------------------------ the fenced store

-- put and delete under one check, all or nothing: a NULL value is a delete.
-- Returns each operation's receipt version, in order.
CREATE OR REPLACE FUNCTION @schema@.apply(p_scope text, p_token bigint, p_seq bigint, p_strict boolean,
    p_keys text[], p_values bytea[], p_expected bigint[], p_holder text) RETURNS bigint[]
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r        @schema@.scopes;
    n        integer := cardinality(p_keys);
    versions bigint[];
    actual   bigint;
    bad      record;
    has_deletes boolean;
    clock    bigint;
    h        @schema@.history;
    problem  text;
BEGIN
    problem := coalesce(@schema@.bad_scope(p_scope), @schema@.bad_token(p_token),
                        @schema@.bad_seq(p_seq), @schema@.bad_flag('strict', p_strict),
                        @schema@.bad_batch(p_keys, p_values, p_expected),
                        CASE WHEN p_holder IS NOT NULL THEN @schema@.bad_holder(p_holder) END);
    IF problem IS NOT NULL THEN
        PERFORM @schema@.reject_invalid(problem);
    END IF;
    h := @schema@.durable();
    r := @schema@.lock_scope(p_scope, h);
    IF p_token <= r.fence THEN
        -- A newer token always passes; an equal or older one needs the checks.
        PERFORM @schema@.check_fence(r, p_token, p_seq, true);
    ELSE
        PERFORM @schema@.check_jump(r, h, p_token);
    END IF;
    IF n = 1 OR (SELECT count(DISTINCT k) FROM unnest(p_keys) k) < n THEN
        -- In order, each operation seeing the ones before it.
        versions := '{}';
        FOR i IN 1..n LOOP
            IF p_expected[i] IS NULL AND p_values[i] IS NOT NULL THEN
                -- A plain put: nothing to check, one statement when the
                -- entry exists.
                UPDATE @schema@.entries SET value = p_values[i], version = version + 1, token = p_token
                 WHERE scope = p_scope AND key = p_keys[i]
                RETURNING version INTO actual;
                IF NOT FOUND THEN
                    INSERT INTO @schema@.entries (scope, key, value, version, token)
                    VALUES (p_scope, p_keys[i], p_values[i], 1, p_token);
                END IF;
                versions[i] := coalesce(actual, 1);
                CONTINUE;
            END IF;
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
    -- The time of the last write (`ScopeCore::note_write`): the same token
    -- and holder again move it at most once a step, so that a steady
    -- writer leaves the scope's row as it was.
    clock := greatest(@schema@.now_ms(), r.seen_ms);
    IF r.last_token = p_token AND r.last_holder IS NOT DISTINCT FROM p_holder
       AND clock - r.last_write_ms < @last_write_step_ms@ THEN
        clock := r.last_write_ms;
    END IF;
    IF r.fence <> p_token OR r.last_seq IS DISTINCT FROM p_seq OR r.sealed <> p_strict
       OR r.last_token IS DISTINCT FROM p_token OR r.last_holder IS DISTINCT FROM p_holder
       OR r.last_write_ms IS DISTINCT FROM clock THEN
        UPDATE @schema@.scopes SET fence = p_token, last_seq = p_seq, sealed = p_strict,
               last_holder = p_holder, last_token = p_token, last_write_ms = clock
         WHERE scope = p_scope;
    END IF;
    IF NOT @schema@.covered(h, p_token) THEN
        PERFORM @schema@.cover(h, p_token);
    END IF;
    RETURN versions;
END
$$;

-- Raises the fence without writing; a raise does not spend the token.
CREATE OR REPLACE FUNCTION @schema@.claim(p_scope text, p_token bigint, p_seq bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    h @schema@.history;
    r @schema@.scopes;
    problem text;
BEGIN
    problem := coalesce(@schema@.bad_scope(p_scope), @schema@.bad_token(p_token),
                        @schema@.bad_seq(p_seq));
    IF problem IS NOT NULL THEN
        PERFORM @schema@.reject_invalid(problem);
    END IF;
    h := @schema@.durable();
    r := @schema@.lock_scope(p_scope, h);
    PERFORM @schema@.check_fence(r, p_token, p_seq, true);
    IF p_token > r.fence THEN
        PERFORM @schema@.check_jump(r, h, p_token);
        UPDATE @schema@.scopes SET fence = p_token, sealed = false, last_seq = p_seq WHERE scope = p_scope;
        IF NOT @schema@.covered(h, p_token) THEN
            PERFORM @schema@.cover(h, p_token);
        END IF;
    ELSE
        UPDATE @schema@.scopes SET last_seq = p_seq WHERE scope = p_scope;
    END IF;
END
$$;

-- PL/pgSQL, so that its statements' plans are cached for the session: a
-- SQL function that is not inlined (SECURITY DEFINER never is) is planned
-- again at every call. No row: every column NULL.
CREATE OR REPLACE FUNCTION @schema@.get(p_scope text, p_key text,
    OUT value bytea, OUT version bigint, OUT token bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    problem text;
BEGIN
    problem := coalesce(@schema@.bad_scope(p_scope), @schema@.bad_key(p_key));
    IF problem IS NOT NULL THEN
        PERFORM @schema@.reject_invalid(problem);
    END IF;
    SELECT e.value, e.version, e.token INTO value, version, token
      FROM @schema@.entries e WHERE e.scope = p_scope AND e.key = p_key;
END
$$;

-- A read that presents a token: check 2 only, nothing raised or created.
-- Never on a standby: its copy of the fence may lag the primary's (a newer
-- holder's claim not replayed yet), and a stale reader would be told it is
-- current. Refused as the server refuses a write there (SQLSTATE 25006),
-- so that the library reconnects and, given every host, finds the primary.
CREATE OR REPLACE FUNCTION @schema@.get_checked(p_scope text, p_key text, p_token bigint,
    OUT value bytea, OUT version bigint, OUT token bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    problem text;
BEGIN
    problem := coalesce(@schema@.bad_scope(p_scope), @schema@.bad_key(p_key),
                        @schema@.bad_token(p_token));
    IF problem IS NOT NULL THEN
        PERFORM @schema@.reject_invalid(problem);
    END IF;
    IF pg_is_in_recovery() THEN
        RAISE EXCEPTION USING ERRCODE = 'read_only_sql_transaction',
            MESSAGE = 'a read that presents a token is checked on the primary, '
                      'never on a standby, whose fence may lag';
    END IF;
    PERFORM @schema@.check_fence(@schema@.peek_scope(p_scope, @schema@.history_now()), p_token, NULL, false);
    SELECT e.value, e.version, e.token INTO value, version, token
      FROM @schema@.entries e WHERE e.scope = p_scope AND e.key = p_key;
END
$$;

-- The first page is after '' (no key is empty); the library asks for one
-- key more than the page, to learn whether another page follows.
CREATE OR REPLACE FUNCTION @schema@.list(p_scope text, p_after text, p_limit bigint) RETURNS SETOF text
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT @schema@.check_args(coalesce(@schema@.bad_scope(p_scope),
        CASE WHEN p_after IS DISTINCT FROM '' THEN @schema@.bad_key(p_after) END,
        @schema@.bad_number('list limit', p_limit, 1, @max_list_limit@ + 1)));
    SELECT e.key FROM @schema@.entries e
     WHERE e.scope = p_scope AND e.key > p_after ORDER BY e.key LIMIT p_limit
$$;

-- ------------------------------------------------ status and retirement

CREATE OR REPLACE FUNCTION @schema@.status(p_scope text,
    OUT counter bigint, OUT fence bigint, OUT holder text, OUT token bigint,
    OUT ttl_ms bigint, OUT expires_ms bigint, OUT now_ms bigint, OUT entries bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r @schema@.scopes;
    problem text;
BEGIN
    problem := @schema@.bad_scope(p_scope);
    IF problem IS NOT NULL THEN
        PERFORM @schema@.reject_invalid(problem);
    END IF;
    r := @schema@.peek_scope(p_scope, @schema@.history_now());
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

-- A watch's read of a scope's lease (docs/semantics.md, "Watching a
-- lease"): the live lease, if any, and the watch's registration, kept
-- (moved on past a quarter of its life) or made anew (`id`), so that every change of
-- the scope is announced while the watch lives. Registering clears the
-- scope's registrations that ran out.
CREATE OR REPLACE FUNCTION @schema@.watch(p_scope text, p_id bigint,
    OUT id bigint, OUT holder text, OUT token bigint, OUT ttl_ms bigint, OUT expires_ms bigint,
    OUT now_ms bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r    @schema@.scopes;
    kept bigint;
    problem text;
BEGIN
    problem := coalesce(@schema@.bad_scope(p_scope),
                        CASE WHEN p_id IS NOT NULL
                             THEN @schema@.bad_number('watch id', p_id, 1, @max_token@) END);
    IF problem IS NOT NULL THEN
        PERFORM @schema@.reject_invalid(problem);
    END IF;
    r := @schema@.peek_scope(p_scope, @schema@.history_now());
    now_ms := greatest(@schema@.now_ms(), r.seen_ms);
    IF r.lease_token IS NOT NULL AND now_ms < r.lease_expires_ms THEN
        holder := r.lease_holder;
        token := r.lease_token;
        ttl_ms := r.lease_ttl_ms;
        expires_ms := r.lease_expires_ms;
    END IF;
    SELECT w.until_ms INTO kept FROM @schema@.watching w
     WHERE w.id = p_id AND w.scope = p_scope AND w.until_ms > now_ms;
    IF kept IS NULL THEN
        DELETE FROM @schema@.watching w WHERE w.scope = p_scope AND w.until_ms <= now_ms;
        INSERT INTO @schema@.watching AS w (scope, until_ms) VALUES (p_scope, @schema@.later(now_ms, @watch_life_ms@))
        RETURNING w.id INTO id;
    ELSE
        id := p_id;
        IF kept - now_ms < @watch_life_ms@ / 4 * @refresh_quarters@ THEN
            UPDATE @schema@.watching w SET until_ms = @schema@.later(now_ms, @watch_life_ms@) WHERE w.id = p_id;
        END IF;
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION @schema@.retire(p_scope text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_bucket integer;
    r        @schema@.scopes;
    now_ms   bigint;
    entries  bigint;
    h        @schema@.history;
    problem text;
BEGIN
    problem := @schema@.bad_scope(p_scope);
    IF problem IS NOT NULL THEN
        PERFORM @schema@.reject_invalid(problem);
    END IF;
    v_bucket := @schema@.floor_bucket(p_scope);
    h := @schema@.durable();
    -- The bucket first, as creation locks it: a creation in flight
    -- finishes before we look, and none starts until we commit.
    PERFORM 1 FROM @schema@.floors f WHERE f.bucket = v_bucket FOR UPDATE;
    r := @schema@.lock_scope(p_scope, h, false);
    IF r.scope IS NULL THEN
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

-- The failover step (docs/semantics.md, "Failover"), explicit: the store
-- takes it by itself on a server history other than the one it records
-- (`durable`), and an operator may take one more, for example after
-- restoring a disk snapshot in place (same system, same timeline). One
-- `step`: every counter and fence (each scope row when next touched,
-- `stepped`), every scope created later (`lock_scope`), sealed, every lease
-- ended. One row written, whatever the number of scopes. Returns the base:
-- every token at or below it is stale. It keeps the caller's rights: only a
-- role that may write the tables (the owner) runs it.
CREATE OR REPLACE FUNCTION @schema@.failover() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    h @schema@.history;
BEGIN
    PERFORM @schema@.durable();
    SELECT * INTO h FROM @schema@.history FOR UPDATE;
    h := @schema@.step(h);
    UPDATE @schema@.history SET epoch = h.epoch, base = h.base, ceiling = h.ceiling;
    PERFORM @schema@.announce(NULL, NULL);
    RETURN h.base;
END
$$;

-- Unbounds the store's jumps (`jumps=unbounded`): from now on a counter or
-- fence may jump anywhere, and a failover step can only exhaust every
-- scope. It keeps the caller's rights: only the owner unbounds a store.
CREATE OR REPLACE FUNCTION @schema@.unbound_jumps() RETURNS void
LANGUAGE sql AS $$
    UPDATE @schema@.history SET jump_room = @max_token@ WHERE jump_room <> @max_token@
$$;

-- The owner's recovery of a scope wedged before the jump limit existed
-- (`rules::lowered_wedge`, docs/semantics.md, "Lowering a wedged scope"):
-- counter and fence down to p_bound, sealed, the lease ended. Refused unless
-- the jumps are bounded, the scope's greater value is above the jump limit
-- and its counter within it, and p_bound lies between the greatest token the
-- store saw in use within the limit (the counter, the lease's, the last
-- write's, the entries', the record's presented and current tokens) and the
-- limit. It keeps the caller's rights: only the owner lowers a fence.
CREATE OR REPLACE FUNCTION @schema@.lower_wedged(p_scope text, p_bound bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    h        @schema@.history;
    r        @schema@.scopes;
    v_limit  bigint;
    v_proven bigint;
    problem  text;
BEGIN
    problem := coalesce(@schema@.bad_scope(p_scope), @schema@.bad_token(p_bound));
    IF problem IS NOT NULL THEN
        PERFORM @schema@.reject_invalid(problem);
    END IF;
    h := @schema@.durable();
    r := @schema@.lock_scope(p_scope, h, false);
    IF r.scope IS NULL THEN
        PERFORM @schema@.reject_invalid(format('scope %s has no state: nothing to lower', to_json(p_scope)));
    END IF;
    v_limit := least(h.base::numeric + h.jump_room, @max_token@)::bigint;
    -- Within 2^40 above the limit: where callers of earlier releases could
    -- step one token at a time (`rules::lowered_wedge`).
    IF h.jump_room = @max_token@
       OR greatest(r.counter, r.fence) <= v_limit::numeric + @failover_step@ THEN
        PERFORM @schema@.reject_invalid(format(
            'scope %s is not wedged: its counter %s and fence %s are within the jump limit %s%s',
            to_json(p_scope), r.counter, r.fence, v_limit,
            CASE WHEN h.jump_room = @max_token@ THEN ' (jumps are unbounded)'
                 ELSE ' or less than 2^40 above it, where callers could step one token at a time'
            END));
    END IF;
    IF r.counter > v_limit THEN
        PERFORM @schema@.reject_invalid(format(
            'scope %s: its counter %s jumped past the jump limit %s, and the tokens it issued since '
            'are not recorded: nothing proves a lower bound', to_json(p_scope), r.counter, v_limit));
    END IF;
    SELECT greatest(r.counter, max(t)) INTO v_proven FROM (
        SELECT r.lease_token UNION ALL SELECT r.last_token
        UNION ALL SELECT e.token FROM @schema@.entries e WHERE e.scope = p_scope
        UNION ALL SELECT x.presented FROM @schema@.rejections x WHERE x.scope = p_scope
        UNION ALL SELECT x.current FROM @schema@.rejections x WHERE x.scope = p_scope) seen(t)
     WHERE t <= v_limit;
    IF p_bound < v_proven OR p_bound > v_limit THEN
        PERFORM @schema@.reject_invalid(format(
            'bound %s for scope %s is outside %s..=%s: not below a token the store saw handed out, '
            'not above the jump limit', p_bound, to_json(p_scope), v_proven, v_limit));
    END IF;
    UPDATE @schema@.scopes SET counter = p_bound, fence = p_bound, sealed = true, last_seq = NULL,
           lease_holder = NULL, lease_token = NULL, lease_ttl_ms = NULL, lease_expires_ms = NULL
     WHERE scope = p_scope;
    PERFORM @schema@.announce_ended(p_scope, greatest(@schema@.now_ms(), r.seen_ms));
    RETURN p_bound;
END
$$;

-- --------------------------------------------- the caller's own tables

-- Fences the caller's own tables inside the caller's own transaction:
--   BEGIN; SELECT fencing.check('report:7', 42); UPDATE report ...; COMMIT;
-- Applies checks 2 and 3, then raises the fence to the token, holding the
-- scope's row lock until the transaction ends. A stale token raises
-- SQLSTATE FN001 (FN002 for a seq out of order), so the whole transaction
-- rolls back. A worker role needs only USAGE on the schema and EXECUTE on
-- these two functions.
CREATE OR REPLACE FUNCTION @schema@.check(p_scope text, p_token bigint, p_seq bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r @schema@.scopes;
    h @schema@.history;
    problem text;
BEGIN
    problem := coalesce(@schema@.bad_scope(p_scope), @schema@.bad_token(p_token),
                        @schema@.bad_seq(p_seq));
    IF problem IS NOT NULL THEN
        PERFORM @schema@.reject_invalid(problem);
    END IF;
    h := @schema@.durable();
    r := @schema@.lock_scope(p_scope, h);
    PERFORM @schema@.check_fence(r, p_token, p_seq, true);
    PERFORM @schema@.check_jump(r, h, p_token);
    UPDATE @schema@.scopes SET fence = p_token, last_seq = p_seq, sealed = false WHERE scope = p_scope;
    IF NOT @schema@.covered(h, p_token) THEN
        PERFORM @schema@.cover(h, p_token);
    END IF;
END
$$;

-- PL/pgSQL, as `get` is: its call's plan is cached for the session.
CREATE OR REPLACE FUNCTION @schema@.check(p_scope text, p_token bigint) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM @schema@.check(p_scope, p_token, NULL);
END
$$;

-- ------------------------------------------------ the operator's record

-- Records a rejection the library just got (docs/operations.md), best
-- effort, rate-limited: a rejection raises and rolls back everything of its
-- transaction, so the library records it afterwards. Refuses a token the
-- fence would accept (`rules::recordable`), reads the current fence itself,
-- bounds every text, and merges a record of a scope recorded within the
-- interval into that row (its `suppressed` count), so a flood of stale
-- writes from many processes adds at most one row per scope per interval.
-- Rejections of `check` (the caller's own transaction) are not recorded:
-- the caller's rollback would take the record with it. Returns whether a
-- row was added or merged.
--
-- Any role that runs the library can call this directly, with any holder
-- it likes (the holder is the writer's own label). So each row also names
-- the role of the session that recorded it (`session_user`: no argument,
-- no SET ROLE inside a SECURITY DEFINER call changes it), and a new row
-- replaces a row of the role holding the most rows (`events::evicted`): a
-- role that floods the record overwrites its own rows, and never pushes out
-- the rows of a role that holds fewer.
CREATE OR REPLACE FUNCTION @schema@.record_rejection(p_scope text, p_key text, p_code text, p_presented bigint,
    p_seq bigint, p_holder text, p_suppressed bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    r      @schema@.scopes;
    clock  bigint;
    v_id   bigint;
    v_role  text := session_user;
    v_slot  integer;
    v_there text;
    v_top   text;
BEGIN
    -- Best effort: never worth waiting for a flush.
    PERFORM set_config('synchronous_commit', 'off', true);
    IF coalesce(@schema@.bad_scope(p_scope),
                CASE WHEN p_key IS NOT NULL THEN @schema@.bad_key(p_key) END,
                @schema@.bad_token(p_presented), @schema@.bad_seq(p_seq),
                CASE WHEN p_holder IS NOT NULL THEN @schema@.bad_holder(p_holder) END,
                @schema@.bad_number('suppressed', p_suppressed, 0, @max_token@)) IS NOT NULL
       OR p_code IS NULL OR p_code NOT IN ('STALE_TOKEN', 'SEQUENCE_OUT_OF_ORDER') THEN
        RETURN false;
    END IF;
    r := @schema@.peek_scope(p_scope, @schema@.history_now());
    IF p_presented > r.fence THEN -- rules::recordable
        RETURN false;
    END IF;
    clock := greatest(@schema@.now_ms(), r.seen_ms);
    UPDATE @schema@.rejections SET suppressed = least(suppressed::numeric + p_suppressed + 1,
                                                      @max_token@)::bigint
     WHERE id = (SELECT max(x.id) FROM @schema@.rejections x
                  WHERE x.scope = p_scope AND x.at_ms > clock - @record_interval_ms@);
    IF FOUND THEN
        RETURN true;
    END IF;
    v_id := nextval('@schema@.rejection_ids');
    -- The ring's next slot, when free or holding a row of the role with the
    -- most rows (of the oldest such role, on a tie); else a free slot, or
    -- that role's oldest row (`events::evicted`). With one recording role
    -- this is the plain ring, where concurrent records take distinct slots.
    v_slot := v_id % @rejection_log@;
    SELECT x.role INTO v_there FROM @schema@.rejections x WHERE x.slot = v_slot;
    IF FOUND THEN
        SELECT y.role INTO v_top FROM @schema@.rejections y GROUP BY y.role
         ORDER BY count(*) DESC, min(y.id) LIMIT 1;
        IF v_there IS DISTINCT FROM v_top THEN
            SELECT f.slot INTO v_slot FROM generate_series(0, @rejection_log@ - 1) AS f(slot)
             WHERE NOT EXISTS (SELECT 1 FROM @schema@.rejections x WHERE x.slot = f.slot)
             ORDER BY f.slot LIMIT 1;
            IF NOT FOUND THEN
                SELECT x.slot INTO v_slot FROM @schema@.rejections x
                 WHERE x.role IS NOT DISTINCT FROM v_top ORDER BY x.id LIMIT 1;
            END IF;
        END IF;
    END IF;
    -- Two records at once may pick one slot: the newer keeps it.
    INSERT INTO @schema@.rejections AS x (slot, id, scope, key, code, presented, current, seq, holder, at_ms,
                                          suppressed, role)
    VALUES (v_slot, v_id, p_scope, p_key, p_code, p_presented, r.fence, p_seq, p_holder, clock, p_suppressed, v_role)
    ON CONFLICT (slot) DO UPDATE SET id = excluded.id, scope = excluded.scope, key = excluded.key,
        code = excluded.code, presented = excluded.presented, current = excluded.current,
        seq = excluded.seq, holder = excluded.holder, at_ms = excluded.at_ms,
        suppressed = excluded.suppressed, role = excluded.role
    WHERE x.id < excluded.id;
    RETURN true;
END
$$;

-- The newest recorded rejections, of one scope (or of all when NULL).
CREATE OR REPLACE FUNCTION @schema@.rejections(p_scope text, p_limit bigint)
RETURNS SETOF @schema@.rejections
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT @schema@.check_args(coalesce(CASE WHEN p_scope IS NOT NULL THEN @schema@.bad_scope(p_scope) END,
                                        @schema@.bad_number('events limit', p_limit, 1, @max_events_limit@)));
    SELECT * FROM @schema@.rejections x
     WHERE p_scope IS NULL OR x.scope = p_scope ORDER BY x.id DESC LIMIT p_limit
$$;

-- The newest last writes, of one scope (or of all when NULL).
CREATE OR REPLACE FUNCTION @schema@.last_writes(p_scope text, p_limit bigint,
    OUT scope text, OUT holder text, OUT token bigint, OUT at_ms bigint)
RETURNS SETOF record
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT @schema@.check_args(coalesce(CASE WHEN p_scope IS NOT NULL THEN @schema@.bad_scope(p_scope) END,
                                        @schema@.bad_number('events limit', p_limit, 1, @max_events_limit@)));
    SELECT s.scope, s.last_holder, s.last_token, s.last_write_ms FROM @schema@.scopes s
     WHERE p_scope IS NOT NULL AND s.scope = p_scope AND s.last_token IS NOT NULL
    UNION ALL
    (SELECT s.scope, s.last_holder, s.last_token, s.last_write_ms FROM @schema@.scopes s
      WHERE p_scope IS NULL AND s.last_token IS NOT NULL
      ORDER BY s.last_write_ms DESC, s.scope LIMIT p_limit)
$$;

-- ------------------------------------------------- the manual clock

-- Whether the schema runs on a manual clock (a test schema).
CREATE OR REPLACE FUNCTION @schema@.clock_is_manual() RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT manual_now_ms IS NOT NULL FROM @schema@.meta
$$;

-- Points now_ms at the stopped clock. Only here and in stop_clock: the
-- schema's real-clock now_ms never reads the table.
CREATE OR REPLACE FUNCTION @schema@.use_manual_clock() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE $def$
        CREATE OR REPLACE FUNCTION @schema@.now_ms() RETURNS bigint
        LANGUAGE sql VOLATILE AS $body$ SELECT manual_now_ms FROM @schema@.meta $body$
    $def$;
END
$$;

-- Stops the schema's clock (`?clock=manual`), once: handles opening it at
-- once serialize on the meta row, and only the first swaps now_ms. It keeps
-- the caller's rights: only a role that may write the tables can stop it.
CREATE OR REPLACE FUNCTION @schema@.stop_clock() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE @schema@.meta SET manual_now_ms = floor(extract(epoch FROM clock_timestamp()) * 1e3)::bigint
     WHERE manual_now_ms IS NULL;
    IF FOUND THEN
        PERFORM @schema@.use_manual_clock();
    END IF;
END
$$;

-- Moves a stopped clock; false when the clock runs on the server's time.
CREATE OR REPLACE FUNCTION @schema@.advance_clock(p_ms bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    problem text;
BEGIN
    problem := @schema@.bad_number('advance_clock ms', p_ms, 0, @max_token@);
    IF problem IS NOT NULL THEN
        PERFORM @schema@.reject_invalid(problem);
    END IF;
    -- Up to the end of the year 9999, never back (`clock::advanced`).
    UPDATE @schema@.meta
       SET manual_now_ms = least(@schema@.later(manual_now_ms, p_ms),
                                 greatest(manual_now_ms, @last_ms@))
     WHERE manual_now_ms IS NOT NULL;
    RETURN FOUND;
END
$$;

-- A reinstall keeps a stopped clock stopped.
DO $$
BEGIN
    IF (SELECT manual_now_ms IS NOT NULL FROM @schema@.meta) THEN
        PERFORM @schema@.use_manual_clock();
    END IF;
END
$$;

-- The commit check on the tables whose rows hold a counter, fence, lease,
-- floor or step: not the entries (a put's value is the caller's data; a
-- fence it raises is in scopes) nor the best-effort rejections. A row
-- trigger costs a call per row: a batch of puts would pay it per key. A
-- constraint trigger cannot be replaced in place, and its function can:
-- created once, kept by every reinstall. (A migration that re-creates one of
-- these tables drops its trigger: it must come with a change to this file,
-- whose reinstall creates the trigger again.)
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['scopes', 'floors', 'history'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_trigger
                        WHERE tgrelid = format('@schema@.%I', t)::regclass
                          AND tgname = 'durable_at_commit') THEN
            EXECUTE format('CREATE CONSTRAINT TRIGGER durable_at_commit '
                           'AFTER INSERT OR UPDATE OR DELETE ON @schema@.%I '
                           'DEFERRABLE INITIALLY DEFERRED FOR EACH ROW '
                           'EXECUTE FUNCTION @schema@.durable_at_commit()', t);
        END IF;
    END LOOP;
END
$$;

-- Functions are not for everyone: the operations run as their owner, and
-- an operator grants EXECUTE on them to the library's and workers' roles.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @schema@ FROM PUBLIC;
