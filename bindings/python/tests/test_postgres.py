"""PostgreSQL: fencing's SQLSTATEs as typed exceptions, ``fencing.check`` in
the user's own transaction through psycopg, and hostile names.

The mapping tests need no server. The others run on $FENCING_TEST_PG_URL in a
fresh schema each (skipped without it, failed when FENCING_REQUIRE_PG=1), and
need psycopg 3 (``pip install "psycopg[binary]"``).
"""

from __future__ import annotations

import datetime
import os
from types import SimpleNamespace
from typing import Any, Iterator, List, Tuple

import pytest

import fencing

try:
    import psycopg
    from psycopg import sql
except ImportError:  # pragma: no cover - CI installs it
    psycopg = None  # type: ignore[assignment]


def need_psycopg() -> Any:
    if psycopg is None:
        if os.environ.get("FENCING_REQUIRE_PG") == "1":
            pytest.fail("FENCING_REQUIRE_PG=1 but psycopg is not installed", pytrace=False)
        pytest.skip('psycopg is not installed (pip install "psycopg[binary]")')
    return psycopg


MAX = fencing.MAX_TOKEN

# ----- error_from_sqlstate / from_postgres_error: no server needed -----

STATES = [
    ("FN001", fencing.StaleTokenError, "STALE_TOKEN"),
    ("FN002", fencing.SequenceError, "SEQUENCE_OUT_OF_ORDER"),
    ("FN003", fencing.VersionMismatchError, "VERSION_MISMATCH"),
    ("FN004", fencing.NotFoundError, "NOT_FOUND"),
    ("FN005", fencing.LeaseHeldError, "LEASE_HELD"),
    ("FN006", fencing.LeaseLostError, "LEASE_LOST"),
    ("FN007", fencing.TokenExhaustedError, "TOKEN_EXHAUSTED"),
    ("FN008", fencing.InvalidArgumentError, "INVALID_ARGUMENT"),
]


@pytest.mark.parametrize("state,cls,code", STATES, ids=[s[0] for s in STATES])
def test_every_fencing_sqlstate_maps_to_its_class(state: str, cls: type, code: str) -> None:
    for detail in (None, "not json", "{}"):
        e = fencing.error_from_sqlstate(state, detail)
        assert type(e) is cls
        assert isinstance(e, fencing.FencingError)
        assert e.code == code


def test_details_come_back_typed() -> None:
    scope = "r'\"\\; DROP TABLE x; -- \U0001f512"
    detail = (
        '{"code": "STALE_TOKEN", "scope": "r\'\\"\\\\; DROP TABLE x; -- \\ud83d\\udd12", '
        '"current": "9223372036854775807", "presented": "9007199254740993"}'
    )
    e = fencing.error_from_sqlstate("FN001", detail)
    assert isinstance(e, fencing.StaleTokenError)
    assert (e.scope, e.presented, e.current) == (scope, 2**53 + 1, MAX)
    assert "stale" in str(e)

    e = fencing.error_from_sqlstate(
        "FN002", '{"code": "SEQUENCE_OUT_OF_ORDER", "last": "5", "presented": "3"}'
    )
    assert isinstance(e, fencing.SequenceError)
    assert (e.presented, e.last) == (3, 5)

    e = fencing.error_from_sqlstate(
        "FN005", '{"scope": "s", "holder": "b", "token": "7", "remaining_ms": 250}'
    )
    assert isinstance(e, fencing.LeaseHeldError)
    assert (e.scope, e.holder, e.token, e.remaining) == ("s", "b", 7, 0.25)

    e = fencing.error_from_sqlstate(
        "FN006", '{"scope": "s", "current_token": null, "current_holder": null}'
    )
    assert isinstance(e, fencing.LeaseLostError)
    assert (e.current_token, e.current_holder) == (None, None)


