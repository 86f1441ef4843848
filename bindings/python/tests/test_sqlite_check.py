"""Fencing your own SQLite tables with plain SQL (docs/sqlite.md), through
Python's standard ``sqlite3`` module, not through fencing: the file is
created by opening a fencing store once, the user's own table sits beside
fencing's, and every check is ``INSERT INTO fencing_check`` in the user's own
``BEGIN IMMEDIATE`` transaction. ``fencing.from_sqlite_error`` turns the
driver's exception into the typed one.

The paused-worker story and the race run in real processes (children of
this interpreter); every wait is bounded and children are killed whatever
happens.
"""

from __future__ import annotations

import pathlib
import sqlite3
import subprocess
import sys
from typing import List, Optional, Union

import pytest

import fencing

SCOPE = "report:7"
BOUND = 60.0  # seconds: no step of this test may wait longer

# The user's side, shared by the test and its children (which run it with -c).
USER = r"""
import sqlite3

def connect(path):
    # isolation_level=None: the transactions below are the user's own.
    return sqlite3.connect(path, timeout=10, isolation_level=None)

def fenced_update(conn, token, body):
    # The UPDATE first, the order a careless caller would use, so that only
    # the rollback keeps a stale write out.
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(
            "UPDATE report_state SET body = ?, token = ?, history = history || ',' || ? "
            "WHERE id = 7", (body, token, token))
        conn.execute("INSERT INTO fencing_check (scope, token) VALUES ('report:7', ?)", (token,))
    except sqlite3.Error:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
"""
namespace: dict = {}
exec(USER, namespace)
connect = namespace["connect"]
fenced_update = namespace["fenced_update"]


def setup(tmp_path: pathlib.Path) -> str:
    """A store file with the user's own table beside fencing's."""
    path = str(tmp_path / "app.db")
    fencing.open(f"sqlite:{path}").close()
    c = connect(path)
    c.executescript(
        "CREATE TABLE report_state (id INTEGER PRIMARY KEY, body TEXT NOT NULL,"
        " token INTEGER NOT NULL, history TEXT NOT NULL DEFAULT '');"
        "INSERT INTO report_state (id, body, token) VALUES (7, 'original', 0);"
    )
    c.close()
    return path


def row(path: str) -> tuple:
    conn = connect(path)
    try:
        return tuple(conn.execute("SELECT body, token FROM report_state WHERE id = 7").fetchone())
    finally:
        conn.close()


def typed(exc: sqlite3.Error) -> fencing.FencingError:
    err = fencing.from_sqlite_error(exc)
    assert err is not None, f"not a fencing_check rejection: {exc}"
    return err


Arg = Union[int, float, str, bytes, None]


def check(conn: sqlite3.Connection, scope: Arg, token: Arg, seq: Arg = None) -> Optional[str]:
    """One check in autocommit: None when it passed, else the typed code."""
    try:
        conn.execute(
            "INSERT INTO fencing_check (scope, token, seq) VALUES (?, ?, ?)", (scope, token, seq)
        )
    except sqlite3.Error as e:
        return typed(e).code
    return None


# ----- the mapping: no database needed -----


def test_each_raised_message_maps_to_its_class() -> None:
    for message, cls in (
        ("STALE_TOKEN: a newer holder has taken over, stop", fencing.StaleTokenError),
        ("SEQUENCE_OUT_OF_ORDER: seq is not after", fencing.SequenceError),
        ("INVALID_ARGUMENT: token must be an integer", fencing.InvalidArgumentError),
    ):
        e = fencing.error_from_sqlite_message(message)
        assert type(e) is cls, message
        # The view's message names no scope, token or fence: None, not invented.
        unknown = {fencing.StaleTokenError: ("scope", "presented", "current")}
        unknown[fencing.SequenceError] = ("presented", "last")
        for field in unknown.get(cls, ()):
            assert getattr(e, field) is None, (message, field)
        e = fencing.from_sqlite_error(sqlite3.IntegrityError(message))
        assert type(e) is cls, message
    for other in ("UNIQUE constraint failed: t.id", "database is locked", "LEASE_HELD: x", ""):
        assert fencing.error_from_sqlite_message(other) is None
        assert fencing.from_sqlite_error(sqlite3.OperationalError(other)) is None
    assert fencing.from_sqlite_error(ValueError()) is None  # no args: str(exc) is ""
    with pytest.raises(fencing.InvalidArgumentError, match="message must be a str"):
        fencing.error_from_sqlite_message(b"STALE_TOKEN: x")  # type: ignore[arg-type]


# ----- the paused-worker story, with real processes -----

WORKER_A = USER + r"""
import sys
import fencing

path = sys.argv[1]
store = fencing.open("sqlite:" + path)
lease = store.acquire("report:7", holder="worker-a", ttl=0.2)
print("acquired", lease.token, flush=True)
sys.stdin.readline()  # "paused" here until told to go on; the lease expires meanwhile
try:
    fenced_update(connect(path), lease.token, "by A (stale)")
    print("outcome committed", flush=True)
except sqlite3.Error as e:
    err = fencing.from_sqlite_error(e)
    print("outcome", type(err).__name__ if err is not None else repr(e), flush=True)
"""