def test_other_sqlstates_are_not_fencing_errors() -> None:
    for state in ("23505", "40001", "P0001", "FN000", "FN009", "fn001", "", "FN0011"):
        assert fencing.error_from_sqlstate(state, '{"code": "STALE_TOKEN"}') is None


def test_bad_input_is_invalid_argument() -> None:
    for bad in (None, 1, b"FN001", ["FN001"]):
        with pytest.raises(fencing.InvalidArgumentError, match="sqlstate must be a str"):
            fencing.error_from_sqlstate(bad)  # type: ignore[arg-type]
    with pytest.raises(fencing.InvalidArgumentError, match="sqlstate is not valid UTF-8"):
        fencing.error_from_sqlstate("FN\ud800")
    for bad_detail in (1, b"{}", {"scope": "s"}):
        with pytest.raises(fencing.InvalidArgumentError, match="detail must be a str"):
            fencing.error_from_sqlstate("FN001", bad_detail)  # type: ignore[arg-type]
    with pytest.raises(fencing.InvalidArgumentError, match="detail is not valid UTF-8"):
        fencing.error_from_sqlstate("FN001", '{"scope": "\ud800"}')


def test_from_postgres_error_reads_each_driver_shape() -> None:
    detail = '{"scope": "s", "presented": "4", "current": "9"}'

    class Psycopg3Error(Exception):
        sqlstate = "FN001"
        diag = SimpleNamespace(message_detail=detail)

    class Psycopg2Error(Exception):
        pgcode = "FN001"
        diag = SimpleNamespace(message_detail=detail)

    class AsyncpgError(Exception):
        sqlstate = "FN001"
        detail = '{"scope": "s", "presented": "4", "current": "9"}'

    for exc in (Psycopg3Error(), Psycopg2Error(), AsyncpgError()):
        e = fencing.from_postgres_error(exc)
        assert isinstance(e, fencing.StaleTokenError), type(exc)
        assert (e.scope, e.presented, e.current) == ("s", 4, 9)

    class Unique(Exception):
        sqlstate = "23505"
        diag = SimpleNamespace(message_detail="Key (id)=(1) already exists.")

    class NoDiag(Exception):
        sqlstate = "FN002"
        diag = None

    assert fencing.from_postgres_error(Unique()) is None
    assert fencing.from_postgres_error(ValueError("x")) is None
    e = fencing.from_postgres_error(NoDiag())
    assert isinstance(e, fencing.SequenceError) and (e.presented, e.last) == (0, 0)


# ----- the user's own transaction, through psycopg -----

SCOPE = "report:7"


@pytest.fixture
def story(pg_url: str, pg_base: str, pg_schema: str) -> Iterator[Tuple[Any, Any, str, int, int]]:
    """The paused-worker story on the server: worker A's lease (token A)
    lapses while A is paused, worker B acquires (token B); the user's own
    table `report` sits in the same schema. Yields (store, conn, schema, A, B)."""
    pg = need_psycopg()
    store = fencing.open(pg_url + "&clock=manual")
    conn = pg.connect(pg_base, autocommit=True)
    try:
        a = store.acquire(SCOPE, holder="worker-a", ttl=datetime.timedelta(seconds=1))
        store.advance_clock(datetime.timedelta(seconds=2))  # A is paused past its lease
        b = store.acquire(SCOPE, holder="worker-b", ttl=datetime.timedelta(seconds=30))
        assert b.token > a.token
        conn.execute(
            sql.SQL("CREATE TABLE {}.report (id int PRIMARY KEY, body text NOT NULL)").format(
                sql.Identifier(pg_schema)
            )
        )
        conn.execute(
            sql.SQL("INSERT INTO {}.report VALUES (1, 'v0')").format(sql.Identifier(pg_schema))
        )
        yield store, conn, pg_schema, a.token, b.token
    finally:
        conn.close()
        store.close()


def body(conn: Any, schema: str) -> str:
    row = conn.execute(
        sql.SQL("SELECT body FROM {}.report WHERE id = 1").format(sql.Identifier(schema))
    ).fetchone()
    assert row is not None
    return str(row[0])


def check_sql(schema: str, with_seq: bool = False) -> Any:
    return sql.SQL("SELECT {}.check(%s, %s::bigint{})").format(
        sql.Identifier(schema), sql.SQL(", %s::bigint" if with_seq else "")
    )


def update_sql(schema: str) -> Any:
    return sql.SQL("UPDATE {}.report SET body = %s WHERE id = 1").format(sql.Identifier(schema))


def test_stale_check_rolls_back_the_users_update(story: Tuple[Any, Any, str, int, int]) -> None:
    store, conn, schema, a, b = story
    assert store.backend_kind == "postgres"
    pg = need_psycopg()
    # The user's UPDATE runs first; the stale check then aborts the whole
    # transaction, UPDATE included.
    with pytest.raises(pg.Error) as caught:
        with conn.transaction():
            conn.execute(update_sql(schema), ("by A",))
            conn.execute(check_sql(schema), (SCOPE, a))
    assert caught.value.sqlstate == "FN001"
    e = fencing.from_postgres_error(caught.value)
    assert isinstance(e, fencing.StaleTokenError)
    assert (e.scope, e.presented, e.current) == (SCOPE, a, b)
    assert body(conn, schema) == "v0"
    # Check first, then UPDATE: the UPDATE never runs.
    with pytest.raises(pg.Error) as caught:
        with conn.transaction():
            conn.execute(check_sql(schema), (SCOPE, a))
            conn.execute(update_sql(schema), ("by A",))
    assert type(fencing.from_postgres_error(caught.value)) is fencing.StaleTokenError
    assert body(conn, schema) == "v0"
    # The store saw nothing change either.
    assert store.fence_of(SCOPE) == b


def test_current_check_commits_and_raises_the_fence(
    story: Tuple[Any, Any, str, int, int],
) -> None:
    store, conn, schema, a, b = story
    with conn.transaction():
        conn.execute(check_sql(schema), (SCOPE, b))
        conn.execute(update_sql(schema), ("by B",))
    assert body(conn, schema) == "by B"
    assert store.fence_of(SCOPE) == b
    # A token above the fence (a later holder) raises it, for the store too.
    c = store.next_token(SCOPE)
    with conn.transaction():
        conn.execute(check_sql(schema), (SCOPE, c))
    assert store.fence_of(SCOPE) == c
    with pytest.raises(fencing.StaleTokenError) as stale:
        store.put(SCOPE, "body", b"late", token=b)
    assert (stale.value.presented, stale.value.current) == (b, c)


def test_check_with_seq_out_of_order(story: Tuple[Any, Any, str, int, int]) -> None:
    _store, conn, schema, _a, b = story
    pg = need_psycopg()
    with conn.transaction():
        conn.execute(check_sql(schema, True), (SCOPE, b, 5))
        conn.execute(update_sql(schema), ("seq 5",))
    for seq in (5, 4, 0):
        with pytest.raises(pg.Error) as caught:
            with conn.transaction():
                conn.execute(update_sql(schema), (f"seq {seq}",))
                conn.execute(check_sql(schema, True), (SCOPE, b, seq))
        assert caught.value.sqlstate == "FN002"
        e = fencing.from_postgres_error(caught.value)
        assert isinstance(e, fencing.SequenceError)
        assert (e.presented, e.last) == (seq, 5)
        assert body(conn, schema) == "seq 5"
    with conn.transaction():
        conn.execute(check_sql(schema, True), (SCOPE, b, 6))
    # Bad arguments come back as INVALID_ARGUMENT (FN008).
    for args in ((SCOPE, 0), ("", b), ("x" * 257, b)):
        with pytest.raises(pg.Error) as caught:
            with conn.transaction():
                conn.execute(check_sql(schema), args)
        assert caught.value.sqlstate == "FN008"
        assert type(fencing.from_postgres_error(caught.value)) is fencing.InvalidArgumentError