def test_a_paused_worker_is_fenced_off_its_own_table(tmp_path: pathlib.Path) -> None:
    path = setup(tmp_path)
    a = subprocess.Popen(
        [sys.executable, "-c", WORKER_A, path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert a.stdout is not None and a.stdin is not None
        first = a.stdout.readline().split()
        assert first[0] == "acquired", first
        a_token = int(first[1])
        # B waits until A's lease has expired, then takes over and writes.
        with fencing.open(f"sqlite:{path}") as store:
            b = store.acquire_wait(SCOPE, holder="worker-b", ttl=10, timeout=10)
            assert b.token > a_token
            b_conn = connect(path)
            fenced_update(b_conn, b.token, "by B")
            b_conn.close()
            # A wakes up and writes with its old token: its whole transaction rolls back.
            a.stdin.write("go\n")
            a.stdin.flush()
            out, _ = a.communicate(timeout=BOUND)
            assert a.returncode == 0
            assert out.split() == ["outcome", "StaleTokenError"]
            assert row(path) == ("by B", b.token)
            # One state: the library sees the fence the check raised.
            assert store.fence_of(SCOPE) == b.token
    finally:
        a.kill()
        a.wait()


# ----- the rules -----


def test_the_rules_of_check_on_plain_sql(tmp_path: pathlib.Path) -> None:
    path = setup(tmp_path)
    conn = connect(path)
    with fencing.open(f"sqlite:{path}") as store:
        # A fresh scope accepts any token and raises its fence; equal passes.
        assert check(conn, "s", 40) is None
        assert store.fence_of("s") == 40
        assert check(conn, "s", 40) is None
        assert check(conn, "s", 39) == "STALE_TOKEN"
        # Seq: after the last accepted seq of the same token only.
        assert check(conn, "s", 41, 5) is None
        assert check(conn, "s", 41, 5) == "SEQUENCE_OUT_OF_ORDER"
        assert check(conn, "s", 41, 4) == "SEQUENCE_OUT_OF_ORDER"
        assert check(conn, "s", 41, 6) is None
        assert check(conn, "s", 42, 0) is None
        # The library's fences hold for the check, and the other way round.
        store.put("s", "k", b"v", token=50)
        assert check(conn, "s", 49) == "STALE_TOKEN"
        assert check(conn, "s", 60) is None
        with pytest.raises(fencing.StaleTokenError):
            store.put("s", "k", b"v", token=50)
        # A retired scope's floor: tokens of its old life never pass, the
        # floor itself included; the next one does.
        store.delete("s", "k", token=60)
        assert store.retire("s")
        assert check(conn, "s", 60) == "STALE_TOKEN"
        assert check(conn, "s", 1) == "STALE_TOKEN"
        assert check(conn, "s", 61) is None
        # A first check on a fresh scope in the user's transaction, with the
        # stale one after it rolling both back.
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO fencing_check (scope, token) VALUES ('fresh', 7)")
        with pytest.raises(sqlite3.IntegrityError) as caught:
            conn.execute("INSERT INTO fencing_check (scope, token) VALUES ('s', 3)")
        conn.execute("ROLLBACK")
        assert type(fencing.from_sqlite_error(caught.value)) is fencing.StaleTokenError
        assert store.status("fresh").fence == 0
    conn.close()


def test_a_stale_check_rolls_back_the_users_update(tmp_path: pathlib.Path) -> None:
    path = setup(tmp_path)
    conn = connect(path)
    fenced_update(conn, 9, "at 9")
    with pytest.raises(sqlite3.Error) as caught:
        fenced_update(conn, 8, "at 8")
    err = fencing.from_sqlite_error(caught.value)
    assert isinstance(err, fencing.StaleTokenError)
    assert isinstance(err, fencing.FencingError) and err.code == "STALE_TOKEN"
    assert row(path) == ("at 9", 9)
    conn.close()


BAD = [
    ("token 0", "s", 0, None),
    ("token -1", "s", -1, None),
    ("token 2**63 as a float", "s", float(2**63), None),
    ("token 2**63 as text", "s", str(2**63), None),
    ("token as text", "s", "42", None),
    ("token NULL", "s", None, None),
    ("token as blob", "s", b"\x01", None),
    ("seq -1", "s", 1, -1),
    ("seq as text", "s", 1, "1"),
    ("scope NULL", None, 1, None),
    ("scope empty", "", 1, None),
    ("scope 257 bytes", "x" * 257, 1, None),
    ("scope with NUL", "a\0b", 1, None),
    ("scope as integer", 7, 1, None),
]


@pytest.mark.parametrize("what,scope,token,seq", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_invalid_argument(
    tmp_path: pathlib.Path, what: str, scope: Arg, token: Arg, seq: Arg
) -> None:
    path = setup(tmp_path)
    conn = connect(path)
    with pytest.raises(sqlite3.IntegrityError) as caught:
        conn.execute(
            "INSERT INTO fencing_check (scope, token, seq) VALUES (?, ?, ?)", (scope, token, seq)
        )
    err = fencing.from_sqlite_error(caught.value)
    assert type(err) is fencing.InvalidArgumentError, f"{what}: {caught.value}"
    assert conn.execute("SELECT count(*) FROM fencing_scopes").fetchone() == (0,)
    conn.close()


def test_2_63_cannot_even_be_bound_as_an_integer(tmp_path: pathlib.Path) -> None:
    # Python's sqlite3 refuses to bind it, before SQLite sees it: the test
    # above binds it as a float and as text instead.
    conn = connect(setup(tmp_path))
    with pytest.raises(OverflowError):
        conn.execute("INSERT INTO fencing_check (scope, token) VALUES ('s', ?)", (2**63,))
    conn.close()


# ----- a race of processes -----

RACER = USER + r"""
import random, sys, time
import fencing

path, name = sys.argv[1], sys.argv[2]
rng = random.Random(name)
store = fencing.open("sqlite:" + path)
conn = connect(path)
ttl = 0.05
end = time.monotonic() + 3.0
while time.monotonic() < end:
    try:
        lease = store.acquire_wait("report:7", holder=name, ttl=ttl, timeout=2)
    except fencing.TimeoutError:
        continue
    if rng.randrange(3) == 0:
        time.sleep(ttl * 2)  # paused past the lease
    try:
        fenced_update(conn, lease.token, name)
        print("committed", lease.token, flush=True)
    except sqlite3.Error as e:
        err = fencing.from_sqlite_error(e)
        print("rejected", lease.token, err.code if err is not None else repr(e), flush=True)
    try:
        store.release("report:7", token=lease.token)
    except fencing.FencingError:
        pass
"""


def test_racing_processes_never_commit_a_stale_update(tmp_path: pathlib.Path) -> None:
    path = setup(tmp_path)
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, path, f"race{i}"], stdout=subprocess.PIPE, text=True
        )
        for i in range(1, 5)
    ]
    committed: List[int] = []
    rejected = 0
    try:
        for p in racers:
            out, _ = p.communicate(timeout=BOUND)
            assert p.returncode == 0
            for line in out.splitlines():
                kind, token, *rest = line.split()
                if kind == "committed":
                    committed.append(int(token))
                else:
                    assert kind == "rejected" and rest == ["STALE_TOKEN"], line
                    rejected += 1
    finally:
        for p in racers:
            p.kill()
            p.wait()
    # The row's history is every committed update in commit order: the
    # tokens never go down, and no rejected transaction left a trace.
    conn = connect(path)
    (history,) = conn.execute("SELECT history FROM report_state WHERE id = 7").fetchone()
    conn.close()
    written = [int(t) for t in history.split(",") if t]
    print(f"sqlite3 race: {len(written)} committed, {rejected} stale transactions rolled back")
    assert written == sorted(written), written
    assert sorted(written) == sorted(committed)
    assert rejected > 0, "the race needs stale holders to mean anything"