# ----- hostile names -----


def hostile(schema: str) -> List[str]:
    return [
        "it's",
        '"double"',
        "back\\slash\\",
        f"'; DROP TABLE {schema}.report; --",
        "'); DROP TABLE x; --",
        "%s %(name)s $1 ? :x",
        "emoji \U0001f512\U0001f980 é ключ 鍵",
        "tab\there\nnewline",
        "\u00a0 leading nbsp",
        "E'\\x27'",
    ]


def test_hostile_names_round_trip_and_harm_nothing(
    pg_url: str, pg_base: str, pg_schema: str
) -> None:
    pg = need_psycopg()
    names = hostile(pg_schema)
    byte_order = sorted(names, key=lambda k: k.encode("utf-8"))
    ident = sql.Identifier(pg_schema)
    with fencing.open(pg_url) as store, pg.connect(pg_base, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE TABLE {}.report (id int PRIMARY KEY)").format(ident))
        conn.execute(sql.SQL("INSERT INTO {}.report VALUES (1), (2)").format(ident))
        for scope in names:
            lease = store.acquire(scope, holder=scope, ttl=30)
            assert (lease.scope, lease.holder) == (scope, scope)
            for key in names:
                value = (key * 2).encode("utf-8")
                assert store.put(scope, key, value, token=lease.token).version == 1
                entry = store.get(scope, key)
                assert entry is not None
                assert (entry.key, entry.value, entry.token) == (key, value, lease.token)
            page = store.list(scope, limit=1000)
            assert (page.keys, page.next) == (byte_order, None)
            status = store.status(scope)
            assert status.entries == len(names)
            assert status.lease is not None and status.lease.holder == scope
            assert status.fence == lease.token
            # The name reaches the SQL function as a parameter too: a newer
            # token checked there fences the lease's token off for the store.
            newer = store.next_token(scope)
            conn.execute(check_sql(pg_schema), (scope, newer))
            with pytest.raises(pg.Error) as caught:
                conn.execute(check_sql(pg_schema), (scope, lease.token))
            e = fencing.from_postgres_error(caught.value)
            assert isinstance(e, fencing.StaleTokenError)
            assert (e.scope, e.presented, e.current) == (scope, lease.token, newer)
            with pytest.raises(fencing.StaleTokenError) as stale:
                store.put(scope, names[0], b"late", token=lease.token)
            assert (stale.value.scope, stale.value.current) == (scope, newer)
        # Every scope kept its own entries, exactly.
        for scope in names:
            assert store.list(scope, limit=1000).keys == byte_order
            assert store.status(scope).fence > 0
        rows = conn.execute(sql.SQL("SELECT id FROM {}.report ORDER BY id").format(ident))
        assert rows.fetchall() == [(1,), (2,)]
        count = conn.execute(sql.SQL("SELECT count(*) FROM {}.entries").format(ident))
        assert count.fetchone() == (len(names) * len(names),)


# ----- TLS (scripts/pg-tls: a TLS-only server with a test CA) -----


def tls_bed() -> Tuple[str, str]:
    """The TLS-only server's URL and certificate directory; skipped without
    them, failed when FENCING_REQUIRE_PG=1."""
    url = os.environ.get("FENCING_TEST_PG_TLS_URL", "")
    cert_dir = os.environ.get("FENCING_TEST_PG_TLS_DIR", "")
    if url and cert_dir:
        return url, cert_dir
    if os.environ.get("FENCING_REQUIRE_PG") == "1":
        pytest.fail(
            "FENCING_REQUIRE_PG=1 but FENCING_TEST_PG_TLS_URL/_DIR are not set: "
            "run under scripts/pg-tls run",
            pytrace=False,
        )
    pytest.skip("no TLS server: run the tests under `scripts/pg-tls run -- ...`")


def test_store_over_tls_verify_full(pg_schema: str) -> None:
    url, cert_dir = tls_bed()
    ca = os.path.join(cert_dir, "ca.crt")
    with fencing.open(f"{url}?sslmode=verify-full&sslrootcert={ca}&schema={pg_schema}") as store:
        lease = store.acquire("job", holder="py", ttl=30)
        assert store.put("job", "k", b"v", token=lease.token).version == 1
        entry = store.get("job", "k")
        assert entry is not None and entry.value == b"v"


def test_tls_refusals_say_why_and_hide_the_password(pg_schema: str) -> None:
    url, cert_dir = tls_bed()
    password = "py-pw-never-printed"
    with_password = url.replace("://postgres@", f"://postgres:{password}@", 1)
    other_ca = os.path.join(cert_dir, "other-ca.crt")
    for query, says in [
        (f"sslmode=verify-full&sslrootcert={other_ca}", "unknown CA"),
        ("sslmode=disable", "no encryption"),
    ]:
        with pytest.raises(fencing.BackendError) as info:
            fencing.open(f"{with_password}?{query}&schema={pg_schema}")
        assert says in str(info.value)
        assert password not in str(info.value)


# ----- PgBouncer in transaction mode (scripts/pgbouncer) -----


def bouncer_url() -> str:
    """PgBouncer's URL; skipped without it, failed when FENCING_REQUIRE_PG=1."""
    url = os.environ.get("FENCING_TEST_PGBOUNCER_URL", "")
    if url:
        return url
    if os.environ.get("FENCING_REQUIRE_PG") == "1":
        pytest.fail(
            "FENCING_REQUIRE_PG=1 but FENCING_TEST_PGBOUNCER_URL is not set: "
            "run under scripts/pgbouncer run",
            pytrace=False,
        )
    pytest.skip("no PgBouncer: run the tests under `scripts/pgbouncer run -- ...`")


def test_check_in_a_psycopg_transaction_through_pgbouncer(pg_schema: str) -> None:
    """docs/postgres.md, "Poolers": the store with ?pooler=transaction, and
    psycopg with prepare_threshold=None (no named statements), both through
    PgBouncer in transaction mode; a stale check rolls the user's UPDATE
    back, a current one commits."""
    pg = need_psycopg()
    url = bouncer_url()
    store = fencing.open(f"{url}?schema={pg_schema}&pooler=transaction&clock=manual")
    try:
        a = store.acquire(SCOPE, holder="worker-a", ttl=datetime.timedelta(seconds=1))
        store.advance_clock(datetime.timedelta(seconds=2))
        b = store.acquire(SCOPE, holder="worker-b", ttl=datetime.timedelta(seconds=30))
        with pg.connect(url, autocommit=True, prepare_threshold=None) as conn:
            conn.execute(
                sql.SQL("CREATE TABLE {}.report (id int PRIMARY KEY, body text NOT NULL)").format(
                    sql.Identifier(pg_schema)
                )
            )
            conn.execute(
                sql.SQL("INSERT INTO {}.report VALUES (1, 'v0')").format(sql.Identifier(pg_schema))
            )
            for _ in range(10):  # more than psycopg's default threshold of 5
                with pytest.raises(pg.Error) as caught:
                    with conn.transaction():
                        conn.execute(update_sql(pg_schema), ("by A",))
                        conn.execute(check_sql(pg_schema), (SCOPE, a.token))
                assert isinstance(fencing.from_postgres_error(caught.value), fencing.StaleTokenError)
                assert body(conn, pg_schema) == "v0"
            with conn.transaction():
                conn.execute(check_sql(pg_schema), (SCOPE, b.token))
                conn.execute(update_sql(pg_schema), ("by B",))
            assert body(conn, pg_schema) == "by B"
        assert store.fence_of(SCOPE) == b.token
    finally:
        store.close()