# ----- one SQLite per process -----


def test_closing_pythons_sqlite3_under_an_open_store_is_noticed(tmp_path: pathlib.Path) -> None:
    # Python's sqlite3 module is a second copy of SQLite beside the one inside
    # fencing. Closing its connection closes its descriptors, which drops this
    # process's locks on the file, fencing's among them; with no other process
    # attached it then believes itself the last connection and deletes the
    # -wal under the store (docs/sqlite.md, "One SQLite per process"). The
    # store's next write must fail, not commit to the deleted log.
    path = str(tmp_path / "app.db")
    with fencing.open(f"sqlite:{path}") as store:
        first = store.next_token(SCOPE)
        store.put(SCOPE, "k", b"kept", token=first)
        conn = connect(path)
        assert conn.execute("SELECT count(*) FROM fencing_scopes").fetchone()[0] == 1
        conn.close()
        assert not pathlib.Path(path + "-wal").exists()
        with pytest.raises(fencing.BackendError, match="One SQLite per process") as e:
            store.next_token(SCOPE)
        assert e.value.kind == "refused"
    # Nothing was lost and nothing is issued twice.
    with fencing.open(f"sqlite:{path}") as store:
        assert store.get(SCOPE, "k").value == b"kept"
        assert store.next_token(SCOPE) == first + 1


def test_a_sqlite3_connection_kept_open_past_the_store_is_safe(tmp_path: pathlib.Path) -> None:
    # The rule docs/sqlite.md gives: open the other SQLite's connection once,
    # and close it only after every store on the file is closed.
    path = str(tmp_path / "app.db")
    fencing.open(f"sqlite:{path}").close()
    conn = connect(path)
    try:
        with fencing.open(f"sqlite:{path}") as store:
            lease = store.acquire(SCOPE, holder="w", ttl=30)
            for i in range(3):
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(
                    "INSERT INTO fencing_check (scope, token) VALUES (?, ?)", (SCOPE, lease.token)
                )
                conn.execute("COMMIT")
                store.put(SCOPE, "k", str(i).encode(), token=lease.token)
            assert store.renew(lease, ttl=30).token == lease.token
    finally:
        conn.close()
